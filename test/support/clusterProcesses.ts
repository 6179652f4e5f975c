/**
 * Runner processes for the multi-process cluster tests: each `test/support/clusterRunner.ts` runs
 * in its own process group with its own sandbox (HOME, CLAUDE_CONFIG_DIR, TMPDIR, working
 * directory), and the scope's end stops it (SIGTERM, then SIGKILL) together with any CLI it left.
 *
 * The CLI a runner's ClaudeLocal spawns has a process group of its own, so {@link Runner.kill}
 * kills both groups: the runner's and that of every `claude` whose working directory is the
 * runner's `CLAUDE_CWD`.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { createRequire } from "node:module"
import { resolve } from "node:path"
import { createInterface } from "node:readline"
import { pathToFileURL } from "node:url"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "./claudeCli.ts"
import { freePort } from "./postgres.ts"

/** A runner did not come up (its output is in `log`). */
export class RunnerStartError extends Data.TaggedError("RunnerStartError")<{
  readonly message: string
  readonly log: string
}> {}

/** Waiting for something a runner or the side-effects file shows took too long. */
export class WaitTimeout extends Data.TaggedError("WaitTimeout")<{ readonly message: string }> {}

/** The storage the runners share: a PostgreSQL URL or one SQLite file. */
export type SharedStorage =
  | { readonly _tag: "Postgres"; readonly url: string }
  | { readonly _tag: "Sqlite"; readonly file: string }

export interface RunnerOptions {
  /** A name for messages ("runner-1"). */
  readonly name: string
  readonly storage: SharedStorage
  /** The fake Messages API's URL. */
  readonly apiUrl: string
  /** The side-effects file every runner appends its tool calls to. */
  readonly sideEffects: string
  /** `MAX_IDLE` of the runner (an idle conversation's entity stops after it). */
  readonly maxIdle?: string
  /** More environment variables (`SHARDS_PER_GROUP`, …). */
  readonly env?: Record<string, string>
}

/** A running runner process. */
export interface Runner {
  readonly name: string
  readonly port: number
  readonly pid: number
  readonly box: Sandbox
  /** Its stdout lines so far. */
  readonly lines: () => ReadonlyArray<string>
  /** Its stdout and stderr so far (for failure messages). */
  readonly log: () => string
  /** Whether it printed `HOSTING <conversationId>`. */
  readonly hosted: (conversationId: string) => boolean
  /** When it last printed `HOSTING <conversationId>` (ms since the epoch), or undefined. */
  readonly lastHosted: (conversationId: string) => number | undefined
  /** Whether the runner process has exited. */
  readonly exited: () => boolean
  /** Pids of the live `claude` processes in its sandbox's working directory. */
  readonly clis: () => ReadonlyArray<number>
  /** SIGKILLs its process group and its CLIs' groups, and waits until they are gone. */
  readonly kill: Effect.Effect<void>
  /**
   * Sends `signal` to the runner process alone (as a process manager does) and waits until it has
   * exited, failing after `timeoutMs`; gives the milliseconds it took.
   */
  readonly stop: (signal: NodeJS.Signals, timeoutMs: number) => Effect.Effect<number, WaitTimeout>
}

const tsxLoader = pathToFileURL(createRequire(resolve("package.json")).resolve("tsx")).href
const runnerScript = resolve("test/support/clusterRunner.ts")

/** The process group of `pid` (from /proc), or undefined when it is gone. */
const processGroupOf = (pid: number): number | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2])
  } catch {
    return undefined
  }
}

const signalGroup = (pgid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(-pgid, signal)
  } catch {
    // The group is gone already.
  }
}

/** Whether `pid` is a live (not zombie) process. */
export const isAlive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")
  } catch {
    return false
  }
}

