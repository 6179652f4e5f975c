import { assert, describe, it } from "@effect/vitest"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Logger from "effect/Logger"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as References from "effect/References"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as Subprocess from "../../src/services/Subprocess.ts"

const NODE = process.execPath

const testFolder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "subprocess-test-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

const run = (options: Subprocess.RunOptions) => Subprocess.run(options).pipe(Effect.provide(NodeSubprocess.layer))
const stream = (options: Subprocess.RunOptions) => Subprocess.stream(options).pipe(Stream.provide(NodeSubprocess.layer))
const node = (script: string, extra: Partial<Subprocess.RunOptions> = {}): Subprocess.RunOptions => ({
  command: NODE,
  args: ["-e", script],
  ...extra
})

/**
 * Whether `pid` is gone. A zombie counts as gone: it has exited and only waits to be reaped, and
 * this container's PID 1 never reaps orphans, so `kill(pid, 0)` alone would keep seeing them.
 */
const isGone = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH"
  }
  try {
    const stat = nodeFs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return true
  }
}

/** Polls until `file` has `count` whitespace-separated pids (written by a child). */
const waitForPids = (file: string, count: number) =>
  Effect.suspend(() => {
    const text = nodeFs.existsSync(file) ? nodeFs.readFileSync(file, "utf8") : ""
    const pids = text.split(/\s+/).filter((s) => s !== "").map(Number)
    return pids.length >= count ? Effect.succeed(pids) : Effect.fail("not yet" as const)
  }).pipe(Effect.retry({ schedule: Schedule.spaced("20 millis"), times: 500 }), Effect.orDie)

/**
 * A child that traps SIGTERM and starts a grandchild that traps it too. Both pids are written only
 * once the grandchild has installed its handler, so a test never races the traps; `thenRun` runs
 * in the child after that. The child ignores EPIPE so closing its stdout does not end it either.
 */
const stubbornFamily = (pidFile: string, thenRun = "") => `
  const { spawn } = require("node:child_process")
  const fs = require("node:fs")
  process.on("SIGTERM", () => {})
  process.stdout.on("error", () => {})
  const grandchild = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); process.stdout.write('ready'); setInterval(() => {}, 1000)"], { stdio: ["ignore", "pipe", "ignore"] })
  grandchild.stdout.once("data", () => {
    fs.writeFileSync(${JSON.stringify(pidFile)}, process.pid + " " + grandchild.pid + "\\n")
    ${thenRun}
  })
  setInterval(() => {}, 1000)
`

