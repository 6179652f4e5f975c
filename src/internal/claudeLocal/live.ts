/**
 * `ClaudeLocal` with `keepAlive` (or `prewarm`): one CLI per conversation reads its turns as
 * stream-json user messages (`claudeLiveCli.ts`), replaced when a turn needs another plan (its
 * key), after a failed turn (or an interrupted one the CLI did not stop in time), and when it
 * died. `ClaudeLive`'s controls act on it (`controls.ts`).
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ProcessError, ProviderError } from "../../services/ChatClient.ts"
import { isInterrupted } from "../../services/ClaudeLive.ts"
import * as Pool from "../../services/ClaudeProcessPool.ts"
import type * as Tool from "../../services/Tool.ts"
import {
  bounded,
  remainingBudget,
  type RunInput,
  serverStatus,
  toolServerFailure,
  withTurnTimeout
} from "../claude/session.ts"
import * as Stall from "../claude/stall.ts"
import { makeRunReader, toChatEvent } from "../claude/streamJson.ts"
import { fromSubprocess, provider } from "./args.ts"
import { interruptedError, liveControls, type Overrides } from "./controls.ts"
import type * as LiveCli from "./liveCli.ts"
import { liveKey, type LocalEnv, planRun, prepareRun } from "./plan.ts"
import { interpretLocalRun, requireVerbatim, userMessage } from "./run.ts"
import * as Spare from "./spare.ts"

/** A kept-alive CLI that ended before the turn's result: why, and that the next turn starts anew. */
const endedEarly = (binary: string, ended: LiveCli.Ended | undefined) => {
  if (ended?.error !== undefined && ended.error.reason._tag !== "Exited") {
    return fromSubprocess(binary)(ended.error)
  }
  const stderr = bounded((ended?.stderr ?? "").trim(), 1_000)
  return new ProviderError({
    provider,
    reason: new ProcessError({
      message: `The kept-alive claude CLI ended before the turn's result (${
        ended?.exitCode === undefined ? "stopped" : `exit code ${ended.exitCode}`
      })${stderr === "" ? "" : `: ${stderr}`}; the next turn starts a new one`
    })
  })
}

const warmFailed = (error: ProviderError) =>
  Effect.logWarning("claude CLI warm start failed; the first turn starts it").pipe(
    Effect.annotateLogs({ error: error.message })
  )

/**
 * How long a turn whose fiber was interrupted may take to stop politely (the CLI's interrupt, then
 * its result line) before its process is stopped instead.
 */
const PoliteStop = Duration.seconds(3)

