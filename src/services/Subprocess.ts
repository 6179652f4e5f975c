/**
 * Running child processes with the guarantees the `claude` CLI provider relies on: typed
 * failures, bounded output, wall-clock timeouts, and no process left behind — the child runs in
 * its own process group, which gets SIGTERM and then SIGKILL when the caller stops waiting.
 *
 * @summary Child processes with typed failures, bounded output, timeouts and no process left behind.
 * @group Processes & files
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/**
 * What to run and how.
 *
 * @category config
 * @since 1.0.0
 */
export interface RunOptions {
  /** The program: a name looked up on `PATH`, or a path. Never run through a shell. */
  readonly command: string
  /** Arguments, passed as-is. Never put secrets here: pass them in a `SecretFile` instead. */
  readonly args: ReadonlyArray<string>
  /**
   * Changes to the inherited environment: a string adds or overrides a variable, `undefined`
   * removes an inherited one. The rest of the parent's environment is inherited.
   */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Working directory; defaults to the parent's. */
  readonly cwd?: string
  /** Written to the child's stdin, which is then closed. Without it stdin is `/dev/null`. */
  readonly stdin?: string
  /**
   * For `stream` only, instead of `stdin`: written to the child's stdin as it arrives (each
   * string waits for the previous one to be flushed); stdin is closed when this stream ends. For
   * a long-lived process fed one request at a time, such as a CLI reading JSON lines.
   */
  readonly input?: Stream.Stream<string>
  /**
   * Wall-clock limit for the whole run (a real process does not follow a `TestClock`). On expiry
   * the process group is terminated and `SubprocessError` (`TimedOut`) is raised. No limit by default.
   */
  readonly timeout?: Duration.Input
  /** Time between SIGTERM and SIGKILL when the process group is terminated. Defaults to 2 seconds. */
  readonly killGrace?: Duration.Input
  /**
   * Bound on the bytes of stdout and (separately) stderr that are kept. Exceeding it terminates
   * the process group and raises `SubprocessError` (`OutputTooLarge`). `run` defaults to 64 MiB;
   * `stream` does not buffer stdout and bounds it only when this is set.
   */
  readonly maxOutputBytes?: number
  /** Flags whose value is replaced by `<redacted>` in the debug log of argv (see `redactArgv`). */
  readonly secretFlags?: ReadonlyArray<string>
  /** Return non-zero exit codes in the result instead of failing with `SubprocessError` (`Exited`). */
  readonly allowNonZeroExit?: boolean
}

/**
 * The outcome of a finished process. A death by signal N is reported as exit code 128 + N.
 *
 * @category models
 * @since 1.0.0
 */
export interface RunResult {
  /** 0 on success; only non-zero with `allowNonZeroExit`. */
  readonly exitCode: number
  /** Everything the process wrote to stdout, decoded as UTF-8. */
  readonly stdout: string
  /** Everything the process wrote to stderr, decoded as UTF-8. */
  readonly stderr: string
}

/**
 * The program does not exist (not on `PATH`, or no file at that path). Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>("effect-chat-bridge/SubprocessError/NotFound")("NotFound", {
  /** A human-readable summary. */
  message: Schema.String
}) {
  /** Never retryable: the program stays missing. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The program exists but could not be started (not executable, bad working directory, bad
 * arguments, too many open files). Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class SpawnFailed extends Schema.TaggedError<SpawnFailed>("effect-chat-bridge/SubprocessError/SpawnFailed")(
  "SpawnFailed",
  {
    /** The operating system's reason. */
    message: Schema.String
  }
) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The process exited with a non-zero code (or was killed by a signal it did not get from us).
 * Not retryable: what the program said is in the tails.
 *
 * @since 2.0.0
 * @category errors
 */
