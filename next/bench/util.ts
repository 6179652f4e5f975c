/** Small helpers shared by the benchmarks: timing, medians and the ratio line every bench prints. */
import { readFileSync } from "node:fs"
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

/** Resident memory (VmRSS, MiB) of the processes in `pids`. */
export const rssMiB = (pids: ReadonlyArray<number>): number =>
  pids.reduce((sum, pid) => {
    try {
      const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]
      return sum + Number(kb ?? 0) / 1024
    } catch {
      return sum
    }
  }, 0)

/** Fields of /proc/<pid>/stat after the command name (the name may contain spaces). */
const statFields = (pid: number | "self"): Array<string> | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** CPU ticks (user + system) used so far by the live processes in `pids`. */
export const cpuTicks = (pids: ReadonlyArray<number>): number =>
  pids.reduce((sum, pid) => {
    const fields = statFields(pid)
    return fields === undefined ? sum : sum + Number(fields[11]) + Number(fields[12])
  }, 0)

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const ticksPerSecond = 100

/**
 * CPU milliseconds used so far by this process (`self`) and every child process (`children`): its own time, the time
 * of children it has reaped (cutime + cstime) and that of the live processes in `live()`. A
 * child's time moves from the live sum to the reaped one when it exits, so differences of two
 * readings count every CLI that ran in between.
 */
export const cpuMillis = (live: () => ReadonlyArray<number>): { readonly self: number; readonly children: number } => {
  const self = process.cpuUsage()
  const fields = statFields("self")
  const reaped = fields === undefined ? 0 : Number(fields[13]) + Number(fields[14])
  return { self: (self.user + self.system) / 1000, children: ((reaped + cpuTicks(live())) * 1000) / ticksPerSecond }
}

/** CPU milliseconds between two {@link cpuMillis} readings. */
export const cpuSince = (
  before: { readonly self: number; readonly children: number },
  after: { readonly self: number; readonly children: number }
): { readonly self: number; readonly children: number; readonly total: number } => ({
  self: after.self - before.self,
  children: after.children - before.children,
  total: after.self - before.self + after.children - before.children
})

/**
 * Resolves once the processes in `pids()` have used no CPU for half a second (at most 30 s): a
 * CLI started ahead of its first message has then finished starting. Without a process it waits
 * the same half second.
 */
export const untilIdle = async (pids: () => ReadonlyArray<number>): Promise<void> => {
  let before = -1
  for (let i = 0; i < 60; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    const now = cpuTicks(pids())
    if (now === before) return
    before = now
  }
}
