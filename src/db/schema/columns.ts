import { timestamp } from 'drizzle-orm/pg-core'

/** Timestamps: with time zone, millisecond precision, read as Date. */
export const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' })