describe("NodeSubprocess.run", () => {
  it.live("captures stdout and stderr separately, with the exit code", () =>
    Effect.gen(function*() {
      const result = yield* run(node("process.stdout.write('to out'); process.stderr.write('to err')"))
      assert.deepStrictEqual(result, { exitCode: 0, stdout: "to out", stderr: "to err" })
    }))

  it.live("feeds stdin and reads 10 MB back without deadlock, while 10 MB more goes to stderr", () =>
    Effect.gen(function*() {
      const input = "0123456789abcdef".repeat(655_360) // 10 MiB
      const result = yield* run(
        node(
          `let n = 0
           process.stdin.on("data", (c) => { n += c.length; process.stdout.write(c) })
           process.stdin.on("end", () => { process.stderr.write("e".repeat(10 * 1024 * 1024)); process.stderr.write("|" + n) })`,
          { stdin: input, timeout: "30 seconds" }
        )
      )
      assert.strictEqual(result.exitCode, 0)
      assert.strictEqual(result.stdout.length, input.length)
      assert.isTrue(result.stdout === input, "stdout is exactly the input")
      assert.isTrue(result.stderr.endsWith(`|${input.length}`))
      assert.strictEqual(result.stderr.length, 10 * 1024 * 1024 + `|${input.length}`.length)
    }))

  it.live("without stdin the child reads end-of-file immediately", () =>
    Effect.gen(function*() {
      const result = yield* run({ command: "cat", args: [], timeout: "5 seconds" })
      assert.deepStrictEqual(result, { exitCode: 0, stdout: "", stderr: "" })
    }))

  it.live("a non-zero exit fails with the code and a bounded stderr tail", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        run(node("process.stderr.write('x'.repeat(100000) + 'THE END'); process.exit(3)"))
      )
      assert.strictEqual(error.reason._tag, "Exited")
      if (error.reason._tag !== "Exited") return
      assert.strictEqual(error.reason.exitCode, 3)
      assert.isAtMost(error.reason.stderrTail.length, 4096)
      assert.isTrue(error.reason.stderrTail.endsWith("THE END"))
      assert.include(error.message, "exited with code 3")
    }))

  it.live("allowNonZeroExit returns the code instead", () =>
    Effect.gen(function*() {
      const result = yield* run({ command: "sh", args: ["-c", "echo out; exit 7"], allowNonZeroExit: true })
      assert.deepStrictEqual(result, { exitCode: 7, stdout: "out\n", stderr: "" })
    }))

  it.live("a death by signal is exit code 128 + N", () =>
    Effect.gen(function*() {
      const result = yield* run({ command: "sh", args: ["-c", "kill -9 $$"], allowNonZeroExit: true })
      assert.strictEqual(result.exitCode, 137)
      const error = yield* Effect.flip(run({ command: "sh", args: ["-c", "kill -9 $$"] }))
      assert.strictEqual(error.reason._tag, "Exited")
      if (error.reason._tag === "Exited") assert.strictEqual(error.reason.signal, "SIGKILL")
    }))

  it.live("a missing binary is SubprocessError NotFound naming it", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(run({ command: "no-such-binary-ecb-3", args: ["--version"] }))
      assert.strictEqual(error.reason._tag, "NotFound")
      assert.strictEqual(error.command, "no-such-binary-ecb-3")
      assert.include(error.message, "no-such-binary-ecb-3")
      const byPath = yield* Effect.flip(run({ command: "/nonexistent/dir/claude", args: [] }))
      assert.strictEqual(byPath.reason._tag, "NotFound")
      assert.include(byPath.message, "/nonexistent/dir/claude")
    }))

  it.live("runs in cwd; a missing cwd is a spawn error, not 'not found'", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const result = yield* run(node("process.stdout.write(process.cwd())", { cwd: folder }))
      assert.strictEqual(nodeFs.realpathSync(result.stdout), nodeFs.realpathSync(folder))
      const error = yield* Effect.flip(run(node("1", { cwd: path.join(folder, "missing") })))
      assert.strictEqual(error.reason._tag, "SpawnFailed")
      assert.include(error.message, "missing")
    }))

  it.live("a non-executable file is a spawn error", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const file = path.join(folder, "not-executable")
      nodeFs.writeFileSync(file, "#!/bin/sh\necho hi\n", { mode: 0o600 })
      const error = yield* Effect.flip(run({ command: file, args: [] }))
      assert.strictEqual(error.reason._tag, "SpawnFailed")
    }))

  it.live("env adds, overrides and removes inherited variables", () =>
    Effect.gen(function*() {
      process.env["ECB_TEST_REMOVE_ME"] = "present-in-parent"
      process.env["ECB_TEST_OVERRIDE_ME"] = "old"
      const result = yield* run(
        node(
          `process.stdout.write(JSON.stringify({
            removed: "ECB_TEST_REMOVE_ME" in process.env,
            overridden: process.env["ECB_TEST_OVERRIDE_ME"],
            added: process.env["ECB_TEST_ADDED"],
            inheritedPath: typeof process.env.PATH
          }))`,
          { env: { ECB_TEST_REMOVE_ME: undefined, ECB_TEST_OVERRIDE_ME: "new", ECB_TEST_ADDED: "yes" } }
        )
      ).pipe(Effect.ensuring(Effect.sync(() => {
        delete process.env["ECB_TEST_REMOVE_ME"]
        delete process.env["ECB_TEST_OVERRIDE_ME"]
      })))
      assert.deepStrictEqual(JSON.parse(result.stdout), {
        removed: false,
        overridden: "new",
        added: "yes",
        inheritedPath: "string"
      })
      // The parent's environment is untouched by the call.
      assert.strictEqual(process.env["ECB_TEST_ADDED"], undefined)
    }))

  it.live("a timeout fails with SubprocessError TimedOut and the child is gone", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const pidFile = path.join(folder, "pids")
      const error = yield* Effect.flip(
        run(node(stubbornFamily(pidFile), { timeout: "700 millis", killGrace: "300 millis" }))
      )
      assert.strictEqual(error.reason._tag, "TimedOut")
      if (error.reason._tag === "TimedOut") assert.strictEqual(error.reason.timeoutMillis, 700)
      const pids = yield* waitForPids(pidFile, 2)
      for (const pid of pids) assert.isTrue(isGone(pid), `pid ${pid} still running`)
    }))

  it.live("interrupting run kills a SIGTERM-trapping child and its grandchild within grace + 1 s", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const pidFile = path.join(folder, "pids")
      const graceMs = 500
      const fiber = yield* Effect.forkChild(run(node(stubbornFamily(pidFile), { killGrace: `${graceMs} millis` })))
      const [child, grandchild] = yield* waitForPids(pidFile, 2)
      assert.isFalse(isGone(child!), "child running before the interrupt")
      assert.isFalse(isGone(grandchild!), "grandchild running before the interrupt")
      const started = Date.now()
      yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(fiber)))
      // Poll (not just check once) so the bound is what is asserted, not how fast interruption returns.
      while ((!isGone(child!) || !isGone(grandchild!)) && Date.now() - started < graceMs + 1000) {
        yield* Effect.sleep("20 millis")
      }
      assert.isTrue(isGone(child!), `child ${child} survived`)
      assert.isTrue(isGone(grandchild!), `grandchild ${grandchild} survived`)
      assert.isBelow(Date.now() - started, graceMs + 1000)
    }))

  it.live("whatever the child leaves running in its group is terminated when it exits", () =>
    Effect.gen(function*() {
      const result = yield* run({
        command: "sh",
        args: ["-c", "sleep 1000 > /dev/null 2>&1 & echo $!"],
        timeout: "10 seconds"
      })
      const pid = Number(result.stdout.trim())
      assert.isTrue(pid > 0)
      assert.isTrue(isGone(pid), `background pid ${pid} survived`)
    }))

  it.live("a process that escapes the group (setsid) and keeps the pipes open does not hang run", () =>
    Effect.gen(function*() {
      const started = Date.now()
      const result = yield* run({ command: "sh", args: ["-c", "setsid sleep 30 & echo $!"], timeout: "20 seconds" })
      const escaped = Number(result.stdout.trim())
      yield* Effect.addFinalizer(() => Effect.sync(() => process.kill(escaped, "SIGKILL")))
      assert.isTrue(escaped > 0)
      assert.strictEqual(result.exitCode, 0)
      assert.isBelow(Date.now() - started, 10_000)
    }).pipe(Effect.scoped))

  it.live("output over maxOutputBytes fails with SubprocessError OutputTooLarge", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        run(
          node("setInterval(() => process.stdout.write('y'.repeat(65536)), 1)", {
            maxOutputBytes: 100_000,
            timeout: "20 seconds"
          })
        )
      )
      assert.strictEqual(error.reason._tag, "OutputTooLarge")
      if (error.reason._tag === "OutputTooLarge") {
        assert.strictEqual(error.reason.stream, "stdout")
        assert.strictEqual(error.reason.maxBytes, 100_000)
      }
      const onStderr = yield* Effect.flip(run(node("process.stderr.write('z'.repeat(5000))", { maxOutputBytes: 1000 })))
      assert.strictEqual(onStderr.reason._tag, "OutputTooLarge")
      if (onStderr.reason._tag === "OutputTooLarge") assert.strictEqual(onStderr.reason.stream, "stderr")
    }))

  it.live("logs argv at debug level through redactArgv", () =>
    Effect.gen(function*() {
      const messages = yield* Ref.make<ReadonlyArray<string>>([])
      const logger = Logger.make(({ message }) => {
        Effect.runSync(Ref.update(messages, (all) => [...all, String(message)]))
      })
      yield* run({
        command: "true",
        args: ["--api-key", "sk-SECRET-1", "--token=sk-SECRET-2", "--mcp-config", "/tmp/x/secret", "-p", "hello"],
        secretFlags: ["--api-key", "--token"]
      }).pipe(Effect.provide(Logger.layer([logger])), Effect.provideService(References.MinimumLogLevel, "Debug"))
      const logged = (yield* Ref.get(messages)).join("\n")
      assert.include(logged, "--mcp-config")
      assert.include(logged, "/tmp/x/secret")
      assert.include(logged, "<redacted>")
      assert.notInclude(logged, "SECRET")
    }))
})

