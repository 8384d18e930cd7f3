import { expect, test } from 'bun:test'
import { CALL_ACTOR } from '../../src/services/calls/media-watchdog'
import { CALL_KIND } from './messages'

test('the media watchdog tells the call actor kind (src/ names it without importing actors/)', () => {
  expect(CALL_ACTOR).toBe(CALL_KIND)
})
