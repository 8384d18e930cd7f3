/**
 * Account sessions and user sessions: HS256 JWTs signed with a server key kept in
 * the database. Account sessions last one hour and carry components; user tokens
 * last the TTL asked at mint (default 24 h, at most 7 days) and die with
 * revoke_sessions, which bumps the user's session epoch.
 */
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose'
import type { Clock } from '../../clock'
import { newId } from '../../ids'
import { SESSION_COMPONENTS, type SessionComponent, USER_SESSION_DEFAULT_TTL_S } from '../../schemas/platform'
import type { Mode } from './platforms'

export const ACCOUNT_SESSION_TTL_S = 3600
const ISSUER = 'business-voice'

export interface AccountSessionClaims {
  typ: 'account_session'
  sid: string
  acct: string
  plat: string
  mode: Mode
  cmp: SessionComponent[]
}

export interface UserSessionClaims {
  typ: 'user_session'
  sid: string
  acct: string
  plat: string
  mode: Mode
  sub: string
  ep: number
}

export type SessionClaims = AccountSessionClaims | UserSessionClaims

export interface SessionTokens {
  mintAccountSession(input: {
    accountId: string
    platformId: string
    mode: Mode
    components: SessionComponent[]
  }): Promise<{ token: string; expiresAt: Date; sessionId: string }>
  mintUserSession(input: {
    accountId: string
    platformId: string
    mode: Mode
    userId: string
    epoch: number
    ttlSeconds?: number
  }): Promise<{ token: string; expiresAt: Date; sessionId: string }>
  /** The claims of a valid, unexpired token; 'expired' or undefined otherwise. */
  verify(token: string): Promise<SessionClaims | 'expired' | undefined>
}

export function sessionTokens(key: Uint8Array, clock: Clock): SessionTokens {
  async function sign(claims: Record<string, unknown>, ttlSeconds: number, subject?: string) {
    const now = clock.wallNow()
    const iat = Math.floor(now.getTime() / 1000)
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(ISSUER)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ttlSeconds)
    if (subject) jwt.setSubject(subject)
    return { token: await jwt.sign(key), expiresAt: new Date((iat + ttlSeconds) * 1000) }
  }
  return {
    async mintAccountSession(input) {
      const sessionId = newId('accountSession')
      const claims = { typ: 'account_session', sid: sessionId, acct: input.accountId, plat: input.platformId, mode: input.mode, cmp: input.components }
      return { ...(await sign(claims, ACCOUNT_SESSION_TTL_S)), sessionId }
    },
    async mintUserSession(input) {
      const sessionId = newId('userSession')
      const claims = { typ: 'user_session', sid: sessionId, acct: input.accountId, plat: input.platformId, mode: input.mode, ep: input.epoch }
      return { ...(await sign(claims, input.ttlSeconds ?? USER_SESSION_DEFAULT_TTL_S, input.userId)), sessionId }
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'], issuer: ISSUER, currentDate: clock.wallNow() })
        const p = payload as Record<string, unknown>
        const base = typeof p.sid === 'string' && typeof p.acct === 'string' && typeof p.plat === 'string' && (p.mode === 'test' || p.mode === 'live')
        if (!base) return undefined
        if (p.typ === 'account_session' && Array.isArray(p.cmp) && p.cmp.every((c) => SESSION_COMPONENTS.includes(c))) {
          return p as unknown as AccountSessionClaims
        }
        if (p.typ === 'user_session' && typeof p.sub === 'string' && typeof p.ep === 'number') return p as unknown as UserSessionClaims
        return undefined
      } catch (e) {
        if (e instanceof joseErrors.JWTExpired) return 'expired'
        return undefined
      }
    },
  }
}
