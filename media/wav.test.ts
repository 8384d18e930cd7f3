/**
 * Recordings are real audio: the WAV parses (RIFF/WAVE, fmt, data; 8 kHz 16-bit mono),
 * lasts exactly the call's length, is silent exactly where recording was paused and
 * audible elsewhere, is the same for the same call, and an independent tool agrees.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { pauseSampleRange, simulateCallAudio, simulatedRecordingWav, type PauseInterval } from './simulated-audio'
import { decodeWavHeader, decodeWavSamples, encodeWav, WavFormatError } from './wav'

const RATE = 8000
const FRAME = 160 // 20 ms, the usual RTP packet

/** Every 20 ms frame fully inside [from, to) has sound well above the line hiss floor. */
function audibleFrames(samples: Int16Array, from: number, to: number): boolean {
  for (let f = from; f + FRAME <= to; f += FRAME) {
    let sum = 0
    for (let i = f; i < f + FRAME; i++) sum += samples[i]! * samples[i]!
    if (Math.sqrt(sum / FRAME) < 10) return false
  }
  return true
}

describe('WAV encoding', () => {
  test('writes a canonical 44-byte PCM header', () => {
    const wav = encodeWav(new Int16Array([0, 1, -1, 32767, -32768]))
    const text = (a: number) => new TextDecoder().decode(wav.subarray(a, a + 4))
    expect([text(0), text(8), text(12), text(36)]).toEqual(['RIFF', 'WAVE', 'fmt ', 'data'])
    const info = decodeWavHeader(wav)
    expect(info).toEqual({ format: 1, channels: 1, sampleRate: 8000, bitsPerSample: 16, dataOffset: 44, dataBytes: 10, durationMs: 0.625 })
    expect([...decodeWavSamples(wav)]).toEqual([0, 1, -1, 32767, -32768])
    // little-endian on the wire whatever the host
    expect([...wav.subarray(44 + 6, 44 + 8)]).toEqual([0xff, 0x7f])
  })

  test('rejects what is not a WAV', () => {
    expect(() => decodeWavHeader(new TextEncoder().encode('hello world, not audio'))).toThrow(WavFormatError)
    const truncated = encodeWav(new Int16Array(10)).subarray(0, 40)
    expect(() => decodeWavHeader(truncated)).toThrow(WavFormatError)
  })
})

