/**
 * The `Subprocess` implementation on `node:child_process`.
 *
 * Why not Effect 4's `effect/process/ChildProcess` (with `NodeChildProcessSpawner`): without
 * `forceKillAfter` it sends SIGTERM to the process group and then waits without limit, so a child
 * that ignores SIGTERM hangs the scope; on Linux it counts a zombie group member as alive; and it
 * needs `FileSystem`/`Path` in context. Here the child is spawned with `detached: true` (its own
 * process group), and termination is SIGTERM to the group, then SIGKILL after the grace period,
 * then a bounded wait — scope close always finishes. Timers are Node timers, not the Effect
 * `Clock`: the child lives in real time, and a `TestClock` must not stall a kill.
 *
 * @summary The `Subprocess` implementation on `node:child_process`, killing the whole process group.
 * @group Processes & files
 * @since 0.1.0
 * @module
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { type ChildProcess, spawn } from "node:child_process"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import type { Writable } from "node:stream"
import { shuttingDown, trackGroup } from "../internal/agentCli/exitCleanup.ts"
import {
  checkExit,
  NotFound,
  OutputTooLarge,
  redactArgv,
  type RunOptions,
  type RunResult,
  SpawnFailed,
  Subprocess,
  SubprocessError,
  type SubprocessService,
  tail,
  TimedOut
} from "../services/Subprocess.ts"

const DEFAULT_KILL_GRACE = Duration.seconds(2)
const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024
/** How long to wait after SIGKILL for the group to disappear, and then for the pipes to close. */
const AFTER_KILL_WAIT_MS = 1000
const POLL_MS = 20
/** The grace a CLI gets once the process received a termination signal: it goes with us anyway. */
const SHUTDOWN_GRACE_MS = 200

// ---------------------------------------------------------------------------------------------
// Process groups
// ---------------------------------------------------------------------------------------------

/**
 * Whether a process in group `pgid` is still running. `kill(-pgid, 0)` also succeeds for zombies,
 * and a container whose PID 1 never reaps (this is common) keeps orphaned zombies forever; on
 * Linux those are told apart through /proc so they do not count as survivors.
 */
const groupAlive = (pgid: number): boolean => {
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
  return process.platform === "linux" ? linuxGroupHasLiveMember(pgid) : true
}

const linuxGroupHasLiveMember = (pgid: number): boolean => {
  let entries: Array<string>
  try {
    entries = nodeFs.readdirSync("/proc")
  } catch {
    return true
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = nodeFs.readFileSync(`/proc/${entry}/stat`, "utf8")
    } catch {
      continue // exited while we looked
    }
    // Fields after the parenthesised command name: state ppid pgrp ...
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true
  }
  return false
}

const signalGroup = (pgid: number, signal: NodeJS.Signals): void => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: already gone. EPERM: nothing more we can do; the bounded wait reports it.
  }
}

/**
 * Polls `done` every few ms for at most `ms` (read on every tick: a signal can shorten it while
 * polling), then calls `k` with whether it became true.
 */
const pollUntil = (done: () => boolean, ms: number | (() => number), k: (ok: boolean) => void): void => {
  const started = Date.now()
  const tick = () => {
    if (done()) return k(true)
    if (Date.now() - started >= (typeof ms === "number" ? ms : ms())) return k(false)
    setTimeout(tick, POLL_MS)
  }
  tick()
}

/**
 * SIGTERM to the group, SIGKILL after `graceMs` if anything is left, then up to a second more.
 * Calls `k(true)` when the group is gone, `k(false)` if something survived even SIGKILL.
 */
const terminateGroup = (pgid: number, graceMs: number, k: (gone: boolean) => void): void => {
  const gone = () => !groupAlive(pgid)
  if (gone()) return k(true)
  signalGroup(pgid, "SIGTERM")
  pollUntil(gone, () => shuttingDown() ? Math.min(graceMs, SHUTDOWN_GRACE_MS) : graceMs, (ok) => {
    if (ok) return k(true)
    signalGroup(pgid, "SIGKILL")
    pollUntil(gone, AFTER_KILL_WAIT_MS, k)
  })
}

