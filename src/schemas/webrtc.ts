/** WebRTC softphone support: ICE servers, the Web Push key, push subscriptions. */
import { Body, DateTime, T, Text } from './common'

export const IceServer = T.Object({
  urls: T.Array(T.String(), { description: 'stun:, stuns:, turn: or turns: URIs; always an array.' }),
  username: T.Optional(T.String({ description: 'TURN only: `<expiry in Unix seconds>:<user ID>` (the TURN REST convention).' })),
  credential: T.Optional(T.String({ description: 'TURN only: base64 HMAC-SHA1 of the username under the TURN server’s shared secret.' })),
})

export const IceServersResponse = T.Object({
  ice_servers: T.Array(IceServer, { description: 'Empty when the operator configured no STUN or TURN server.' }),
  expires_at: DateTime(),
})

export const WebPushKeyResponse = T.Object({
  vapid_public_key: T.String({
    description:
      'The server’s VAPID public key (RFC 8292): the uncompressed P-256 point, base64url; pass it as applicationServerKey to PushManager.subscribe().',
  }),
})

export const CreatePushSubscriptionRequest = Body(
  {
    endpoint: Text(2048, 1),
    keys: Body({ p256dh: Text(200, 1), auth: Text(100, 1) }),
  },
  'The browser’s PushSubscription: its endpoint and keys (PushSubscription.toJSON() without expirationTime).',
)

export const PushSubscription = T.Object({
  id: T.String(),
  object: T.Literal('push_subscription'),
  endpoint: T.String(),
  created_at: DateTime(),
})
