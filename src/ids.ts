/**
 * Resource IDs: a type prefix and a time-ordered random part, e.g. `usr_01JD...`.
 * Clients must treat them as opaque; the time order only helps index locality.
 */
import { monotonicFactory } from 'ulid'

export const ID_PREFIX = {
  platform: 'plat',
  webhookAttempt: 'wha',
  apiKey: 'key',
  account: 'acct',
  location: 'loc',
  pricing: 'prc',
  user: 'usr',
  extension: 'ext',
  auditLog: 'audit',
  accountSession: 'acss',
  userSession: 'uss',
  request: 'req',
  event: 'evt',
  webhookEndpoint: 'we',
  webhookDelivery: 'whd',
  operatorMail: 'mail',
  phoneNumber: 'pn',
  phoneNumberOrder: 'pno',
  call: 'call',
  timer: 'tmr',
  recording: 'rec',
  voicemail: 'vm',
  listener: 'lst',
  command: 'cmd',
  device: 'dev',
  deviceLine: 'line',
  deviceUser: 'dusr',
  buttonTemplate: 'btpl',
  templateButton: 'btn',
  buttonOverride: 'bovr',
  provisioningEvent: 'pev',
  ringGroup: 'rg',
  ringGroupMember: 'rgm',
  schedule: 'sch',
  dialPlan: 'dp',
  sharedVoicemailBox: 'svb',
  voiceApp: 'va',
  aiAgent: 'aia',
  queue: 'que',
  queueMember: 'qm',
  file: 'file',
  audioClip: 'clip',
  voicemailGreeting: 'vmg',
  pushSubscription: 'psub',
} as const

export type IdKind = keyof typeof ID_PREFIX

/** Monotonic within the process: IDs minted in the same millisecond still sort in creation order (newest-first lists break ties on id). */
const ulid = monotonicFactory()

export function newId(kind: IdKind): string {
  return `${ID_PREFIX[kind]}_${ulid().toLowerCase()}`
}

export function idKind(id: string): IdKind | undefined {
  const prefix = id.slice(0, id.indexOf('_'))
  return (Object.keys(ID_PREFIX) as IdKind[]).find((k) => ID_PREFIX[k] === prefix)
}

export const MAX_ID_LENGTH = 255
