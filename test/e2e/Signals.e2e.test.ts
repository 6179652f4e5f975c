/**
 * No claude CLI outlives its program. A user's program (plain `Effect.runPromise`, one slow tool,
 * the real binary against the fake Messages API) is signalled mid-turn, while the tool runs, the way
 * a terminal (SIGINT to the foreground group) or a process manager (SIGTERM to the pid) does, or
 * killed outright (SIGKILL, where no code of the program runs). Within 2 s no claude process of it
 * remains, the fake gets no model request after that, no secret directory is left, and a signal the
 * program does not handle still ends it with the signal's usual status.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { type ChildProcess, spawn } from "node:child_process"
import { readdirSync } from "node:fs"
import { resolve } from "node:path"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { withoutCredentials } from "../support/runTsx.ts"

const program = resolve("test/e2e/fixtures/slowToolProgram.ts")

interface Started {
  readonly child: ChildProcess
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Starts the program in its own process group (a terminal's job) and waits until its tool runs. */
const start = (box: Sandbox, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.callback<Started, Error>((resume) => {
      const child = spawn(process.execPath, ["--import", "tsx", program], {
        env: {
          ...withoutCredentials(),
          ...box.env,
          CLAUDE_BINARY: claudeBinary,
          CLAUDE_CWD: box.cwd,
          CLAUDE_REQUEST_TIMEOUT: "90 seconds",
          ...env
        },
        detached: true,
        stdio: ["ignore", "pipe", "pipe"]
      })
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
        child.on("exit", (code, signal) => done({ code, signal }))
      )
      let output = ""
      const onData = (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes("TOOL-STARTED")) resume(Effect.succeed({ child, exited }))
      }
      child.stdout!.on("data", onData)
      child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
      void exited.then(() => resume(Effect.fail(new Error(`the program ended before its tool ran:\n${output}`))))
    }).pipe(Effect.timeout("90 seconds")),
    ({ child }) =>
      Effect.sync(() => {
        try {
          process.kill(-child.pid!, "SIGKILL")
        } catch {
          // Gone already: the usual case.
        }
      })
  )

const secretDirectories = (box: Sandbox) =>
  readdirSync(box.env["TMPDIR"]!).filter((name) => name.startsWith("effect-chat-bridge-secret-"))

/** Polls for up to `ms` until `done` holds; answers whether it did. */
const within = (ms: number, done: () => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (!done() && Date.now() < deadline) yield* Effect.sleep("20 millis")
    return done()
  })

type Stop = "SIGINT to the group" | "SIGTERM to the pid" | "SIGKILL to the pid"

const send = (child: ChildProcess, stop: Stop) => {
  if (stop === "SIGINT to the group") process.kill(-child.pid!, "SIGINT")
  else process.kill(child.pid!, stop === "SIGTERM to the pid" ? "SIGTERM" : "SIGKILL")
}

const cases: ReadonlyArray<{ readonly name: string; readonly env: Record<string, string> }> = [
  { name: "ClaudeLocal", env: { PROVIDER: "local" } },
  { name: "ClaudeLocal keepAlive", env: { PROVIDER: "local", KEEP_ALIVE: "1" } },
  { name: "ClaudeAgent", env: { PROVIDER: "agent" } }
]
const stops: ReadonlyArray<Stop> = ["SIGINT to the group", "SIGTERM to the pid", "SIGKILL to the pid"]

describeWithClaude("a program stopped mid-turn leaves no claude CLI behind", () => {
  for (const { env, name } of cases) {
    for (const stop of stops) {
      it.live(`${name}, plain Effect.runPromise, ${stop}`, () =>
        Effect.gen(function*() {
          const fake = yield* Fake.make(
            Fake.callsThenAnswers({ name: "mcp__gtb__slow_lookup", input: { id: "A-1" } }, () => "found")
          )
          const box = yield* sandbox(fake.url)
          const { child, exited } = yield* start(box, env)
          // The turn is really in flight: a CLI runs and holds a secret file (or an in-process server).
          expect(claudeProcessesIn(box.cwd).length).toBeGreaterThan(0)
          if (name !== "ClaudeAgent") expect(secretDirectories(box).length).toBeGreaterThan(0)

          send(child, stop)
          const signalledAt = Date.now()
          const gone = yield* within(2_000, () => claudeProcessesIn(box.cwd).length === 0)
          expect(gone, `claude processes left: ${claudeProcessesIn(box.cwd).join(", ")}`).toBe(true)
          const status = yield* Effect.promise(() => exited)
          expect(status.signal).toBe(stop.split(" ")[0])

          yield* Effect.sleep(Math.max(0, signalledAt + 1_000 - Date.now()))
          const requestsThen = fake.requests.length
          yield* Effect.sleep("2 seconds")
          expect(fake.requests.length).toBe(requestsThen)
          // Nothing left in the sandbox's TMPDIR by the program (the watchdog removes it after SIGKILL).
          expect(yield* within(1_000, () => secretDirectories(box).length === 0)).toBe(true)
        }).pipe(Effect.scoped), 150_000)
    }
  }

  it.live(
    "ClaudeLocal under NodeRuntime.runMain: SIGINT ends the turn and the CLI quickly",
    () =>
      Effect.gen(function*() {
        const fake = yield* Fake.make(
          Fake.callsThenAnswers({ name: "mcp__gtb__slow_lookup", input: { id: "A-1" } }, () => "found")
        )
        const box = yield* sandbox(fake.url)
        const { child, exited } = yield* start(box, { PROVIDER: "local", RUNNER: "runMain" })
        expect(claudeProcessesIn(box.cwd).length).toBeGreaterThan(0)
        process.kill(-child.pid!, "SIGINT")
        // runMain interrupts the program and runs its finalizers; the CLI gets a short grace only.
        expect(yield* within(2_000, () => claudeProcessesIn(box.cwd).length === 0)).toBe(true)
        const status = yield* Effect.promise(() => exited)
        expect(status.code).toBe(130) // runMain's exit code for an interrupted program
        expect(secretDirectories(box)).toEqual([])
      }).pipe(Effect.scoped),
    150_000
  )
})