describe("NodeSubprocess.stream", () => {
  it.live("emits stdout lines in order, then checks the exit code", () =>
    Effect.gen(function*() {
      const lines = yield* Stream.runCollect(
        stream(node("for (let i = 0; i < 5000; i++) console.log(JSON.stringify({ i }))"))
      )
      assert.strictEqual(lines.length, 5000)
      assert.deepStrictEqual(JSON.parse(lines[4999]!), { i: 4999 })
      const seen: Array<string> = []
      const error = yield* Effect.flip(
        Stream.runForEach(
          stream(node("console.log('a'); console.log('b'); console.error('went wrong'); process.exit(2)")),
          (line) => Effect.sync(() => seen.push(line))
        )
      )
      assert.deepStrictEqual(seen, ["a", "b"])
      assert.strictEqual(error.reason._tag, "Exited")
      if (error.reason._tag === "Exited") assert.include(error.reason.stderrTail, "went wrong")
    }))

  it.live("stopping early terminates a SIGTERM-trapping child and its grandchild", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const pidFile = path.join(folder, "pids")
      const script = stubbornFamily(pidFile, "setInterval(() => console.log('tick'), 10)")
      const first = yield* Stream.runCollect(Stream.take(stream(node(script, { killGrace: "300 millis" })), 3))
      assert.deepStrictEqual(first, ["tick", "tick", "tick"])
      const pids = yield* waitForPids(pidFile, 2)
      for (const pid of pids) assert.isTrue(isGone(pid), `pid ${pid} survived`)
    }))

  it.live("a missing binary and a timeout fail the stream with their typed errors", () =>
    Effect.gen(function*() {
      const notFound = yield* Effect.flip(Stream.runDrain(stream({ command: "no-such-binary-ecb-3", args: [] })))
      assert.strictEqual(notFound.reason._tag, "NotFound")
      const timedOut = yield* Effect.flip(
        Stream.runDrain(stream(node("console.log('hi'); setInterval(() => {}, 1000)", { timeout: "300 millis" })))
      )
      assert.strictEqual(timedOut.reason._tag, "TimedOut")
    }))
})