describe('simulated call audio', () => {
  test('a 120 s call is a 120 s, 8 kHz 16-bit mono WAV', () => {
    const wav = simulatedRecordingWav({ seed: 'cal_120', durationMs: 120_000 })
    const info = decodeWavHeader(wav)
    expect(info.sampleRate).toBe(8000)
    expect(info.bitsPerSample).toBe(16)
    expect(info.channels).toBe(1)
    expect(info.dataBytes / 16000).toBe(120)
    expect(info.durationMs).toBe(120_000)
    expect(wav.length).toBe(44 + 1_920_000)
    const samples = decodeWavSamples(wav)
    expect(audibleFrames(samples, 0, 960_000)).toBe(true)
    // speech, not just hiss: every second has voiced peaks, and both voices take turns
    for (let s = 0; s < 120; s++) {
      let peak = 0
      for (let i = s * RATE; i < (s + 1) * RATE; i++) peak = Math.max(peak, Math.abs(samples[i]!))
      expect(peak).toBeGreaterThan(1500)
    }
  })

  test('duration matches for any length, including zero', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20_000 }), (ms) => {
        const info = decodeWavHeader(simulatedRecordingWav({ seed: 'x', durationMs: ms }))
        expect(info.dataBytes).toBe(Math.round(ms * 8) * 2)
      }),
      { numRuns: 30 },
    )
  })

  test('pause and resume leave an exactly silent gap in one file', () => {
    const pauses = [{ from: 3000, to: 5500 }]
    const samples = decodeWavSamples(simulatedRecordingWav({ seed: 'cal_p', durationMs: 10_000, pauses }))
    expect(samples.length).toBe(80_000)
    expect(samples.subarray(24_000, 44_000).every((s) => s === 0)).toBe(true) // 3.000 s to 5.500 s
    expect(audibleFrames(samples, 0, 24_000)).toBe(true)
    expect(audibleFrames(samples, 44_000, 80_000)).toBe(true)
  })

  test('a pause with no resume is silent to the end', () => {
    const samples = simulateCallAudio({ seed: 'cal_q', durationMs: 4000, pauses: [{ from: 1000, to: null }] })
    expect(samples.subarray(8000).every((s) => s === 0)).toBe(true)
    expect(audibleFrames(samples, 0, 8000)).toBe(true)
  })

  test('any pauses: paused samples are zero, the rest is audible, the rest is unchanged', () => {
    const pause = fc
      .tuple(fc.integer({ min: 0, max: 6000 }), fc.option(fc.integer({ min: 0, max: 3000 }), { nil: null }))
      .map(([from, len]): PauseInterval => ({ from, to: len === null ? null : from + len }))
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.array(pause, { maxLength: 3 }), (seed, pauses) => {
        const plain = simulateCallAudio({ seed, durationMs: 6000 })
        const paused = simulateCallAudio({ seed, durationMs: 6000, pauses })
        const silent = new Uint8Array(plain.length)
        for (const p of pauses) {
          const [a, b] = pauseSampleRange(p, plain.length)
          silent.fill(1, a, b)
        }
        // count mismatches rather than expect per sample: a million expects is slow
        let wrong = 0
        for (let i = 0; i < plain.length; i++) if (paused[i] !== (silent[i] ? 0 : plain[i])) wrong++
        expect(wrong).toBe(0)
        let runStart = -1
        for (let i = 0; i <= plain.length; i++) {
          // check each unpaused stretch is audible
          const inRun = i < plain.length && !silent[i]
          if (inRun && runStart < 0) runStart = i
          if (!inRun && runStart >= 0) {
            expect(audibleFrames(paused, runStart, i)).toBe(true)
            runStart = -1
          }
        }
      }),
      { numRuns: 40 },
    )
  })

  test('the same call always sounds the same; different calls differ', () => {
    const a = simulatedRecordingWav({ seed: 'cal_A', durationMs: 5000, pauses: [{ from: 100, to: 900 }] })
    const a2 = simulatedRecordingWav({ seed: 'cal_A', durationMs: 5000, pauses: [{ from: 100, to: 900 }] })
    const b = simulatedRecordingWav({ seed: 'cal_B', durationMs: 5000, pauses: [{ from: 100, to: 900 }] })
    expect(Bun.hash(a)).toBe(Bun.hash(a2))
    expect(Bun.hash(a)).not.toBe(Bun.hash(b))
  })

  test('refuses a negative or non-finite duration', () => {
    expect(() => simulateCallAudio({ seed: 'x', durationMs: -1 })).toThrow(RangeError)
    expect(() => simulateCallAudio({ seed: 'x', durationMs: Number.NaN })).toThrow(RangeError)
  })
})

describe('an independent tool reads the file', () => {
  let dir: string | undefined
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  // sox/ffprobe are the usual audio tools; Python's wave module is a separate RIFF
  // reader found on most machines. Whichever is first present checks our header.
  const tools: { name: string; args: (f: string) => string[]; check: (out: string) => void }[] = [
    {
      name: 'soxi',
      args: (f) => ['soxi', f],
      check: (o) => {
        expect(o).toMatch(/Sample Rate\s*:\s*8000/)
        expect(o).toMatch(/Channels\s*:\s*1/)
        expect(o).toMatch(/Precision\s*:\s*16-bit/)
        expect(o).toMatch(/Duration\s*:\s*00:00:07\.50 = 60000 samples/)
      },
    },
    {
      name: 'ffprobe',
      args: (f) => ['ffprobe', '-v', 'error', '-show_entries', 'stream=sample_rate,channels,codec_name,duration', '-of', 'default=nw=1', f],
      check: (o) => {
        expect(o).toContain('codec_name=pcm_s16le')
        expect(o).toContain('sample_rate=8000')
        expect(o).toContain('channels=1')
        expect(o).toContain('duration=7.500000')
      },
    },
    {
      name: 'python3',
      args: (f) => [
        'python3',
        '-c',
        'import sys,wave; w=wave.open(sys.argv[1]); print(w.getnchannels(), w.getsampwidth(), w.getframerate(), w.getnframes())',
        f,
      ],
      check: (o) => expect(o.trim()).toBe('1 2 8000 60000'),
    },
  ]
  const tool = tools.find((t) => Bun.which(t.name))
  if (!tool) console.log('[media] independent WAV check skipped: none of soxi, ffprobe, python3 is installed')

  test.skipIf(!tool)(`${tool?.name ?? 'no tool'} agrees on format and length`, async () => {
    dir = await mkdtemp(join(tmpdir(), 'voice-wav-'))
    const file = join(dir, 'call.wav')
    await writeFile(file, simulatedRecordingWav({ seed: 'cal_tool', durationMs: 7500, pauses: [{ from: 2000, to: 3000 }] }))
    const proc = Bun.spawnSync(tool!.args(file))
    expect(proc.exitCode).toBe(0)
    tool!.check(proc.stdout.toString())
  })
})
