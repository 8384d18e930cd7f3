/**
 * What each account-session component grants: the one list of it.
 *
 * The spec names the components (call_logs, voicemails, account_onboarding,
 * agreement_acceptance) and says that enabling one grants its capability
 * (Authentication rules 4–5), but leaves the operations of each "not shown". This
 * is our answer, read by `op(...)` (so authentication and the OpenAPI document both
 * follow it) and published in the document as `x-session-components`:
 *
 *   call_logs             the call log, its recordings and transcripts, and the
 *                         event stream that reports calls as they happen; not call
 *                         control (a session watches, a platform key acts)
 *   voicemails            voicemails and their transcripts, marking them read and
 *                         deleting them, and the voicemail greetings
 *   account_onboarding    setting the account up: its record and agreement (read),
 *                         users, extensions, locations, numbers, devices, call
 *                         routing (voice apps and AI agents read-only)
 *   agreement_acceptance  reading and accepting the terms of service
 */
import type { SessionComponent } from '../src/schemas/platform'

export const SESSION_GRANTS = {
  call_logs: ['listCallLogs', 'getCallLog', 'getCallRecording', 'getCallTranscript', 'streamEvents'],
  voicemails: [
    'listVoicemails',
    'getVoicemail',
    'getVoicemailTranscript',
    'updateVoicemail',
    'deleteVoicemail',
    'getVoicemailGreeting',
    'setVoicemailGreeting',
    'deleteVoicemailGreeting',
  ],
  account_onboarding: [
    'getAccount',
    'getAccountPricing',
    'getAccountEffectivePricing',
    'getAccountTos',
    'listUsers',
    'createUser',
    'getUser',
    'updateUser',
    'deleteUser',
    'listExtensions',
    'createExtension',
    'getExtension',
    'updateExtension',
    'deleteExtension',
    'listLocations',
    'createLocation',
    'getLocation',
    'updateLocation',
    'deleteLocation',
    'validateLocationE911',
    'provisionLocationE911',
    'searchAvailablePhoneNumbers',
    'listPhoneNumberOrders',
    'createPhoneNumberOrder',
    'getPhoneNumberOrder',
    'listPhoneNumbers',
    'getPhoneNumber',
    // Call routing. Voice apps and AI agents are read-only here: creating an app or
    // rotating its secret reveals the secret, which stays with the platform.
    'routePhoneNumber',
    'listRingGroups',
    'createRingGroup',
    'getRingGroup',
    'updateRingGroup',
    'deleteRingGroup',
    'addRingGroupMember',
    'removeRingGroupMember',
    'listSchedules',
    'createSchedule',
    'getSchedule',
    'updateSchedule',
    'deleteSchedule',
    'setScheduleHold',
    'clearScheduleHold',
    'listDialPlans',
    'createDialPlan',
    'getDialPlan',
    'updateDialPlan',
    'deleteDialPlan',
    'listSharedVoicemailBoxes',
    'createSharedVoicemailBox',
    'getSharedVoicemailBox',
    'updateSharedVoicemailBox',
    'deleteSharedVoicemailBox',
    'listQueues',
    'createQueue',
    'getQueue',
    'updateQueue',
    'deleteQueue',
    'listQueueMembers',
    'addQueueMember',
    'removeQueueMember',
    'getQueueAgent',
    'updateQueueAgent',
    'listVoiceApps',
    'getVoiceApp',
    'listAIAgents',
    'getAIAgent',
    // Devices (their SIP passwords stay hidden from sessions: see src/services/devices/sip-credentials.ts).
    'listDevices',
    'createDevice',
    'getDevice',
    'updateDevice',
    'deleteDevice',
    'checkSyncDevice',
    'listDeviceUsers',
    'assignDeviceUser',
    'removeDeviceUser',
    'listButtonOverrides',
    'createButtonOverride',
    'deleteButtonOverride',
    'getDeviceButtons',
    'listCompatibleButtonTemplates',
    'listDeskphones',
    'createDeskphone',
    'getDeskphone',
    'updateDeskphone',
    'deleteDeskphone',
    'listDeskphoneLines',
    'createDeskphoneLine',
    'updateDeskphoneLine',
    'deleteDeskphoneLine',
    'listDeskphoneProvisioningEvents',
    'listDectBases',
    'createDectBase',
    'getDectBase',
    'updateDectBase',
    'deleteDectBase',
    'listDectHandsets',
    'createDectHandset',
    'getDectHandset',
    'updateDectHandset',
    'deleteDectHandset',
    'listDectHandsetExtensions',
    'addDectHandsetExtension',
    'removeDectHandsetExtension',
    'listButtonTemplates',
    'createButtonTemplate',
    'getButtonTemplate',
    'updateButtonTemplate',
    'deleteButtonTemplate',
    'listButtonTemplateButtons',
    'createButtonTemplateButton',
    'updateButtonTemplateButton',
    'deleteButtonTemplateButton',
  ],
  agreement_acceptance: ['getAccount', 'getAccountPricing', 'getAccountEffectivePricing', 'getAccountTos', 'acceptAccountTos'],
} as const satisfies Record<SessionComponent, readonly string[]>

/** The components whose sessions may call this operation. */
export function componentsGranting(operationId: string): SessionComponent[] {
  return (Object.keys(SESSION_GRANTS) as SessionComponent[]).filter((c) => (SESSION_GRANTS[c] as readonly string[]).includes(operationId))
}