export class Exited extends Schema.TaggedError<Exited>("effect-chat-bridge/SubprocessError/Exited")("Exited", {
  /** Its exit code (128 + N for a death by signal N). */
  exitCode: Schema.Number,
  /** The signal that ended the process, if one did. */
  signal: Schema.optional(Schema.String),
  /** The last few KiB of stdout. */
  stdoutTail: Schema.String,
  /** The last few KiB of stderr. */
  stderrTail: Schema.String,
  /** A human-readable summary. */
  message: Schema.String
}) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The process did not finish within `timeout`; it has been terminated. Retryable: a slow run may
 * finish the next time.
 *
 * @since 2.0.0
 * @category errors
 */
export class TimedOut extends Schema.TaggedError<TimedOut>("effect-chat-bridge/SubprocessError/TimedOut")("TimedOut", {
  /** The `timeout` that expired, in milliseconds. */
  timeoutMillis: Schema.Number,
  /** The last few KiB of stderr. */
  stderrTail: Schema.String,
  /** A human-readable summary. */
  message: Schema.String
}) {
  /** Always retryable. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The process wrote more than `maxOutputBytes` to one stream; it has been terminated. Not
 * retryable: the same run writes as much again.
 *
 * @since 2.0.0
 * @category errors
 */
export class OutputTooLarge extends Schema.TaggedError<OutputTooLarge>(
  "effect-chat-bridge/SubprocessError/OutputTooLarge"
)("OutputTooLarge", {
  /** The stream that went over the limit. */
  stream: Schema.Literals(["stdout", "stderr"]),
  /** The `maxOutputBytes` limit. */
  maxBytes: Schema.Number,
  /** A human-readable summary. */
  message: Schema.String
}) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Why a process failed.
 *
 * @since 2.0.0
 * @category schemas
 */
export const SubprocessErrorReason: Schema.Union<[
  typeof NotFound,
  typeof SpawnFailed,
  typeof Exited,
  typeof TimedOut,
  typeof OutputTooLarge
]> = Schema.Union([NotFound, SpawnFailed, Exited, TimedOut, OutputTooLarge])

/**
 * The type of {@link SubprocessErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type SubprocessErrorReason = typeof SubprocessErrorReason.Type

/**
 * Every way `run` and `stream` can fail: the program is missing (`NotFound`), cannot start
 * (`SpawnFailed`), exits non-zero (`Exited`), runs past its `timeout` (`TimedOut`) or writes too
 * much (`OutputTooLarge`). Select a reason with `Effect.catchReason("SubprocessError", "Exited", …)`.
 *
 * @since 2.0.0
 * @category errors
 */
export class SubprocessError extends Schema.TaggedError<SubprocessError>()("SubprocessError", {
  /** The program that failed. */
  command: Schema.String,
  /** What happened. */
  reason: SubprocessErrorReason
}) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether running it again may succeed; only `TimedOut` is retryable. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * The Subprocess service.
 *
 * @category models
 * @since 1.0.0
 */
export interface SubprocessService {
  /**
   * Runs a process to completion and returns its exit code and output. Fails with
   * `SubprocessError` (`Exited`) on a non-zero exit unless `allowNonZeroExit` is set. On interruption,
   * timeout or oversized output the process group gets SIGTERM, then SIGKILL after `killGrace`;
   * whatever is left of the group when the process exits is terminated the same way. The
   * returned effect completes only once the group is gone, and within a bounded time.
   */
  readonly run: (options: RunOptions) => Effect.Effect<RunResult, SubprocessError>
  /**
   * Runs a process and emits its stdout line by line (without line terminators) as it arrives,
   * with the same termination guarantees as `run`; the process starts when the stream is run and
   * is terminated when the stream ends or is interrupted. After the last line the exit code is
   * checked: a non-zero exit fails the stream with `SubprocessError` (`Exited`, carrying the stderr tail)
   * unless `allowNonZeroExit` is set.
   */
  readonly stream: (options: RunOptions) => Stream.Stream<string, SubprocessError>
}

/**
 * Runs child processes.
 *
 * @category services
 * @since 1.0.0
 */
export class Subprocess extends Context.Service<Subprocess, SubprocessService>()("effect-chat-bridge/Subprocess") {}

/**
 * Runs a process with the `Subprocess` service in context. See {@link SubprocessService.run}.
 *
 * @category accessors
 * @since 1.0.0
 */
export const run: (options: RunOptions) => Effect.Effect<RunResult, SubprocessError, Subprocess> = Effect.fn(
  "Subprocess.run"
)(function*(options: RunOptions) {
  const service = yield* Subprocess
  return yield* service.run(options)
})

/**
 * Streams a process's stdout lines with the `Subprocess` service in context. See {@link SubprocessService.stream}.
 *
 * @category accessors
 * @since 1.0.0
 */
export const stream = (options: RunOptions): Stream.Stream<string, SubprocessError, Subprocess> =>
  Stream.unwrap(Effect.map(Subprocess, (service) => service.stream(options)))

/**
 * The placeholder that replaces secret values in logged argv.
 *
 * @category models
 * @since 1.0.0
 */
export const REDACTED = "<redacted>"

/**
 * The argv as it may be logged: the value of every flag in `secretFlags` (`--flag value` or
 * `--flag=value`) becomes `<redacted>`, and any other argument longer than `maxLength` (default
 * 200; prompts, inline JSON) is shortened to its start plus its length. The library never puts a
 * secret in argv; this is the second line of defence for what reaches logs.
 *
 * @category utils
 * @since 1.0.0
 */
export const redactArgv = (
  args: ReadonlyArray<string>,
  secretFlags: ReadonlyArray<string> = [],
  options: { readonly maxLength?: number } = {}
): ReadonlyArray<string> => {
  const maxLength = options.maxLength ?? 200
  const secret = new Set(secretFlags)
  const out: Array<string> = []
  let redactNext = false
  for (const arg of args) {
    if (redactNext) {
      out.push(REDACTED)
      redactNext = false
      continue
    }
    if (secret.has(arg)) {
      out.push(arg)
      redactNext = true
      continue
    }
    const eq = arg.indexOf("=")
    if (arg.startsWith("-") && eq > 0 && secret.has(arg.slice(0, eq))) {
      out.push(`${arg.slice(0, eq)}=${REDACTED}`)
      continue
    }
    out.push(arg.length > maxLength ? `${arg.slice(0, Math.min(60, maxLength))}…<${arg.length} chars>` : arg)
  }
  return out
}

const TAIL_CHARS = 4096

/**
 * The last `TAIL_CHARS` characters of `text`, the part worth showing in an error.
 *
 * @category utils
 * @since 1.0.0
 */
export const tail = (text: string, max: number = TAIL_CHARS): string =>
  text.length <= max ? text : text.slice(text.length - max)

/**
 * Turns a finished process into the result, or into `SubprocessError` (`Exited`) when it exited non-zero
 * and `allowNonZeroExit` is not set. Shared by every layer so they agree on what counts as failure.
 *
 * @category utils
 * @since 1.0.0
 */
export const checkExit = (
  options: Pick<RunOptions, "command" | "allowNonZeroExit">,
  result: RunResult,
  signal?: string
): Effect.Effect<RunResult, SubprocessError> => {
  if (result.exitCode === 0 || options.allowNonZeroExit === true) return Effect.succeed(result)
  const stderrTail = tail(result.stderr)
  const lastWords = tail(stderrTail.trim(), 500)
  return Effect.fail(
    new SubprocessError({
      command: options.command,
      reason: new Exited({
        exitCode: result.exitCode,
        ...(signal === undefined ? {} : { signal }),
        stdoutTail: tail(result.stdout),
        stderrTail,
        message: `${options.command} exited with code ${result.exitCode}${signal === undefined ? "" : ` (${signal})`}${
          lastWords === "" ? "" : `: ${lastWords}`
        }`
      })
    })
  )
}
