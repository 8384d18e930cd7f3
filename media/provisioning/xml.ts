/**
 * XML attribute escaping. Besides the five markup characters, tab and line breaks
 * become character references: a parser normalises literal ones to spaces inside
 * attributes, which would silently change a value. Characters XML 1.0 cannot carry
 * at all (other control characters, lone surrogates) make the value unwritable.
 */

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
}

/** The value escaped for a double-quoted attribute, or undefined if XML 1.0 cannot represent it. */
export function xmlAttribute(value: string): string | undefined {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: XML 1.0 forbids these characters
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/.test(value) || !value.isWellFormed()) return undefined
  return value.replace(/[&<>"'\t\n\r]/g, (c) => ESCAPES[c]!)
}
