/** Phone numbers, number orders and available-number offers (sandbox range +1500555xxxx). */
import { Body, DateTime, E164, Id, Nullable, T } from './common'

export const PHONE_NUMBER_STATUSES = ['active', 'inactive', 'pending', 'released'] as const
export const ORDER_STATUSES = ['pending', 'complete', 'partial', 'failed'] as const
export const ORDER_TYPES = ['order', 'disconnect'] as const

const oneOf = <V extends string>(values: readonly V[], description?: string) =>
  T.Union(values.map((v) => T.Literal(v)) as never as [ReturnType<typeof T.Literal<V>>], description ? { description } : {})

export const PhoneNumberStatus = oneOf(PHONE_NUMBER_STATUSES)
export const OrderStatus = oneOf(ORDER_STATUSES)
export const OrderType = oneOf(ORDER_TYPES)

export const PhoneNumber = T.Object({
  id: T.String(),
  object: T.Literal('phone_number'),
  account: T.String(),
  number: T.String({ description: 'E.164' }),
  status: PhoneNumberStatus,
  order: Nullable(T.String({ description: 'ID of the number order that brought the number in' })),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const PhoneNumberOrder = T.Object({
  id: T.String(),
  object: T.Literal('phone_number_order'),
  status: OrderStatus,
  order_type: OrderType,
  phone_numbers: T.Array(T.String({ description: 'E.164' }), { description: 'the numbers of the order, in request order' }),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const AvailablePhoneNumber = T.Object({
  object: T.Literal('available_phone_number'),
  phone_number: T.String({ description: 'E.164' }),
  area_code: T.String(),
  npa_nxx: T.String(),
  city: Nullable(T.String({ description: 'the city asked for, echoed as locality information' })),
  state: Nullable(T.String()),
  zip: Nullable(T.String()),
  country: T.Literal('US'),
})

export const CreatePhoneNumberOrderRequest = Body({
  phone_numbers: T.Array(E164(), {
    minItems: 1,
    maxItems: 100,
    description: '1 to 100 distinct E.164 numbers; in sandbox each must be in +15005550000..+15005559999',
  }),
})

export const ReassignPhoneNumberRequest = Body({ account: Id() }, 'account: the account that takes the number (same platform, same mode)')

export const UpdatePhoneNumberRequest = Body(
  {
    status: T.Optional(
      T.Union([T.Literal('active'), T.Literal('inactive')], {
        description:
          'active or inactive. active on a released number recovers it (counts against max_phone_numbers); inactive keeps the number on the account (still counted) but out of service. released is reached only through POST .../disconnect; pending numbers change status only when their order completes.',
      }),
    ),
  },
  'Fields to change; an omitted field keeps its value',
)

export const SMS_PORT_OUT_STATUSES = ['open', 'locked'] as const

export const SmsPortOut = T.Object({
  object: T.Literal('sms_port_out'),
  phone_number: T.String({ description: 'ID of the phone number' }),
  number: T.String({ description: 'E.164' }),
  status: oneOf(
    SMS_PORT_OUT_STATUSES,
    'open: the number’s SMS service may be ported out to another messaging provider until expires_at; locked: any SMS port-out is refused',
  ),
  opened_at: Nullable(T.String({ format: 'date-time', description: 'when the open window was opened; null when locked' })),
  expires_at: Nullable(T.String({ format: 'date-time', description: 'when the open window locks again by itself; null when locked' })),
})

export const SetSmsPortOutRequest = Body({
  status: oneOf(SMS_PORT_OUT_STATUSES, 'open opens (or renews) the window for 72 hours; locked closes it at once'),
})
