/**
 * A deterministic model for tests and offline examples. It drives the real tool loop and real tool
 * dispatch; only the model's answers are scripted — as a list of turns, or as a function of the
 * request.
 *
 * **Example** (A scripted tool call, then an answer)
 *
 * ```ts
 * import { Scripted } from "effect-chat-bridge"
 *
 * const ScriptedLayer = Scripted.layer({
 *   script: [
 *     Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 2 } }),
 *     Scripted.text("1 + 2 = 3")
 *   ]
 * })
 * ```
 *
 * @summary A deterministic model for tests and offline examples: real tool loop, scripted answers.
 * @group Testing
 * @since 0.1.0
 * @module
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import { makeLoopClient } from "../internal/chat/loopClient.ts"
import { anything } from "../internal/chat/media.ts"
import {
  ChatClient,
  type ChatClientService,
  ProviderError,
  reasonFromHttpStatus,
  UnknownError,
  Usage
} from "../services/ChatClient.ts"
import type { Message, TurnRequest, TurnResponse, TurnStreamEvent } from "../services/ModelTurn.ts"
import { ToolCall } from "../services/Tool.ts"

/**
 * A call the scripted model makes; `id` defaults to `call_<n>`.
 *
 * @category testing
 * @since 1.0.0
 */
export interface ScriptedCall {
  /** The tool to call. */
  readonly name: string
  /** The arguments, as an object or as JSON text; default `{}`. */
  readonly arguments?: unknown
  /** The call id; default `call_<n>`. */
  readonly id?: string
}

/**
 * One scripted model turn. Without `usage`, usage is estimated as characters / 4.
 *
 * @category testing
 * @since 1.0.0
 */
export type ScriptedTurn =
  | {
    readonly _tag: "Reply"
    readonly text: string
    readonly toolCalls: ReadonlyArray<ScriptedCall>
    readonly structured?: unknown
    readonly usage?: Usage
  }
  | { readonly _tag: "Fail"; readonly error: ProviderError }

/**
 * A final text answer.
 *
 * @category testing
 * @since 1.0.0
 */
export const text = (text: string, usage?: Usage): ScriptedTurn => ({
  _tag: "Reply",
  text,
  toolCalls: [],
  ...(usage === undefined ? {} : { usage })
})

/**
 * A turn that calls tools (optionally with some text alongside).
 *
 * @category testing
 * @since 1.0.0
 */
export const toolCalls = (...calls: ReadonlyArray<ScriptedCall>): ScriptedTurn => ({
  _tag: "Reply",
  text: "",
  toolCalls: calls
})

/**
 * A structured answer for `ask` (what a provider's native structured output would return).
 *
 * @category testing
 * @since 1.0.0
 */
export const structured = (value: unknown): ScriptedTurn => ({
  _tag: "Reply",
  text: "",
  toolCalls: [],
  structured: value
})

/**
 * A turn that fails like a provider would (use it to exercise `Fallback` and error handling).
 *
 * @category testing
 * @since 1.0.0
 */
export const fail = (error: ProviderError): ScriptedTurn => ({ _tag: "Fail", error })

/**
 * Shorthand for a provider failure with an HTTP status, with the reason the HTTP providers give it
 * (`ChatClient.reasonFromHttpStatus`: `AuthenticationError` for 401/403, `RateLimitError` for 429, …).
 *
 * @category testing
 * @since 1.0.0
 */
export const httpError = (status: number, provider = "scripted"): ProviderError =>
  new ProviderError({ provider, reason: reasonFromHttpStatus({ status, message: `HTTP ${status}` }) })

/**
 * Options of {@link make} and {@link layer}: the model's answers, either as a fixed `script` of
 * turns played in order, or as a `respond` function of each request.
 *
 * @category testing
 * @since 1.0.0
 */
