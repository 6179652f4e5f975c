/**
 * A scripted `Subprocess` for tests of code that runs processes: no process is started, every
 * call is recorded, and each call gets the next scripted outcome. Non-zero exit codes are
 * treated exactly as the Node layer treats them (`SubprocessError` with reason `Exited` unless `allowNonZeroExit`).
 *
 * @summary A scripted `Subprocess` that starts nothing and records every call, for tests.
 * @group Testing
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import {
  checkExit,
  type RunOptions,
  type RunResult,
  SpawnFailed,
  Subprocess,
  SubprocessError
} from "../services/Subprocess.ts"

/**
 * What a scripted call produces: output (exit code defaults to 0), an error, or a function of the call.
 *
 * @category testing
 * @since 1.0.0
 */
export type Scripted =
  | { readonly exitCode?: number; readonly stdout?: string; readonly stderr?: string }
  | SubprocessError
  | ((options: RunOptions, index: number) => Effect.Effect<RunResult, SubprocessError>)

/**
 * Read access to the calls the test `Subprocess` received.
 *
 * @category testing
 * @since 1.0.0
 */
export class TestSubprocess extends Context.Service<TestSubprocess, {
  /** Every call so far (`run` and `stream`), oldest first. */
  readonly calls: Effect.Effect<ReadonlyArray<RunOptions>>
}>()("effect-chat-bridge/TestSubprocess") {}

const isError = (s: Scripted): s is SubprocessError => typeof s === "object" && "_tag" in s

const outcome = (script: Scripted, options: RunOptions, index: number): Effect.Effect<RunResult, SubprocessError> => {
  if (typeof script === "function") return script(options, index)
  if (isError(script)) return Effect.fail(script)
  return Effect.succeed({ exitCode: script.exitCode ?? 0, stdout: script.stdout ?? "", stderr: script.stderr ?? "" })
}

/**
 * Builds the service and its read side. `script` is either a list consumed one entry per call
 * (running out is a `SubprocessError` with reason `SpawnFailed` naming the call) or a function answering every call.
 *
 * @category testing
 * @since 1.0.0
 */
export const make: (
  script: ReadonlyArray<Scripted> | ((options: RunOptions, index: number) => Effect.Effect<RunResult, SubprocessError>)
) => Effect.Effect<Context.Context<Subprocess | TestSubprocess>> = Effect.fnUntraced(
  function*(
    script:
      | ReadonlyArray<Scripted>
      | ((options: RunOptions, index: number) => Effect.Effect<RunResult, SubprocessError>)
  ) {
    const calls = yield* Ref.make<ReadonlyArray<RunOptions>>([])
    const next = Effect.fnUntraced(function*(options: RunOptions) {
      const index = (yield* Ref.getAndUpdate(calls, (all) => [...all, options])).length
      const entry: Scripted | undefined = typeof script === "function" ? script : script[index]
      if (entry === undefined) {
        return yield* new SubprocessError({
          command: options.command,
          reason: new SpawnFailed({
            message: `TestSubprocess: no scripted result for call #${index + 1} (${options.command})`
          })
        })
      }
      return yield* outcome(entry, options, index)
    })
    const run = (options: RunOptions) => Effect.flatMap(next(options), (result) => checkExit(options, result))
    const stream = (options: RunOptions) =>
      Stream.unwrap(
        Effect.map(Effect.result(next(options)), (result) => {
          if (Result.isFailure(result)) return Stream.fail(result.failure)
          const lines = Stream.make(result.success.stdout).pipe(Stream.splitLines)
          return Stream.concat(lines, Stream.drain(Stream.fromEffect(checkExit(options, result.success))))
        })
      )
    return Context.make(Subprocess, Subprocess.of({ run, stream })).pipe(
      Context.add(TestSubprocess, { calls: Ref.get(calls) })
    )
  }
)

/**
 * A scripted `Subprocess` plus `TestSubprocess` to inspect the calls.
 *
 * @category testing
 * @since 1.0.0
 */
export const layer = (
  script: ReadonlyArray<Scripted> | ((options: RunOptions, index: number) => Effect.Effect<RunResult, SubprocessError>)
): Layer.Layer<Subprocess | TestSubprocess> => Layer.effectContext(make(script))
