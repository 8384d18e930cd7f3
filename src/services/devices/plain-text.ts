/**
 * Names and labels that phones show end up inside their configuration files, where a
 * line break or another control character ends the value early (or slips a setting of
 * its own into a Yealink file). Refused when written, naming the field, so that a
 * phone never fails every fetch later with invalid_configuration.
 */
import type { FieldDetails } from '../../errors'

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
const CONTROL = /[\u0000-\u001f\u007f]/

/** Adds a detail for each given text that holds a control character. */
export function checkPlainText(details: FieldDetails, texts: Record<string, string | null | undefined>) {
  for (const [field, text] of Object.entries(texts))
    if (text && CONTROL.test(text)) details[field] = 'must not contain line breaks or other control characters (phones show it)'
}