// ---------------------------------------------------------------------------------------------
// Spawning
// ---------------------------------------------------------------------------------------------

const childEnv = (changes: RunOptions["env"]): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  if (changes === undefined) return env
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) delete env[key]
    else env[key] = value
  }
  return env
}

const exitCodeOf = (code: number | null, signal: NodeJS.Signals | null): number => {
  if (code !== null) return code
  const signo = signal === null ? undefined : os.constants.signals[signal]
  return signo === undefined ? 1 : 128 + signo
}

const destroyStdio = (child: ChildProcess): void => {
  child.stdout?.destroy()
  child.stderr?.destroy()
  child.stdin?.destroy()
}

interface Closed {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

interface Handle {
  /** Undefined when `spawn` threw (bad arguments); `outcome` then already holds the error. */
  readonly child: ChildProcess | undefined
  /** Completes when stdio has closed, or fails first on spawn error, timeout or oversized output. */
  readonly outcome: Deferred.Deferred<Closed, SubprocessError>
  readonly stdout: () => string
  readonly stderr: () => string
  readonly graceMs: number
  readonly dispose: () => void
  /** Stops the exit-time cleanup from killing the group (call once the group is gone). */
  readonly untrack: () => void
}

type OutputMode = "collect" | "stream"

const spawnError = (options: RunOptions, error: unknown): SubprocessError => {
  const e = error as NodeJS.ErrnoException
  if (e.code === "ENOENT") {
    if (options.cwd !== undefined && !nodeFs.existsSync(options.cwd)) {
      return new SubprocessError({
        command: options.command,
        reason: new SpawnFailed({
          message: `Cannot run ${options.command}: working directory ${options.cwd} does not exist`
        })
      })
    }
    return new SubprocessError({
      command: options.command,
      reason: new NotFound({ message: `Command not found: ${options.command} (not on PATH or no such file)` })
    })
  }
  return new SubprocessError({
    command: options.command,
    reason: new SpawnFailed({ message: `Cannot run ${options.command}: ${e.message ?? String(error)}` })
  })
}

/** Collects a stream's bytes up to a bound; once over it, keeps only the tail (for error messages). */
const collector = (max: number, onOverflow: () => void) => {
  const chunks: Array<Buffer> = []
  let bytes = 0
  let overflowed = false
  return {
    push: (chunk: Buffer) => {
      bytes += chunk.length
      chunks.push(chunk)
      if (bytes > max) {
        // Keep memory bounded whatever happens next: only the tail is ever read after this.
        while (chunks.length > 1 && bytes - chunks[0]!.length >= Math.min(max, 64 * 1024)) {
          bytes -= chunks.shift()!.length
        }
        if (!overflowed) {
          overflowed = true
          onOverflow()
        }
      }
    },
    text: () => Buffer.concat(chunks).toString("utf8")
  }
}

/** Spawns the child with every listener attached before Node can emit anything. */
const acquire = Effect.fnUntraced(function*(options: RunOptions, mode: OutputMode): Effect.fn.Return<Handle> {
  const outcome = yield* Deferred.make<Closed, SubprocessError>()
  const fail = (error: SubprocessError) => Deferred.doneUnsafe(outcome, Exit.fail(error))
  const graceMs = Duration.toMillis(options.killGrace ?? DEFAULT_KILL_GRACE)
  const maxBytes = options.maxOutputBytes ?? (mode === "collect" ? DEFAULT_MAX_OUTPUT_BYTES : Infinity)
  const tooLarge = (stream: "stdout" | "stderr") => () =>
    fail(
      new SubprocessError({
        command: options.command,
        reason: new OutputTooLarge({
          stream,
          maxBytes,
          message: `${options.command} wrote more than ${maxBytes} bytes to ${stream}`
        })
      })
    )
  const stdoutCollector = collector(maxBytes, tooLarge("stdout"))
  // In stream mode stderr is only kept for error messages: bound it to a tail.
  const stderrCollector = mode === "collect"
    ? collector(maxBytes, tooLarge("stderr"))
    : collector(64 * 1024, () => {})
  let timer: ReturnType<typeof setTimeout> | undefined
  const dispose = () => {
    if (timer !== undefined) clearTimeout(timer)
  }

  let child: ChildProcess
  try {
    child = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      env: childEnv(options.env),
      detached: true,
      stdio: [options.stdin === undefined && options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      windowsHide: true
    })
  } catch (error) {
    fail(spawnError(options, error))
    return { child: undefined, outcome, stdout: () => "", stderr: () => "", graceMs, dispose, untrack: () => {} }
  }
  // Killed and removed when this process goes without running finalizers (Ctrl-C, SIGTERM, exit).
  const untrack = child.pid === undefined ? () => {} : trackGroup(child.pid)

  child.on("error", (error) => {
    // After a successful spawn, errors come from kill() and are covered by the group logic.
    if (child.pid === undefined) fail(spawnError(options, error))
  })
  let closed = false
  child.on("exit", () => {
    // Whatever the child left running in its group (and holding our pipes) goes with it. A
    // process that left the group (setsid) may still hold the pipes: stop waiting for it.
    const pid = child.pid
    if (pid === undefined) return
    terminateGroup(pid, graceMs, (gone) => {
      if (gone) untrack()
      setTimeout(() => {
        if (!closed) destroyStdio(child)
      }, AFTER_KILL_WAIT_MS)
    })
  })
  child.on("close", (code, signal) => {
    closed = true
    dispose()
    Deferred.doneUnsafe(outcome, Exit.succeed({ code, signal }))
  })
  if (mode === "collect") child.stdout!.on("data", stdoutCollector.push)
  child.stderr!.on("data", stderrCollector.push)
  if (options.stdin !== undefined && child.stdin) {
    child.stdin.on("error", () => {}) // EPIPE when the child does not read its input
    child.stdin.end(options.stdin)
  }
  if (options.timeout !== undefined && child.pid !== undefined) {
    const timeoutMillis = Duration.toMillis(options.timeout)
    timer = setTimeout(() =>
      fail(
        new SubprocessError({
          command: options.command,
          reason: new TimedOut({
            timeoutMillis,
            stderrTail: tail(stderrCollector.text()),
            message: `${options.command} did not finish within ${Duration.format(Duration.millis(timeoutMillis))}`
          })
        })
      ), timeoutMillis)
  }
  return { child, outcome, stdout: stdoutCollector.text, stderr: stderrCollector.text, graceMs, dispose, untrack }
})

