/**
 * Reading one ClaudeAgent turn: the query's messages become a transcript (what the CLI printed
 * that the provider reads, with the stream events of `chatStream` emitted on the way), and the
 * transcript becomes the turn's outcome or typed error.
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { type ChatError, ProcessError, ProviderError } from "../../services/ChatClient.ts"
import type { AgentToolEnd, AgentToolStart } from "../../services/ChatEvent.ts"
import type { Emit } from "../chat/loopClient.ts"
import {
  authError,
  bounded,
  interpretRun,
  isAuthFailure,
  type RunInput,
  type RunOutcome,
  withTurnTimeout
} from "../claude/session.ts"
import * as Stall from "../claude/stall.ts"
import {
  type InitLine,
  makeRunReader,
  type RateLimitWindow,
  type ResultLine,
  type StructuredAttempt,
  toChatEvent,
  type ToolUse
} from "../claude/streamJson.ts"
import type { Started } from "./query.ts"
import { provider } from "./sdk.ts"

/** What the CLI printed during one query (or one turn of a kept-alive query) that the provider reads. */
export interface Transcript {
  readonly init: InitLine | undefined
  readonly result: ResultLine | undefined
  readonly lastText?: string | undefined
  readonly activity?: ReadonlyArray<AgentToolStart | AgentToolEnd> | undefined
  readonly toolUses?: ReadonlyArray<ToolUse> | undefined
  readonly structuredAttempt?: StructuredAttempt | undefined
  readonly rateLimits?: ReadonlyArray<RateLimitWindow> | undefined
  readonly spentWindow?: RateLimitWindow | undefined
}

/**
 * When a kept-alive turn with steered messages is over: a steered `later` or `now` message runs as a
 * turn of its own, with a result of its own, so the first result does not end the reading.
 */
export interface TurnEnd {
  /** Whether `message` (just read) ends the turn. */
  readonly over: (message: AgentSdk.SDKMessage) => boolean
  /** A result that another followed: counted here, since the caller reads only the last. */
  readonly earlier: (result: ResultLine) => Effect.Effect<unknown>
}

/** The stderr tail of the query's CLI, trimmed and bounded for an error message. */
const stderrOf = (started: Started) => bounded((started.cli()?.stderr() ?? "").trim(), 1_000)

/** A failure thrown by the SDK: an auth failure says how to log in; anything else is a `process` error. */
const sdkFailure = (started: Started, e: unknown): ProviderError => {
  const stderr = stderrOf(started)
  const said = e instanceof Error ? e.message : String(e)
  if (isAuthFailure(stderr) || isAuthFailure(said)) return authError(provider, stderr === "" ? said : stderr)
  return new ProviderError({
    provider,
    reason: new ProcessError({
      message: `The claude CLI failed: ${said}${stderr === "" ? "" : ` (stderr: ${stderr})`}`
    })
  })
}

/**
 * Reads the query's messages, collecting what the provider reads: to its end, or (for a
 * kept-alive query, `untilResult`) to this turn's result line. Bounded by `timeout`, and failed as
 * `stalled` when no message comes for `stallTimeout` while no tool runs (and no permission
 * decision is pending, when the client counts them in `permissionWaits`); on either, or on
 * interruption, the query is aborted (its CLI is reaped when its scope closes).
 */