/** Pids of live processes whose working directory is `dir` or below it (also once it is deleted). */
export const processesUnder = (dir: string): Array<number> => {
  const pids: Array<number> = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`)
      if ((cwd === dir || cwd.startsWith(`${dir}/`) || cwd.startsWith(`${dir} `)) && isAlive(Number(entry))) {
        pids.push(Number(entry))
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids
}

/** Polls `check` every 100 ms until it gives a value; fails with `what` after `timeoutMs`. */
export const waitUntil = <A>(
  what: string,
  check: () => A | undefined,
  timeoutMs: number
): Effect.Effect<A, WaitTimeout> =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (true) {
      const value = check()
      if (value !== undefined) return value
      if (Date.now() > deadline) return yield* new WaitTimeout({ message: `timed out after ${timeoutMs} ms: ${what}` })
      yield* Effect.sleep("100 millis")
    }
  })

/** Waits for a (reaped) child process to exit. */
const exitOf = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

/** SIGKILLs the groups of the CLIs in `cwd` and waits until none is left (they are not our children). */
const killClis = (cwd: string) =>
  Effect.gen(function*() {
    for (const pid of claudeProcessesIn(cwd)) {
      const pgid = processGroupOf(pid)
      if (pgid !== undefined) signalGroup(pgid, "SIGKILL")
    }
    yield* Effect.ignore(
      waitUntil(`CLIs in ${cwd} to exit`, () => claudeProcessesIn(cwd).length === 0 || undefined, 10_000)
    )
  })

const storageEnv = (storage: SharedStorage): Record<string, string> =>
  storage._tag === "Postgres" ? { CLUSTER_DATABASE_URL: storage.url } : { CLUSTER_SQLITE_FILE: storage.file }

/** Our environment without anything that would point a CLI or the runner elsewhere. */
const baseEnv = (): Record<string, string> =>
  Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] =>
      entry[1] !== undefined &&
      !/^(ANTHROPIC_|CLAUDE|CLUSTER_|SHARDS_PER_GROUP|MAX_IDLE|VITEST|NODE_OPTIONS)/.test(entry[0])
    )
  )

const spawnOnce = (options: RunnerOptions, box: Sandbox) =>
  Effect.gen(function*() {
    const port = yield* Effect.orDie(freePort)
    const env = {
      ...baseEnv(),
      ...box.env,
      ...storageEnv(options.storage),
      RUNNER_PORT: String(port),
      CLAUDE_BINARY: claudeBinary,
      CLAUDE_CWD: box.cwd,
      SECRETS_DIR: box.secrets,
      SIDE_EFFECTS: options.sideEffects,
      TSX_TSCONFIG_PATH: resolve("tsconfig.json"),
      ...(options.maxIdle === undefined ? {} : { MAX_IDLE: options.maxIdle }),
      ...options.env
    }
    const lines: Array<string> = []
    const hostings = new Map<string, number>()
    let log = ""
    // The sandbox's root, not CLAUDE_CWD: claudeProcessesIn(box.cwd) must find only the CLI.
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, ["--import", tsxLoader, runnerScript], {
          cwd: box.dir,
          detached: true,
          env,
          stdio: ["ignore", "pipe", "pipe"]
        })
        createInterface({ input: child.stdout! }).on("line", (line) => {
          lines.push(line)
          if (line.startsWith("HOSTING ")) hostings.set(line.slice("HOSTING ".length), Date.now())
          log += `${line}\n`
        })
        child.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()))
        return child
      }),
      (child) =>
        Effect.gen(function*() {
          // SIGTERM first: the runner's finalizers stop its CLIs and release its shards.
          if (child.exitCode === null && child.signalCode === null) signalGroup(child.pid!, "SIGTERM")
          yield* exitOf(child).pipe(
            Effect.timeoutOrElse({
              // A runner drains its running turns (up to its drain timeout) before it exits.
              duration: "15 seconds",
              orElse: () => Effect.andThen(Effect.sync(() => signalGroup(child.pid!, "SIGKILL")), exitOf(child))
            })
          )
          signalGroup(child.pid!, "SIGKILL")
          yield* killClis(box.cwd)
        })
    )
    const exited = () => child.exitCode !== null || child.signalCode !== null
    yield* waitUntil(
      `${options.name} to print READY`,
      () => lines.includes(`READY ${port}`) || (exited() ? false : undefined),
      90_000
    ).pipe(
      Effect.mapError(() => new RunnerStartError({ message: `${options.name} was not ready within 90 s`, log })),
      Effect.flatMap((ready) =>
        ready ? Effect.void : Effect.fail(new RunnerStartError({ message: `${options.name} exited before READY`, log }))
      )
    )
    return {
      name: options.name,
      port,
      pid: child.pid!,
      box,
      lines: () => lines,
      log: () => log,
      hosted: (conversationId) => hostings.has(conversationId),
      lastHosted: (conversationId) => hostings.get(conversationId),
      exited,
      clis: () => claudeProcessesIn(box.cwd),
      kill: Effect.gen(function*() {
        const clis = claudeProcessesIn(box.cwd)
        signalGroup(child.pid!, "SIGKILL")
        for (const pid of clis) {
          const pgid = processGroupOf(pid)
          if (pgid !== undefined) signalGroup(pgid, "SIGKILL")
        }
        yield* exitOf(child)
        yield* killClis(box.cwd)
      }),
      stop: (signal, timeoutMs) =>
        Effect.gen(function*() {
          const started = Date.now()
          if (!exited()) process.kill(child.pid!, signal)
          yield* exitOf(child).pipe(
            Effect.timeoutOrElse({
              duration: timeoutMs,
              orElse: () =>
                Effect.fail(
                  new WaitTimeout({ message: `${options.name} did not exit within ${timeoutMs} ms of ${signal}` })
                )
            })
          )
          return Date.now() - started
        })
    } satisfies Runner
  })

/**
 * Starts a runner process in a new sandbox and waits for its `READY` line. Its port is a free one;
 * should another process take it first, the runner exits and is started again on another.
 */
export const startRunner = (options: RunnerOptions): Effect.Effect<Runner, RunnerStartError, Scope.Scope> =>
  Effect.flatMap(sandbox(options.apiUrl), (box) =>
    spawnOnce(options, box).pipe(
      Effect.retry({ times: 2, while: (e) => e.message.includes("exited") && /EADDRINUSE/.test(e.log) })
    ))

/** The JSON lines of the side-effects file (`{ tool, pid, input }`). */
export const sideEffects = (
  file: string
): Array<{ readonly tool: string; readonly pid: number; readonly input: Record<string, unknown> }> =>
  existsSync(file)
    ? readFileSync(file, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
    : []

/**
 * The runner that set `conversationId` up last: its current host (shards move between live runners
 * as runners join, so more than one may have hosted it).
 */
export const currentHost = (runners: ReadonlyArray<Runner>, conversationId: string): Runner | undefined =>
  runners
    .filter((r) => !r.exited() && r.lastHosted(conversationId) !== undefined)
    .sort((a, b) => b.lastHosted(conversationId)! - a.lastHosted(conversationId)!)[0]

/**
 * Starts a runner again in `box`, the sandbox of an earlier (killed) one: a restarted machine with
 * its old HOME, config dir and session files.
 */
export const restartRunner = (
  options: RunnerOptions,
  box: Sandbox
): Effect.Effect<Runner, RunnerStartError, Scope.Scope> =>
  spawnOnce(options, box).pipe(
    Effect.retry({ times: 2, while: (e) => e.message.includes("exited") && /EADDRINUSE/.test(e.log) })
  )
