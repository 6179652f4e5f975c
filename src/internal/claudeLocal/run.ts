/**
 * One `ClaudeLocal` turn on a fresh `claude -p` process (the default): started with the turn's
 * files in a scope of the turn, the prompt on stdin, read to the end, then interpreted.
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { InvalidResponseError, ProcessError, ProviderError } from "../../services/ChatClient.ts"
import type { RunOptions } from "../../services/Subprocess.ts"
import type { Emit } from "../chat/loopClient.ts"
import type * as CliVersion from "../claude/cliVersion.ts"
import { bounded, interpretRun, type RunInput, serverStatus, toolServerFailure } from "../claude/session.ts"
import * as Stall from "../claude/stall.ts"
import { makeRunReader, type ParsedRun, toChatEvent } from "../claude/streamJson.ts"
import * as UserMessage from "../claude/userMessage.ts"
import { provider } from "./args.ts"
import { type LocalEnv, planRun, prepareRun } from "./plan.ts"

/** The user's text is checked, not the schema the library appends. */
export const requireVerbatim = (env: LocalEnv, cli: CliVersion.CliVersion, input: RunInput) =>
  UserMessage.requireVerbatim(provider, cli, input, env.options.trustedPrompts === true)

/** The turn's one stream-json user message, verbatim unless `trustedPrompts`. */
export const userMessage = (
  env: LocalEnv,
  input: RunInput,
  schemaText: string | undefined,
  delivery?: UserMessage.Delivery
) =>
  UserMessage.make(
    { prompt: input.prompt, parts: input.parts, extraText: schemaText },
    env.options.trustedPrompts !== true,
    delivery
  )

/**
 * Runs the CLI (its argv asks for partial messages), reporting text and bridge tool calls as they happen
 * (when the turn streams), and stopping it when it goes silent for `stallTimeout`: a long answer
 * prints its stream events, so only a stalled run is silent outside its tool calls. A bridge the
 * CLI could not connect to stops the run at the init line.
 */
const streamRun = Effect.fnUntraced(
  function*(env: LocalEnv, runOptions: RunOptions, emit: Emit | undefined, mounted: boolean) {
    const reader = makeRunReader(env.toolPrefix, env.gate.batches.observe)
    const watchdog = yield* Stall.make({
      provider,
      stallTimeout: env.options.stallTimeout,
      // After its result line the CLI only has to exit: `requestTimeout` bounds that.
      busy: () => reader.openTools() > 0 || reader.result() !== undefined
    })
    yield* env.permissionWaits.attach(watchdog)
    let first = true
    const outcome = yield* env.subprocess.stream(runOptions).pipe(
      Stream.runForEach((line) =>
        Effect.gen(function*() {
          watchdog.output()
          const events = reader.line(line)
          if (mounted && first) {
            const init = reader.init()
            if (init !== undefined && serverStatus(init, env.serverName) !== "connected") {
              return yield* toolServerFailure(provider, env.serverName, init)
            }
          }
          first = false
          if (emit !== undefined && events.length > 0) {
            // A consumer that is behind holds the CLI back: that is not the CLI's silence.
            watchdog.waitStarted()
            for (const event of events) yield* emit(toChatEvent(event))
            watchdog.waitEnded()
          }
        })
      ),
      Effect.as({ exitCode: 0, stderr: "" }),
      Effect.catchReason(
        "SubprocessError",
        "Exited",
        (e) => Effect.succeed({ exitCode: e.exitCode, stderr: e.stderrTail })
      ),
      Effect.mapError((e) => (e._tag === "ProviderError" ? e : env.fromTurnSubprocess(e))),
      // Interrupting the stream stops the process group before the error is returned.
      (run) => Stall.watched(watchdog, run)
    )
    return { ...outcome, parsed: reader.done() }
  },
  Effect.scoped
)

/** A finished run that printed no result line: what its exit and output tell. */
const noResult = (result: { readonly exitCode: number; readonly stderr: string; readonly parsed: ParsedRun }) => {
  const stderr = bounded(result.stderr.trim(), 1_000)
  const garbage = result.parsed.garbage
  return new ProviderError({
    provider,
    reason: result.exitCode === 0
      ? new InvalidResponseError({
        message: `The claude CLI printed no result line${
          garbage.length > 0 ? ` (unparseable output: ${bounded(garbage[0]!, 200)})` : ""
        }`
      })
      : new ProcessError({
        message: `The claude CLI exited with code ${result.exitCode}${stderr === "" ? "" : `: ${stderr}`}`,
        exitCode: result.exitCode
      })
  })
}

/**
 * Reads a finished ClaudeLocal run, fresh or kept-alive, into the turn's outcome with the CLI's
 * own tool activity (see `interpretRun`).
 */
export const interpretLocalRun = (
  env: LocalEnv,
  input: RunInput,
  mounted: boolean,
  parsed: ParsedRun,
  exit: { readonly exitCode: number; readonly stderr: string },
  noResult: () => ProviderError
) =>
  Effect.map(
    interpretRun({
      provider,
      serverName: env.serverName,
      mounted,
      init: parsed.init,
      result: parsed.result,
      exitCode: exit.exitCode,
      stderr: exit.stderr,
      toolUses: parsed.toolUses,
      allowPermissionDenials: env.options.allowPermissionDenials === true,
      recordResult: input.recordResult,
      lastText: parsed.lastText,
      structuredAttempt: parsed.structuredAttempt,
      rateLimits: parsed.rateLimits,
      spentWindow: parsed.spentWindow,
      decidedDenials: env.decidedDenials,
      noResult
    }),
    (outcome) => ({
      ...outcome,
      activity: parsed.activity,
      ...(parsed.result?.terminal_reason === "tool_deferred" && parsed.result.deferred_tool_use !== undefined
        ? { deferred: parsed.result.deferred_tool_use }
        : {})
    })
  )

/** One turn on a fresh CLI; what the run acquired is released when it ends. */
export const freshRun = (env: LocalEnv) =>
  Effect.fnUntraced(function*(input: RunInput) {
    const plan = yield* planRun(env, input.responseFormat)
    if (input.replay !== true) yield* requireVerbatim(env, plan.cli, input)
    const { mounted } = plan
    const { runOptions: prepared } = yield* prepareRun(env, plan, {
      sessionId: input.sessionId,
      fork: input.fork,
      streamInput: false,
      budgetUsd: input.budgetUsd
    })
    // Every prompt is one stream-json user message, so it can say "verbatim".
    const runOptions = {
      ...prepared,
      // Partial messages always: a long answer prints its stream events, so only a stalled run is silent.
      args: [...prepared.args, "--include-partial-messages", ...UserMessage.streamJsonInputFlags],
      // A replay sends no message: the resumed CLI asks for the parked call again and goes on.
      stdin: input.replay === true ? "" : `${JSON.stringify(userMessage(env, input, plan.schemaText))}\n`,
      timeout: env.timeout
    }
    // The bridge's tool calls during this run are children of the span the run's token was
    // opened in (prepareRun, inside this turn's span).
    // Streamed even when the turn is not, so that a silent CLI is seen.
    const result = yield* streamRun(env, runOptions, input.emit, mounted)
    const { parsed } = result
    return yield* interpretLocalRun(env, input, mounted, parsed, result, () => noResult(result))
  }, Effect.scoped)