/** The kept-alive client's run, setTools and live controls, on `slot`. */
export const makeLive = (
  env: LocalEnv,
  slot: LiveCli.LiveSlot,
  setTools: (set: Tool.ToolSet) => Effect.Effect<void, Tool.InvalidToolsError | ProviderError>,
  overrides: Overrides
) => {
  const controls = liveControls(env, slot, overrides)

  /**
   * After a failed turn: an interrupted fiber stops the CLI's turn politely and keeps the process
   * when it can; our own `Interrupted` keeps it; anything else stops it (no half-read turn survives).
   */
  const afterFailure = Effect.fnUntraced(function*<E>(input: RunInput, cause: Cause.Cause<E>) {
    const error = Option.getOrUndefined(Cause.findErrorOption(cause))
    if (isInterrupted(error)) return
    const cli = slot.current()
    if (error === undefined && Cause.hasInterrupts(cause) && cli !== undefined && (yield* cli.settle(PoliteStop))) {
      // The stopped turn is in the CLI's session: the conversation must know it, or a first
      // turn's next one would not match this CLI and start a new session without it.
      const session = cli.sessionId()
      if (Option.isSome(session) && input.stopped !== undefined) yield* input.stopped(session.value)
      return
    }
    yield* slot.drop
  })

  /** The live CLI for a turn, started (in a scope of its own) if need be; a new one may spend `budgetUsd`. */
  const liveCli = Effect.fnUntraced(
    function*(
      sessionId: Option.Option<string>,
      fork: boolean,
      responseFormat: RunInput["responseFormat"],
      budgetUsd: number | undefined
    ) {
      const plan = yield* planRun(env, responseFormat)
      const key = liveKey(env, plan)
      const cli = yield* slot.use(
        key,
        sessionId,
        (resume, forking) =>
          Effect.map(
            prepareRun(env, plan, { sessionId: resume, fork: forking, streamInput: true, budgetUsd }),
            // The process outlives the turn that started it: each turn re-points the run's span.
            ({ bridgeRun, runOptions }) => ({ ...runOptions, aroundTurn: bridgeRun?.withRunSpan })
          ),
        fork,
        Spare.claimSpare(env, plan, key, budgetUsd, slot.pool)
      ).pipe(Effect.catchTag("ProcessPoolTimeoutError", (e) => Effect.fail(Pool.toProviderError(provider)(e))))
      return { cli, plan }
    }
  )

  /**
   * A turn on the live CLI. A failure stops it (no half-read turn survives); an interrupted fiber
   * first asks the CLI to stop the turn and keeps it when it does (`afterFailure`).
   */
  const liveTurn = Effect.fnUntraced(
    function*(input: RunInput) {
      const { cli, plan } = yield* liveCli(input.sessionId, input.fork, input.responseFormat, input.budgetUsd)
      yield* controls.applySettings(cli).pipe(
        Effect.catch((e) =>
          Effect.logWarning("claude CLI refused a live setting").pipe(Effect.annotateLogs({ error: e.message }))
        )
      )
      const { mounted } = plan
      const reader = makeRunReader(env.toolPrefix, env.gate.batches.observe)
      // The CLI runs with partial messages on: only a stalled turn is silent outside its tools.
      const watchdog = yield* Stall.make({
        provider,
        stallTimeout: env.options.stallTimeout,
        busy: () => reader.openTools() > 0
      })
      yield* env.permissionWaits.attach(watchdog)
      let checked = !mounted
      // The bridge's tool calls during this turn are children of the turn's span (`aroundTurn`).
      // The uuid lets the CLI report when this message (and any steered into the turn) is done.
      const message = userMessage(env, input, plan.schemaText, { uuid: crypto.randomUUID() })
      // A steered `later`/`now` message makes a turn of its own, with a result of its own: each
      // result but the last (which the turn's reading records) is counted when the next arrives.
      let lastResult = reader.result()
      const turn = cli.turn(message, (line) =>
        Effect.gen(function*() {
          watchdog.output()
          const events = reader.line(line)
          const result = reader.result()
          if (result !== lastResult) {
            if (lastResult !== undefined) yield* input.recordResult(lastResult)
            lastResult = result
          }
          if (!checked) {
            // The CLI prints an init line per turn: a bridge it could not reach stops the turn.
            const init = reader.init()
            checked = init !== undefined
            if (init !== undefined && serverStatus(init, env.serverName) !== "connected") {
              return yield* toolServerFailure(provider, env.serverName, init)
            }
          }
          if (input.emit !== undefined && events.length > 0) {
            // A consumer that is behind holds the CLI back: that is not the CLI's silence.
            watchdog.waitStarted()
            for (const event of events) yield* input.emit(toChatEvent(event))
            watchdog.waitEnded()
          }
        }))
      // A stalled turn is interrupted, so the CLI is dropped (below) and the next turn resumes.
      const output = yield* Stall.watched(watchdog, turn).pipe(withTurnTimeout(provider, env.timeout))
      const parsed = reader.done()
      const ended = output.ended
      // Only a result that follows our own interrupt is an interruption; any other stays a failure.
      if (output.interrupted && parsed.result?.subtype === "error_during_execution") {
        yield* input.recordResult(parsed.result)
        return yield* interruptedError(env, parsed)
      }
      const outcome = yield* interpretLocalRun(
        env,
        input,
        mounted,
        parsed,
        { exitCode: ended?.exitCode ?? 0, stderr: ended?.stderr ?? "" },
        () => endedEarly(env.binary, ended)
      )
      // A call parked for an approval is decided by a fresh CLI resuming the session: this one,
      // holding the session as it was, must not carry on with it.
      if (outcome.deferred !== undefined) yield* slot.drop
      return outcome
    },
    Effect.scoped,
    (turn, input) => Effect.onError(turn, (cause) => afterFailure(input, cause))
  )

  const run = (input: RunInput) =>
    // Refused before a CLI is started, and without dropping a warm one.
    Effect.andThen(Effect.flatMap(env.cliVersion, (cli) => requireVerbatim(env, cli, input)), liveTurn(input))

  const liveSetTools = Effect.fnUntraced(function*(set: Tool.ToolSet, budgetUsd: number | undefined) {
    yield* setTools(set)
    const current = slot.current()
    if (env.options.prewarm !== true || current === undefined) return
    // A warm start stays warm: a process started with the old tools is replaced now (unless
    // the budget is spent: the next turn fails without a CLI).
    if (budgetUsd === 0) return yield* slot.drop
    yield* liveCli(current.sessionId(), current.forks(), undefined, budgetUsd).pipe(Effect.catch(warmFailed))
  })

  /** `prewarm`: the first turn's CLI, started now (resuming, and forking, the first turn's session). */
  const prewarm = Effect.suspend(() => {
    // Nothing is spent before the first turn.
    const budgetUsd = remainingBudget(env.options.maxBudgetUsd, 0)
    if (env.options.prewarm !== true || budgetUsd === 0) return Effect.void
    const resume = Option.fromUndefinedOr(env.options.snapshot?.sessionId ?? env.options.resume)
    return liveCli(resume, env.options.forkSession === true, undefined, budgetUsd).pipe(
      Effect.asVoid,
      Effect.catch(warmFailed)
    )
  })

  return { run, setTools: liveSetTools, prewarm, controls: controls.service }
}
