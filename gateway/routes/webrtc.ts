/**
 * WebRTC softphone support (spec "WebRTC"): the STUN/TURN servers a softphone uses,
 * the Web Push key it subscribes with, and its push subscription. A softphone is a
 * user's: these routes admit user tokens only.
 */
import { Elysia } from 'elysia'
import * as W from '../../src/schemas/webrtc'
import { iceServersFor } from '../../src/services/webrtc/ice-servers'
import { pushSubscriptionView, subscribe } from '../../src/services/webrtc/push-subscriptions'
import type { GatewayDeps } from '../context'
import { op, userLevel } from '../docs'
import { signedInUser } from '../plugins/auth'
import type { requestContext } from '../plugins/request-context'

const TAG = 'WebRTC'
const rule = userLevel()

const PUSH_KEY_DOC = {
  ...op('getWebPushKey', {
    summary: 'The Web Push public key',
    description:
      'The spec names this operation (WebPushKeyResponse) but not its path; the path is this service’s (x-extension). The server’s VAPID public key (RFC 8292), the same for every user and every process of the installation: pass it to PushManager.subscribe() as applicationServerKey, then send the subscription to POST /v1/webrtc/push-subscriptions.',
    tag: TAG,
    auth: rule,
    response: W.WebPushKeyResponse,
  }),
  'x-extension': true,
}

export function webrtcRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  return new Elysia({ name: 'routes/webrtc' })
    .use(base)
    .get('/v1/webrtc/ice-servers', ({ auth }) => iceServersFor(deps.config.ice, signedInUser(auth.principal).userId, deps.clock.now()), {
      detail: op('getIceServers', {
        summary: 'STUN and TURN servers for the softphone',
        description:
          'The servers the operator configured (STUN_URLS, TURN_URLS). TURN servers come with a time-limited credential for the signed-in user (username `<expiry>:<user ID>`, credential base64 HMAC-SHA1 under TURN_SECRET, which coturn checks with use-auth-secret); fetch new ones before expires_at (TURN_CREDENTIAL_TTL_S after the request, 24 hours by default). ice_servers is empty when none is configured.',
        tag: TAG,
        auth: rule,
        response: W.IceServersResponse,
      }),
    })
    .get('/v1/webrtc/push-key', () => ({ vapid_public_key: deps.webPushKey }), { detail: PUSH_KEY_DOC })
    .post(
      '/v1/webrtc/push-subscriptions',
      ({ auth, body, mutate }) =>
        mutate(async (tx) => {
          const row = await subscribe(tx, deps.clock, signedInUser(auth.principal), body)
          return { resource: row.id, body: pushSubscriptionView(row) }
        }),
      {
        body: W.CreatePushSubscriptionRequest,
        detail: op('createPushSubscription', {
          summary: 'Subscribe the softphone’s browser to Web Push',
          description:
            'Stores the browser’s push subscription for the signed-in user, so that a call can wake the softphone. endpoint must be the https URL of the push service; keys.p256dh the subscription’s P-256 public key (65-byte uncompressed point, base64url); keys.auth its 16-byte authentication secret (base64url), kept sealed at rest and never shown back. Subscribing the same endpoint again answers the same subscription with the new keys; an endpoint another user subscribed moves to the signed-in user (a browser profile wakes for whoever signed in to it last). A user keeps the 20 most recently subscribed browsers; an older one gives way. Any invalid field is 400 validation_error with details naming it, and nothing is stored.',
          tag: TAG,
          auth: rule,
          response: W.PushSubscription,
        }),
      },
    )
}
