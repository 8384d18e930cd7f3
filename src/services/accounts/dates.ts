/** Calendar helpers in UTC: billing month starts are UTC month starts. */
export const isoDate = (d: Date) => d.toISOString().slice(0, 10)
export const monthStart = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1))
export const nextMonthStart = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1))
