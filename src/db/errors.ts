/** What a database error means, across PGlite and postgres.js (the code sits on the error or its cause). */
const sqlState = (e: unknown): string | undefined => (e as { code?: string } | null)?.code ?? (e as { cause?: { code?: string } } | null)?.cause?.code

/** A unique constraint refused the write (SQLSTATE 23505). */
export const isUniqueViolation = (e: unknown): boolean => sqlState(e) === '23505'
