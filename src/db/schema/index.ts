// One file per domain, named as the services (src/services/<domain>/) and request schemas (src/schemas/<domain>.ts).
export * from './platform'
export * from './accounts'
export * from './routing'
export * from './numbers'
export * from './calls'
export * from './events'
export * from './actors'
export * from './devices'
