/** The US ZIP code table of the `zipcodes` package (its lib/codes module; the package ships no types). */
declare module 'zipcodes/lib/codes' {
  export interface ZipRecord {
    zip: string
    latitude: number
    longitude: number
    /** The USPS preferred city name of the ZIP code. */
    city: string
    /** Two-letter state, territory or military (AA, AE, AP) code. */
    state: string
    country: string
  }
  export const codes: Record<string, ZipRecord>
  /** State code to its ZIP codes. */
  export const stateMap: Record<string, string[]>
}
