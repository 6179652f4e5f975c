/** Small helpers shared by the benchmarks: timing, medians and the ratio line every bench prints. */
import { performance } from "node:perf_hooks"

export const median = (xs: ReadonlyArray<number>): number => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/** Times `fn` `n` times after `warmup` runs; returns each run's milliseconds. */
export const sample = async (
  n: number,
  fn: () => Promise<unknown>,
  warmup = Math.min(20, n)
): Promise<Array<number>> => {
  for (let i = 0; i < warmup; i++) await fn()
  const out: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await fn()
    out.push(performance.now() - t)
  }
  return out
}

/**
 * Alternates candidate and baseline so machine noise hits both alike; prints both medians and
 * their ratio, with the target when there is one.
 */
export const compare = async (
  label: string,
  candidate: () => Promise<unknown>,
  baseline: () => Promise<unknown>,
  options: {
    readonly rounds?: number
    readonly perRound?: number
    readonly target?: number
    readonly unit?: "ms" | "µs"
    /** Each sample runs the operation this many times: medians are reported per operation. */
    readonly operationsPerSample?: number
  } = {}
): Promise<number> => {
  const rounds = options.rounds ?? 5
  const perRound = options.perRound ?? 50
  const c: Array<number> = []
  const b: Array<number> = []
  for (let r = 0; r < rounds; r++) {
    b.push(...(await sample(perRound, baseline, r === 0 ? 10 : 2)))
    c.push(...(await sample(perRound, candidate, r === 0 ? 10 : 2)))
  }
  const per = options.operationsPerSample ?? 1
  const mc = median(c) / per
  const mb = median(b) / per
  const ratio = mc / mb
  const unit = options.unit ?? "ms"
  const f = (x: number) => (unit === "µs" ? `${(x * 1000).toFixed(1)} µs` : `${x.toFixed(3)} ms`)
  const target = options.target === undefined
    ? ""
    : `  (target ≤ ${options.target}×: ${ratio <= options.target ? "met" : "MISSED"})`
  console.log(`${label}: ${f(mc)} vs baseline ${f(mb)} → ratio ${ratio.toFixed(2)}×${target}`)
  return ratio
}
