export * from './platforms'
export * from './accounts'
export * from './users'
export * from './platform-ops'