/**
 * Terminates the group and waits — boundedly — for the group to be gone and the pipes to close.
 * Never fails and never hangs: at most grace + 2 seconds.
 */
const release = (options: RunOptions) => (handle: Handle): Effect.Effect<void> => {
  handle.dispose()
  const child = handle.child
  const pid = child?.pid
  if (child === undefined || pid === undefined) return Effect.void
  return Effect.callback<boolean>((resume) => {
    terminateGroup(pid, handle.graceMs, (gone) => {
      if (gone) handle.untrack()
      const closed = () => child.exitCode !== null || child.signalCode !== null
      pollUntil(
        () => closed() && (child.stdout?.closed ?? true) && (child.stderr?.closed ?? true),
        AFTER_KILL_WAIT_MS,
        (ok) => {
          // A process outside the group (it called setsid) may still hold the pipes.
          if (!ok) destroyStdio(child)
          resume(Effect.succeed(gone && ok))
        }
      )
    })
  }).pipe(
    Effect.flatMap((clean) =>
      clean
        ? Effect.void
        : Effect.logWarning(`Subprocess: process group ${pid} of ${options.command} did not fully exit after SIGKILL`)
    )
  )
}

const logStart = (options: RunOptions) =>
  Effect.logDebug(`Subprocess: ${options.command} ${JSON.stringify(redactArgv(options.args, options.secretFlags))}`)

