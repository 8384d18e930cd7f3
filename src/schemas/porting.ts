/** Number porting: port-in eligibility and port orders (spec, "Number porting", "Port order"). */
import { DateTime, E164, Nullable, T } from './common'

export const PORT_ORDER_STATUSES = ['draft', 'approved', 'submitted', 'exception', 'foc', 'complete', 'cancelled'] as const
const oneOf = <V extends string>(values: readonly V[], description?: string) =>
  T.Union(values.map((v) => T.Literal(v)) as never as [ReturnType<typeof T.Literal<V>>], description ? { description } : {})
export const PortOrderStatus = oneOf(PORT_ORDER_STATUSES)

const Numbers = (description: string) => T.Array(E164(), { minItems: 1, maxItems: 100, description })

export const PortInEligibilityRequest = T.Object({ phone_numbers: Numbers('E.164 numbers to check, at most 100') }, { additionalProperties: false })
export const PortInEligibility = T.Object({
  portable_numbers: T.Array(
    T.Object({
      phone_number: T.String(),
      losing_carrier_name: T.String(),
      losing_carrier_spid: T.String(),
      is_wireless: T.Boolean(),
      account_number_required: T.Boolean({ description: 'the order then needs subscriber account_number and pin' }),
    }),
  ),
  non_portable_numbers: T.Array(
    T.Object({ phone_number: T.String(), rate_center: Nullable(T.String()), city: Nullable(T.String()), state: Nullable(T.String()) }),
  ),
})

const Str = (max = 200) => Nullable(T.String({ minLength: 1, maxLength: max }))
const AddressInput = T.Object(
  { house_number: T.Optional(Str(20)), street_name: T.Optional(Str()), city: T.Optional(Str(100)), state: T.Optional(Str(2)), zip: T.Optional(Str(10)) },
  { additionalProperties: false },
)
const SubscriberInput = T.Object(
  {
    btn: T.Optional(Nullable(E164())),
    business_name: T.Optional(Str()),
    approver_name: T.Optional(Str()),
    account_number: T.Optional(Str(64)),
    pin: T.Optional(Str(32)),
    address: T.Optional(Nullable(AddressInput)),
  },
  { additionalProperties: false, description: 'must match the losing carrier’s records (mismatches are the most common rejection)' },
)
const FocDate = T.String({
  description: 'YYYY-MM-DD: at least 5 business days (weekends and US federal holidays do not count) and at most 30 calendar days after today (US Eastern)',
})
const FocTime = Nullable(T.String({ description: 'HH:MM, US Eastern, 08:00 to 20:00' }))

export const CreatePortOrderRequest = T.Object(
  {
    phone_numbers: Numbers('portable numbers (POST /v1/port-in-eligibility), each in no other port order in progress'),
    subscriber: SubscriberInput,
    requested_foc_date: FocDate,
    requested_foc_time: T.Optional(FocTime),
  },
  { additionalProperties: false },
)
export const UpdatePortOrderRequest = T.Object(
  {
    phone_numbers: T.Optional(Numbers('replaces the order’s numbers')),
    subscriber: T.Optional(SubscriberInput),
    requested_foc_date: T.Optional(FocDate),
    requested_foc_time: T.Optional(FocTime),
  },
  { additionalProperties: false },
)
export const ApprovePortOrderRequest = T.Object(
  {
    signature: T.String({ minLength: 1, maxLength: 200, description: 'the authorised person’s signature (name)' }),
    ip: T.String({ minLength: 1, maxLength: 64 }),
  },
  { additionalProperties: false },
)

const N = (max = 200) => Nullable(T.String({ maxLength: max }))
export const PortOrder = T.Object({
  id: T.String(),
  object: T.Literal('port_order'),
  status: PortOrderStatus,
  details: T.Object({
    phone_numbers: T.Array(T.String()),
    subscriber: T.Object({
      btn: T.Optional(N()),
      business_name: T.Optional(N()),
      approver_name: T.Optional(N()),
      account_number: T.Optional(N()),
      pin: T.Optional(N()),
      address: T.Optional(
        Nullable(
          T.Object({ house_number: T.Optional(N()), street_name: T.Optional(N()), city: T.Optional(N()), state: T.Optional(N()), zip: T.Optional(N()) }),
        ),
      ),
    }),
    approval: T.Optional(T.Object({ signature: T.String(), ip: T.String(), timestamp: DateTime() }, { description: 'set by approval' })),
    requested_foc_date: T.String(),
    requested_foc_time: Nullable(T.String()),
    rejection: T.Optional(T.Object({ code: T.String(), message: T.String() }, { description: 'present when status is exception' })),
  }),
  submitted_at: Nullable(DateTime()),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const PortOrderEvent = T.Object({
  id: T.String(),
  object: T.Literal('port_order_event'),
  port_order: T.String(),
  status: PortOrderStatus,
  previous_status: Nullable(PortOrderStatus),
  rejection: Nullable(T.Object({ code: T.String(), message: T.String() })),
  created_at: DateTime(),
})

export const PortOrderDocument = T.Object({
  object: T.Literal('port_order_document'),
  port_order: T.String(),
  type: oneOf(['bill_copy', 'csr'] as const),
  filename: Nullable(T.String()),
  content_type: T.Literal('application/pdf'),
  size: T.Integer(),
  sha256: T.String(),
  created_at: DateTime(),
})
