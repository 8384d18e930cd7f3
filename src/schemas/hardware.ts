/** Hardware: the catalog and hardware orders (spec, "Hardware", "Hardware order", "Catalog", "Faxes, Files, Hardware Orders"). */
import { DateTime, Expanded, Id, Nullable, T } from './common'

const oneOf = <V extends string>(values: readonly V[], description?: string) =>
  T.Union(values.map((v) => T.Literal(v)) as never as [ReturnType<typeof T.Literal<V>>], description ? { description } : {})

export const HARDWARE_ORDER_STATUSES = ['draft', 'submitted', 'approved', 'rejected', 'fulfilled', 'cancelled'] as const
export const HardwareOrderStatus = oneOf(
  HARDWARE_ORDER_STATUSES,
  'submitted (created so), approved (after review), fulfilled (delivered: the phones are devices of the account), rejected (declined at review; rejection_reason says why), cancelled. draft is in the enum but no order is ever draft here.',
)
export const HardwareDeviceType = oneOf(
  ['deskphone', 'dect_base', 'dect_handset', 'accessory'] as const,
  'accessory ships with an order but never becomes a device',
)

export const CatalogItem = T.Object({
  id: T.String({ description: 'stable catalog item ID, the one a hardware order names' }),
  object: T.Literal('catalog_item'),
  manufacturer: T.String(),
  model: T.String({ description: 'for phones, the model name devices are created with (POST /v1/devices takes it)' }),
  sku: Nullable(T.String({ description: 'the manufacturer’s part number, null when it has none the service relies on' })),
  device_type: HardwareDeviceType,
  active: T.Boolean({ description: 'false: no longer sold (ordering it is a 400); a phone of that model is still provisioned' }),
  unit_price: T.Integer({ minimum: 0, description: 'list price of one unit in US cents (not in the spec: an extension of HardwareCatalogItem)' }),
  currency: T.Literal('usd', { description: 'the currency of the prices (not in the spec)' }),
  description: T.String({ description: 'what the item is (not in the spec)' }),
  created_at: DateTime(),
  updated_at: DateTime(),
})

const UserIntent = Nullable(
  Id('ID of a user of the account the unit is meant for: deskphones and DECT handsets only; at delivery the device is assigned to them'),
)
const MacIntent = Nullable(
  T.String({
    minLength: 1,
    maxLength: 17,
    description:
      'the unit’s MAC address when known (deskphones and DECT bases only, one unit): 12 hex digits, optionally separated by colons or dashes; must not be a registered device’s. Without it the unit gets the MAC of the unit shipped (sandbox: a generated locally administered address, 02…)',
  }),
)
const BaseIntent = Nullable(
  Id(
    'DECT handsets only: ID of an existing DECT base of the account the handset joins at delivery; null or omitted: a DECT base of the same order (the order’s bases, in item order, while they have room)',
  ),
)

export const HardwareOrderItemRequest = T.Object(
  {
    catalog_item: Id('ID of an active catalog item (GET /v1/catalog)'),
    quantity: T.Optional(
      T.Integer({ minimum: 1, maximum: 50, default: 1, description: 'units of the item, 1 to 50 (default 1); the response has one item per unit' }),
    ),
    user: T.Optional(UserIntent),
    mac_address: T.Optional(MacIntent),
    base: T.Optional(BaseIntent),
  },
  { additionalProperties: false },
)
const Items = T.Array(HardwareOrderItemRequest, { minItems: 1, maxItems: 20, description: '1 to 20 lines, at most 100 units in all' })
const Reference = Nullable(
  T.String({
    minLength: 1,
    maxLength: 100,
    description:
      'the customer’s own reference (a purchase order number). Sandbox: SANDBOX-REJECT, SANDBOX-HOLD-REVIEW and SANDBOX-HOLD-DELIVERY (any case) steer the sandbox reviewer (see the operation’s description)',
  }),
)

export const CreateHardwareOrderRequest = T.Object(
  {
    location: Id('ID of the account location the hardware ships to; the devices are placed there'),
    reference: T.Optional(Reference),
    items: Items,
  },
  { additionalProperties: false },
)
export const UpdateHardwareOrderRequest = T.Object(
  {
    items: T.Optional(
      T.Array(HardwareOrderItemRequest, { minItems: 1, maxItems: 20, description: 'replaces every item of the order (new item IDs); only while submitted' }),
    ),
    status: T.Optional(T.Literal('cancelled', { description: 'cancels the order (submitted or approved); alone, without items' })),
  },
  { additionalProperties: false },
)
export const UpdateHardwareOrderItemRequest = T.Object(
  { user: T.Optional(UserIntent), mac_address: T.Optional(MacIntent), base: T.Optional(BaseIntent) },
  { additionalProperties: false },
)

export const HardwareOrderItem = T.Object({
  id: T.String(),
  object: T.Literal('hardware_order_item'),
  catalog_item: T.String(),
  device_type: HardwareDeviceType,
  manufacturer: Nullable(T.String()),
  model: Nullable(T.String()),
  unit_price: Nullable(T.Integer({ description: 'US cents, the catalog’s price' })),
  user: Nullable(T.String({ description: 'pre-assignment intent: the user the unit is meant for (null once that user is deleted)' })),
  mac_address: Nullable(T.String({ description: '12 uppercase hex digits: the one given, or (once fulfilled) the unit’s' })),
  base: Nullable(T.String({ description: 'DECT handsets: the existing base it joins (null: a base of this order)' })),
  device: Nullable(T.String({ description: 'the device the unit became once fulfilled; always null for accessories' })),
})

export const HardwareOrder = T.Object({
  id: T.String(),
  object: T.Literal('hardware_order'),
  status: HardwareOrderStatus,
  rejection_reason: Nullable(T.String({ description: 'set only when status is rejected' })),
  location: Nullable(T.String({ description: 'the location it ships to (null only once a finished order’s location was deleted)' })),
  reference: Nullable(T.String()),
  items: T.Array(HardwareOrderItem, { description: 'one item per physical unit' }),
  total_price: T.Integer({ description: 'sum of the items’ unit prices, US cents' }),
  currency: T.Literal('usd'),
  catalog_items: T.Optional(Expanded(CatalogItem)),
  created_at: DateTime(),
  updated_at: DateTime(),
})