const resultOf = (handle: Handle, closed: Closed): RunResult => ({
  exitCode: exitCodeOf(closed.code, closed.signal),
  stdout: handle.stdout(),
  stderr: handle.stderr()
})

const run: (options: RunOptions) => Effect.Effect<RunResult, SubprocessError> = Effect.fnUntraced(
  function*(options: RunOptions) {
    yield* logStart(options)
    const handle = yield* Effect.acquireRelease(acquire(options, "collect"), release(options))
    const closed = yield* Deferred.await(handle.outcome)
    return yield* checkExit(options, resultOf(handle, closed), closed.signal ?? undefined)
  },
  Effect.scoped,
  Effect.withSpan("NodeSubprocess.run", (options: RunOptions) => ({ attributes: { command: options.command } }))
)

/**
 * Writes `input` to the child's stdin in the stream's scope, one string after the previous one was
 * flushed, and closes stdin when `input` ends. A child that stopped reading (EPIPE) is left to the
 * exit check: the write just completes.
 */
const feed = (stdin: Writable, input: Stream.Stream<string>) => {
  stdin.on("error", () => {})
  return input.pipe(
    Stream.runForEach((text) =>
      Effect.callback<void>((resume) => {
        if (!stdin.writable) return resume(Effect.void)
        stdin.write(text, () => resume(Effect.void))
      })
    ),
    Effect.ensuring(Effect.sync(() => stdin.end())),
    Effect.forkScoped
  )
}

const stream = (options: RunOptions): Stream.Stream<string, SubprocessError> =>
  Stream.unwrap(
    Effect.gen(function*() {
      yield* logStart(options)
      const handle = yield* Effect.acquireRelease(acquire(options, "stream"), release(options))
      const child = handle.child
      if (child?.stdout == null || child.pid === undefined) {
        // Spawn failed: the outcome carries the reason.
        return yield* Effect.flatMap(Deferred.await(handle.outcome), () =>
          Effect.die(new Error("Subprocess: spawn failed without an error")))
      }
      const childStdout = child.stdout
      if (options.input !== undefined && child.stdin !== null) {
        yield* feed(child.stdin, options.input)
      }
      const maxBytes = options.maxOutputBytes ?? Infinity
      let bytes = 0
      const stdout = NodeStream.fromReadable<Uint8Array, SubprocessError>({
        evaluate: () =>
          childStdout,
        onError: (error) =>
          new SubprocessError({
            command: options.command,
            reason: new SpawnFailed({ message: `Reading stdout failed: ${String(error)}` })
          })
      }).pipe(
        Stream.mapArrayEffect((chunk) => {
          for (const bytesChunk of chunk) bytes += bytesChunk.length
          return bytes > maxBytes
            ? Effect.fail(
              new SubprocessError({
                command: options.command,
                reason: new OutputTooLarge({
                  stream: "stdout",
                  maxBytes,
                  message: `${options.command} wrote more than ${maxBytes} bytes to stdout`
                })
              })
            )
            : Effect.succeed(chunk)
        }),
        Stream.decodeText(),
        Stream.splitLines
      )
      // A timeout or spawn failure ends the stream early with its error; a clean close does not.
      const failure = Effect.flatMap(Deferred.await(handle.outcome), () => Effect.never)
      const exitCheck = Effect.flatMap(
        Deferred.await(handle.outcome),
        (closed) => checkExit(options, resultOf(handle, closed), closed.signal ?? undefined)
      )
      return stdout.pipe(Stream.concat(Stream.drain(Stream.fromEffect(exitCheck))), Stream.interruptWhen(failure))
    })
  ).pipe(Stream.withSpan("NodeSubprocess.stream", { attributes: { command: options.command } }))

/**
 * The service on `node:child_process`.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: SubprocessService = Subprocess.of({ run, stream })

/**
 * The `Subprocess` service on `node:child_process`.
 *
 * @category layers
 * @since 1.0.0
 */
export const layer: Layer.Layer<Subprocess> = Layer.succeed(Subprocess, make)