export const consume = (params: {
  readonly started: Started
  readonly serverName: string
  readonly emit: Emit | undefined
  readonly untilResult: boolean
  readonly timeout: Duration.Duration
  /** Default 3 minutes. */
  readonly stallTimeout?: Duration.Input | undefined
  /**
   * Whether the query streams partial messages; default: as ClaudeAgent starts them (kept-alive
   * queries and streamed turns). Without them a long answer is silent until it is whole, so such
   * a query is bounded by `timeout` only.
   */
  readonly partialMessages?: boolean | undefined
  /** The client's pending `canUseTool` decisions, when its permission callback counts them. */
  readonly permissionWaits?: Stall.PermissionWaits | undefined
  /**
   * For a kept-alive turn that messages were steered into: whether `message` ends it (instead of
   * its first result), and what to do with each result but the last (which the caller reads).
   */
  readonly turnEnd?: TurnEnd | undefined
  /**
   * Whether interrupting the reading leaves the query running (a kept-alive query, which the
   * caller then stops politely or closes) instead of aborting it.
   */
  readonly keepOnInterrupt?: boolean | undefined
  /** Sees every message read (the approvals' gate counts a message's tool calls from them). */
  readonly observe?: ((json: unknown) => void) | undefined
}): Effect.Effect<Transcript, ProviderError> => {
  const { emit, started, untilResult } = params
  return Effect.gen(function*() {
    const reader = makeRunReader(`mcp__${params.serverName}__`, params.observe)
    const context = yield* Effect.context<never>()
    const watchdog = yield* Stall.make({
      provider,
      stallTimeout: params.stallTimeout,
      // After the result the query only has to end: `timeout` bounds that.
      busy: () => reader.openTools() > 0 || reader.result() !== undefined
    })
    if (params.permissionWaits !== undefined) yield* params.permissionWaits.attach(watchdog)
    const read = Effect.tryPromise({
      try: async (signal) => {
        const runEmit = Effect.runPromiseWith(context)
        let lastResult: ResultLine | undefined
        // A kept-alive turn stopped by its fiber leaves the query running: the caller stops it politely.
        if (params.keepOnInterrupt !== true) {
          signal.addEventListener("abort", () => started.controller.abort(), { once: true })
        }
        try {
          for (;;) {
            const step = await started.next()
            // Stopped: the message stays for whoever reads the query next.
            if (signal.aborted) break
            started.take()
            watchdog.output()
            if (step.done === true) break
            const events = reader.message(step.value)
            if (emit !== undefined && events.length > 0) {
              // A consumer that is behind holds the query back: that is not the CLI's silence.
              watchdog.waitStarted()
              for (const event of events) await runEmit(emit(toChatEvent(event)))
              watchdog.waitEnded()
            }
            const result = reader.result()
            if (params.turnEnd !== undefined) {
              if (result !== lastResult && lastResult !== undefined) await runEmit(params.turnEnd.earlier(lastResult))
              lastResult = result
              if (params.turnEnd.over(step.value)) break
            } else if (untilResult && result !== undefined) break
          }
        } catch (e) {
          // The SDK throws after an error result; the result line says more (status, subtype).
          if (reader.result() === undefined) throw e
        }
        const { activity, init, lastText, rateLimits, result, spentWindow, structuredAttempt, toolUses } = reader
          .done()
        return {
          init,
          result,
          lastText,
          activity,
          toolUses,
          structuredAttempt,
          rateLimits,
          spentWindow
        } satisfies Transcript
      },
      catch: (e) => sdkFailure(started, e)
    })
    const streamed = params.partialMessages ?? (untilResult || emit !== undefined)
    return yield* (streamed ? Stall.watched(watchdog, read) : read)
  }).pipe(Effect.scoped, withTurnTimeout(provider, params.timeout))
}

/** What the provider's settings add to reading a transcript. */
export interface InterpretSetup {
  readonly serverName: string
  readonly allowPermissionDenials: boolean
  /** Tool use ids the application denied through `canUseTool`: its decisions, not failures. */
  readonly decidedDenials: ReadonlySet<string>
}

/** The outcome of a turn from its transcript (see `interpretRun`). */
export const interpret = (
  setup: InterpretSetup,
  input: RunInput,
  started: Started,
  transcript: Transcript
): Effect.Effect<RunOutcome, ChatError> =>
  interpretRun({
    provider,
    serverName: setup.serverName,
    mounted: started.mounted,
    init: transcript.init,
    result: transcript.result,
    // Only for a run without a result: after one, the CLI may still be on its way out.
    exitCode: transcript.result === undefined ? started.cli()?.child.exitCode ?? undefined : undefined,
    stderr: started.cli()?.stderr(),
    toolUses: transcript.toolUses,
    allowPermissionDenials: setup.allowPermissionDenials,
    recordResult: input.recordResult,
    lastText: transcript.lastText,
    structuredAttempt: transcript.structuredAttempt,
    rateLimits: transcript.rateLimits,
    spentWindow: transcript.spentWindow,
    decidedDenials: setup.decidedDenials,
    noResult: () => {
      const stderr = stderrOf(started)
      return new ProviderError({
        provider,
        reason: new ProcessError({
          message: `The claude CLI ended without a result${stderr === "" ? "" : `: ${stderr}`}`
        })
      })
    }
  }).pipe(Effect.map((outcome) => ({
    ...outcome,
    activity: transcript.activity,
    // A call the approvals' gate parked: the turn ended on it (see `approvals.ts`).
    ...(transcript.result?.terminal_reason === "tool_deferred" && transcript.result.deferred_tool_use !== undefined
      ? { deferred: transcript.result.deferred_tool_use }
      : {})
  })))