export type Options =
  & {
    /** Provider name in errors; default "scripted". */
    readonly name?: string
    /** Model turns per `chat`/`ask` before `MaxStepsError`; default 20. */
    readonly maxSteps?: number
    /** Tool calls of one turn run at most this many at a time; default 5. */
    readonly toolConcurrency?: number
    /** Bound on each model turn (a `ProviderError` with reason `TimeoutError`); default none. */
    readonly requestTimeout?: Duration.Input
  }
  & (
    | {
      /** The turns, in order; a turn beyond the end fails with a `ProviderError`. */
      readonly script: ReadonlyArray<ScriptedTurn>
    }
    | {
      /** Computes each turn from the request (history, tools, response format). */
      readonly respond: (request: TurnRequest) => Effect.Effect<ScriptedTurn, ProviderError>
    }
  )

const messageChars = (m: Message): number =>
  m.role === "user"
    ? m.content.length
    : m.role === "assistant"
    ? m.text.length + JSON.stringify(m.toolCalls).length
    : m.results.reduce((n, r) => n + r.content.length, 0)

const estimate = (
  request: TurnRequest,
  turn: { readonly text: string; readonly toolCalls: ReadonlyArray<ScriptedCall> }
) =>
  Usage.of({
    inputTokens: Math.ceil(request.history.reduce((n, m) => n + messageChars(m), 0) / 4),
    outputTokens: Math.ceil((turn.text.length + JSON.stringify(turn.toolCalls).length) / 4)
  })

/**
 * Builds a scripted ChatClient. A script that runs out fails the turn with a `ProviderError`.
 *
 * @category testing
 * @since 1.0.0
 */
export const make: (options: Options) => Effect.Effect<ChatClientService> = Effect.fnUntraced(function*(
  options: Options
) {
  const provider = options.name ?? "scripted"
  const cursor = yield* Ref.make(0)
  const callCounter = yield* Ref.make(0)
  const next = (request: TurnRequest): Effect.Effect<ScriptedTurn, ProviderError> => {
    if ("respond" in options) return options.respond(request)
    const script = options.script
    return Ref.getAndUpdate(cursor, (n) => n + 1).pipe(
      Effect.flatMap((n) =>
        n < script.length
          ? Effect.succeed(script[n]!)
          : Effect.fail(
            new ProviderError({
              provider,
              reason: new UnknownError({
                message: `The scripted model has no turn ${n + 1} (script has ${script.length})`
              })
            })
          )
      )
    )
  }
  const turn = Effect.fnUntraced(function*(request: TurnRequest): Effect.fn.Return<TurnResponse, ProviderError> {
    const scripted = yield* next(request)
    if (scripted._tag === "Fail") return yield* scripted.error
    const calls: Array<ToolCall> = []
    for (const call of scripted.toolCalls) {
      const n = yield* Ref.updateAndGet(callCounter, (c) => c + 1)
      calls.push(new ToolCall({ id: call.id ?? `call_${n}`, name: call.name, arguments: call.arguments ?? {} }))
    }
    return {
      text: scripted.text,
      toolCalls: calls,
      usage: scripted.usage ?? estimate(request, scripted),
      ...(scripted.structured === undefined ? {} : { structured: scripted.structured })
    }
  })
  // Deterministic chunking: one delta per word (with its trailing space), as a model would stream.
  const streamTurn = (request: TurnRequest) =>
    Stream.unwrap(Effect.map(turn(request), (response) =>
      Stream.concat(
        Stream.fromIterable(response.text.match(/\s*\S+\s*/g) ?? []).pipe(
          Stream.map((text): TurnStreamEvent => ({ _tag: "TextDelta", text }))
        ),
        Stream.succeed<TurnStreamEvent>({ _tag: "Done", response })
      )))
  return yield* makeLoopClient({
    provider,
    turn,
    media: anything(provider),
    streamTurn,
    maxSteps: options.maxSteps,
    toolConcurrency: options.toolConcurrency,
    requestTimeout: options.requestTimeout
  })
})

/**
 * A ChatClient layer on a scripted model. Calls fail as a real provider's would: with the
 * `ProviderError` of a {@link fail} turn or of an exhausted script, `MaxStepsError`,
 * `StructuredOutputError`, `EmptyPromptError` or `InvalidToolsError`.
 *
 * @category testing
 * @since 1.0.0
 */
export const layer = (options: Options): Layer.Layer<ChatClient> => Layer.effect(ChatClient, make(options))