describe("redactArgv", () => {
  it("replaces the values of secret flags, in both spellings, and shortens long values", () => {
    const prompt = "p".repeat(1000)
    const out = Subprocess.redactArgv(
      ["-p", prompt, "--token", "abc", "--key=def", "--model", "opus", "--token"],
      ["--token", "--key"]
    )
    assert.strictEqual(out[0], "-p")
    assert.isBelow(out[1]!.length, 100)
    assert.include(out[1]!, "1000 chars")
    assert.deepStrictEqual(out.slice(2), ["--token", "<redacted>", "--key=<redacted>", "--model", "opus", "--token"])
  })
})

describe("NodeSubprocess edge cases", () => {
  it.live("arguments spawn rejects outright (a NUL byte) are a typed spawn error, for run and stream", () =>
    Effect.gen(function*() {
      const options = { command: "echo", args: ["a\u0000b"] }
      const error = yield* Effect.flip(run(options))
      assert.strictEqual(error.reason._tag, "SpawnFailed")
      assert.match(error.message, /^Cannot run echo: /)
      const streamed = yield* Effect.flip(Stream.runDrain(stream(options)))
      assert.strictEqual(streamed.reason._tag, "SpawnFailed")
    }))

  it.live("a streamed stdout over maxOutputBytes fails the stream after the lines within the bound", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const error = yield* Effect.flip(
        Stream.runForEach(
          stream(
            node(
              "process.stdout.write('first\\n', () => setTimeout(() => process.stdout.write('x'.repeat(5000)), 50))",
              {
                maxOutputBytes: 1000,
                timeout: "20 seconds"
              }
            )
          ),
          (line) => Effect.sync(() => seen.push(line))
        )
      )
      assert.strictEqual(error.reason._tag, "OutputTooLarge")
      if (error.reason._tag === "OutputTooLarge") {
        assert.strictEqual(error.reason.stream, "stdout")
        assert.strictEqual(error.reason.maxBytes, 1000)
      }
      // Nothing past the bound is ever emitted (the first line may or may not have been read first).
      assert.isTrue(seen.every((line) => line === "first"), seen.join(","))
    }))
})

describe("NodeSubprocess stream with an input stream", () => {
  it.live("feeds stdin as input arrives, answer by answer, and closes it when the input ends", () =>
    Effect.gen(function*() {
      const input = yield* Queue.unbounded<string, Cause.Done>()
      const lines = yield* Queue.unbounded<string>()
      const script = "require('readline').createInterface({ input: process.stdin })" +
        ".on('line', (l) => console.log('got ' + l)).on('close', () => console.log('stdin closed'))"
      const fiber = yield* stream(node(script, { input: Stream.fromQueue(input) })).pipe(
        Stream.runForEach((line) => Queue.offer(lines, line)),
        Effect.forkChild
      )
      // The second line is written only after the first answer came back: a live conversation.
      yield* Queue.offer(input, "one\n")
      assert.strictEqual(yield* Queue.take(lines), "got one")
      yield* Queue.offer(input, "two\n")
      assert.strictEqual(yield* Queue.take(lines), "got two")
      yield* Queue.end(input)
      assert.strictEqual(yield* Queue.take(lines), "stdin closed")
      assert.isTrue(Exit.isSuccess(yield* Fiber.await(fiber)))
    }))
})
