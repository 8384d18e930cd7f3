/**
 * Mail to people who run things (platform administrators). SMTP when SMTP_URL is
 * set; otherwise the message is recorded in the operator mailbox, which the
 * operator API lists (GET /admin/mail).
 */
import { desc } from 'drizzle-orm'
import nodemailer from 'nodemailer'
import type { Clock } from '../clock'
import type { Db } from '../db/client'
import { operatorMail } from '../db/schema'
import { newId } from '../ids'

export interface MailMessage {
  to: string[]
  subject: string
  text: string
}

export interface MailTransport {
  send(message: MailMessage): Promise<void>
}

export function recordedMailbox(db: Db, clock: Clock): MailTransport {
  return {
    async send(m) {
      await db.insert(operatorMail).values({ id: newId('operatorMail'), to: m.to, subject: m.subject, body: m.text, createdAt: clock.now() })
    },
  }
}

export function smtpMail(url: string, from: string): MailTransport {
  const transporter = nodemailer.createTransport(url)
  return {
    async send(m) {
      if (m.to.length === 0) return
      await transporter.sendMail({ from, to: m.to, subject: m.subject, text: m.text })
    },
  }
}

export async function listRecordedMail(db: Db, limit: number) {
  const rows = await db.select().from(operatorMail).orderBy(desc(operatorMail.createdAt), desc(operatorMail.id)).limit(limit)
  return rows.map((r) => ({ id: r.id, to: r.to, subject: r.subject, body: r.body, created_at: r.createdAt.toISOString() }))
}
