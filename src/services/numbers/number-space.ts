/**
 * Where a phone number is unique. Live numbers are the real network's: one space for
 * every platform. Sandbox numbers are made up (+1 500 555 xxxx), so each platform has
 * its own: one platform's sandbox numbers are never "in service elsewhere" for
 * another, nor can one platform exhaust another's range.
 */
import type { Mode } from '../platform/platforms'

export type NumberSpace = string

export const LIVE_SPACE: NumberSpace = 'live'

export const numberSpaceOf = (owner: { platformId: string; mode: Mode }): NumberSpace => (owner.mode === 'live' ? LIVE_SPACE : owner.platformId)
