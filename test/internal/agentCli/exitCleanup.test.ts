/**
 * What the library started does not outlive its process: a tracked process group is killed and a
 * tracked directory removed on `exit`, on a signal nobody else handles (which then still ends the
 * process with its usual status) and, through the watchdog, after a SIGKILL. Untracked ones are left
 * alone, and a signal the app handles is the app's. Real processes; paths with spaces and glob
 * characters.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const program = resolve("test/internal/agentCli/fixtures/exitCleanupProgram.ts")

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

const within = (ms: number, done: () => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (!done() && Date.now() < deadline) yield* Effect.sleep("20 millis")
    return done()
  })

interface Run {
  readonly pid: number
  readonly kept: number
  readonly released: number
  readonly output: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const run = (mode: string, tracked: string, untracked: string) =>
  Effect.acquireRelease(
    Effect.callback<Run, Error>((resume) => {
      const child = spawn(process.execPath, ["--import", "tsx", program, mode, tracked, untracked], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
        child.on("exit", (code, signal) => done({ code, signal }))
      )
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString()
        const ready = /READY (\d+) (\d+)/.exec(output)
        if (ready) {
          resume(Effect.succeed({
            pid: child.pid!,
            kept: Number(ready[1]),
            released: Number(ready[2]),
            output: () => output,
            exited
          }))
        }
      })
      void exited.then(() => resume(Effect.fail(new Error(`ended early: ${output}`))))
    }).pipe(Effect.timeout("60 seconds")),
    (r) =>
      Effect.sync(() => {
        for (const pid of [r.pid, r.kept, r.released]) {
          try {
            process.kill(pid, "SIGKILL")
          } catch {
            // gone
          }
        }
      })
  )

const folders = () => {
  const base = mkdtempSync(join(tmpdir(), "ecb-exit-"))
  const tracked = join(base, "tracked dir [*]")
  const untracked = join(base, "untracked dir")
  mkdirSync(tracked)
  mkdirSync(untracked)
  return Effect.acquireRelease(
    Effect.succeed({ tracked, untracked }),
    () => Effect.sync(() => rmSync(base, { recursive: true, force: true }))
  )
}

describe("exitCleanup", () => {
  const ends = [
    { how: "SIGINT nobody handles", mode: "wait", stop: "SIGINT", status: { signal: "SIGINT" } },
    { how: "SIGTERM nobody handles", mode: "wait", stop: "SIGTERM", status: { signal: "SIGTERM" } },
    { how: "SIGHUP nobody handles", mode: "wait", stop: "SIGHUP", status: { signal: "SIGHUP" } },
    { how: "SIGKILL (the watchdog)", mode: "wait", stop: "SIGKILL", status: { signal: "SIGKILL" } },
    { how: "process.exit", mode: "exit", stop: undefined, status: { code: 3 } }
  ] as const
  for (const { how, mode, status, stop } of ends) {
    it.live(
      `${how}: tracked group killed, tracked directory removed, untracked ones kept`,
      () =>
        Effect.gen(function*() {
          const { tracked, untracked } = yield* folders()
          const r = yield* run(mode, tracked, untracked)
          expect(alive(r.kept)).toBe(true)
          if (stop !== undefined) process.kill(r.pid, stop)
          expect(yield* Effect.promise(() => r.exited)).toMatchObject(status)
          expect(yield* within(2_000, () => !alive(r.kept))).toBe(true)
          expect(yield* within(2_000, () => !existsSync(tracked))).toBe(true)
          expect(alive(r.released)).toBe(true)
          expect(existsSync(untracked)).toBe(true)
        }).pipe(Effect.scoped),
      60_000
    )
  }

  it.live(
    "a signal the app handles is the app's: nothing is killed and the process goes on",
    () =>
      Effect.gen(function*() {
        const { tracked, untracked } = yield* folders()
        const r = yield* run("handled", tracked, untracked)
        process.kill(r.pid, "SIGTERM")
        expect(yield* within(5_000, () => r.output().includes("APP-HANDLED"))).toBe(true)
        yield* Effect.sleep("300 millis")
        expect(alive(r.pid)).toBe(true)
        expect(alive(r.kept)).toBe(true)
        expect(existsSync(tracked)).toBe(true)
        // Its later death is still covered.
        process.kill(r.pid, "SIGKILL")
        expect(yield* within(2_000, () => !alive(r.kept))).toBe(true)
        expect(yield* within(2_000, () => !existsSync(tracked))).toBe(true)
      }).pipe(Effect.scoped),
    60_000
  )
})
