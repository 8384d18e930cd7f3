import { expect, test } from 'bun:test'
import { useWorkerDatabase, WORKER_DATABASES_ENV } from './worker-databases'

test('each worker of a parallel run takes its own database; outside one nothing changes', () => {
  const urls = 'postgres://h/test_worker_1 postgres://h/test_worker_2'
  const worker2: Record<string, string | undefined> = { DATABASE_URL: 'postgres://h/test', BUN_TEST_WORKER_ID: '2', [WORKER_DATABASES_ENV]: urls }
  useWorkerDatabase(worker2)
  expect(worker2.DATABASE_URL).toBe('postgres://h/test_worker_2')
  const alone: Record<string, string | undefined> = { DATABASE_URL: 'postgres://h/test', [WORKER_DATABASES_ENV]: urls }
  useWorkerDatabase(alone)
  expect(alone.DATABASE_URL).toBe('postgres://h/test')
  const embedded: Record<string, string | undefined> = { BUN_TEST_WORKER_ID: '1' }
  useWorkerDatabase(embedded)
  expect(embedded.DATABASE_URL).toBeUndefined()
})
