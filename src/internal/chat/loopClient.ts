/**
 * The ReAct loop every turn-based provider shares, and the ChatClient built on it. A provider
 * supplies one `ModelTurn`; the loop owns history, buffered `add` text, tools, usage, `maxSteps`,
 * the request timeout and the `ask` decoding, so those rules are the same on every provider.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import type * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import {
  type ChatClientService,
  type ChatError,
  InvalidResponseError,
  MaxStepsError,
  ProviderError,
  TimeoutError,
  Usage
} from "../../services/ChatClient.ts"
import {
  type ChatEvent,
  Complete,
  ReasoningDelta,
  TextDelta,
  ToolCallEnd,
  ToolCallStart,
  UsageEvent
} from "../../services/ChatEvent.ts"
import { Attributes } from "../../services/ChatTelemetry.ts"
import type { Prompt } from "../../services/Content.ts"
import type {
  Message,
  ModelTurn,
  ModelTurnStream,
  ResponseFormat,
  TurnRequest,
  TurnResponse
} from "../../services/ModelTurn.ts"
import * as Tool from "../../services/Tool.ts"
import { decodeAnswer, responseFormatFor } from "../core/structuredAnswer.ts"
import { type MediaSupport, requirePrompt, textOnly, userMessage } from "./media.ts"
import * as Telemetry from "./telemetry.ts"

export interface LoopOptions {
  /** Provider name used in errors and spans. */
  readonly provider: string
  /** The model, for spans and metrics (`gen_ai.request.model`). */
  readonly model?: string | undefined
  readonly turn: ModelTurn
  /** The same model, streaming; without it `chatStream` reports each turn's text in one piece. */
  readonly streamTurn?: ModelTurnStream | undefined
  /** Model turns per `chat`/`ask` before `MaxStepsError`; default 20. */
  readonly maxSteps?: number | undefined
  /** Tool calls of one turn run at most this many at a time; default 5. */
  readonly toolConcurrency?: number | undefined
  /** Bound on each model turn. */
  readonly requestTimeout?: Duration.Input | undefined
  /** What media the model takes; prompts are checked against it before any request. Default: text only. */
  readonly media?: MediaSupport | undefined
}

export const DefaultMaxSteps = 20

/** Reports one event to a stream's consumer (waiting while the consumer is behind). */
export type Emit = (event: ChatEvent) => Effect.Effect<void>

/** Tool arguments as an object for events: JSON text is parsed, empty text is `{}`. */
export const argumentsOf = (raw: unknown): unknown => {
  if (typeof raw !== "string") return raw ?? {}
  if (raw.trim() === "") return {}
  try {
    return JSON.parse(raw) as unknown
  } catch {
    return raw
  }
}

/**
 * Turns a chat that reports events through `emit` into a stream of those events followed by
 * `Complete`. The chat runs in a fiber owned by the stream: when the consumer stops, it is
 * interrupted (cancelling requests, killing processes).
 */
export const streamOf = <E>(
  run: (emit: Emit) => Effect.Effect<string, E>
): Stream.Stream<ChatEvent, E> =>
  Stream.callback<ChatEvent, E>((queue) => {
    // A bounded queue: `emit` waits while the consumer is behind, as a UI reading slowly expects.
    const emit: Emit = (event) => Effect.asVoid(Queue.offer(queue, event))
    return run(emit).pipe(
      Effect.flatMap((text) => emit(new Complete({ text }))),
      Effect.matchCauseEffect({
        onFailure: (cause) => Queue.failCause(queue, cause),
        onSuccess: () => Queue.end(queue)
      }),
      Effect.forkScoped
    )
  }, { bufferSize: 16 })

/** Adds a metric attribute to every metric updated inside `effect`. */
const withMetricAttribute = <A, E, R>(effect: Effect.Effect<A, E, R>, key: string, value: string) =>
  Effect.updateService(effect, Metric.CurrentMetricAttributes, (attributes) => ({ ...attributes, [key]: value }))

const lastText = (messages: ReadonlyArray<Message>): string => {
  const last = messages[messages.length - 1]
  return last?.role === "assistant" ? last.text : ""
}

/** A client's conversation: what it said, what waits to be sent, its tools and its usage. */
interface LoopState {
  readonly history: Ref.Ref<ReadonlyArray<Message>>
  readonly pending: Ref.Ref<ReadonlyArray<Prompt>>
  readonly tools: Ref.Ref<Tool.ToolSet>
  readonly usage: Ref.Ref<Usage>
  /** One conversation: turns must not interleave, or history would be corrupted. */
  readonly lock: Semaphore.Semaphore
}

/** One client: its options, what is derived from them once, and its state. */
interface Loop {
  readonly options: LoopOptions
  readonly maxSteps: number
  readonly media: MediaSupport
  readonly info: Telemetry.TurnInfo
  readonly state: LoopState
}

const makeState: Effect.Effect<LoopState> = Effect.gen(function*() {
  return {
    history: yield* Ref.make<ReadonlyArray<Message>>([]),
    pending: yield* Ref.make<ReadonlyArray<Prompt>>([]),
    tools: yield* Ref.make<Tool.ToolSet>(Tool.empty),
    usage: yield* Ref.make(Usage.empty),
    lock: yield* Semaphore.make(1)
  }
})

/** Bounds a model turn by `requestTimeout`, when one is set. */
const timed = (options: LoopOptions, effect: Effect.Effect<TurnResponse, ProviderError>) =>
  options.requestTimeout === undefined ? effect : effect.pipe(
    Effect.timeoutOrElse({
      duration: options.requestTimeout,
      orElse: () =>
        Effect.fail(
          new ProviderError({
            provider: options.provider,
            reason: new TimeoutError({
              message: `The model did not answer within ${
                Duration.format(Duration.fromInputUnsafe(options.requestTimeout!))
              }`
            })
          })
        )
    })
  )

const streamEnded = (provider: string) =>
  new ProviderError({
    provider,
    reason: new InvalidResponseError({
      message: "The model's stream ended without a final message"
    })
  })

const turnUsage = (response: TurnResponse) => ({
  usage: response.usage,
  finishReason: response.finishReason ?? (response.toolCalls.length > 0 ? "tool_calls" : undefined)
})

/** One model turn, traced as a turn span under the `chat`/`ask` span. */
const modelTurn = (loop: Loop, request: TurnRequest, emit: Emit | undefined): Effect.Effect<TurnResponse, ChatError> =>
  Telemetry.turnSpan(loop.info, untracedTurn(loop.options, request, emit), turnUsage)

/** One model turn; with `emit`, its text is reported as it arrives (if the model can stream). */
const untracedTurn = (
  options: LoopOptions,
  request: TurnRequest,
  emit: Emit | undefined
): Effect.Effect<TurnResponse, ChatError> => {
  if (emit === undefined) return timed(options, options.turn(request))
  const streamTurn = options.streamTurn
  if (streamTurn === undefined) {
    return timed(options, options.turn(request)).pipe(
      Effect.tap((
        r
      ) => (r.text === "" || r.structured !== undefined ? Effect.void : emit(new TextDelta({ text: r.text }))))
    )
  }
  return timed(
    options,
    Stream.runFoldEffect(
      streamTurn(request),
      (): TurnResponse | undefined => undefined,
      (done, event) =>
        event._tag === "Done"
          ? Effect.succeed(event.response)
          : Effect.as(
            emit(event._tag === "TextDelta" ? new TextDelta(event) : new ReasoningDelta(event)),
            done
          )
    ).pipe(
      Effect.flatMap((done) => (done === undefined ? Effect.fail(streamEnded(options.provider)) : Effect.succeed(done)))
    )
  )
}

/** Runs one turn's tool calls; with `emit`, each call is reported as it starts and ends. */
const runTools = (
  options: LoopOptions,
  toolSet: Tool.ToolSet,
  calls: ReadonlyArray<Tool.ToolCall>,
  emit: Emit | undefined
) =>
  emit === undefined
    ? Tool.dispatch(toolSet, calls, { concurrency: options.toolConcurrency ?? 5 })
    : Effect.forEach(
      calls,
      (call) =>
        Effect.andThen(
          // Effect 4 runs a forked call until it yields: without this, a quick tool would end
          // before the next call of the same turn is announced as started.
          Effect.andThen(
            emit(new ToolCallStart({ id: call.id, name: call.name, arguments: argumentsOf(call.arguments) })),
            Effect.yieldNow
          ),
          Effect.tap(
            Tool.executeTool(toolSet, call),
            (r) => emit(new ToolCallEnd({ id: r.callId, name: r.name, result: r.content, isError: r.isError }))
          )
        ),
      { concurrency: Math.max(1, options.toolConcurrency ?? 5) }
    )

/** Runs turns until the model stops calling tools; returns the new messages and the last turn. */
const runLoop = Effect.fnUntraced(
  function*(
    loop: Loop,
    start: ReadonlyArray<Message>,
    responseFormat: ResponseFormat | undefined,
    emit: Emit | undefined
  ) {
    const { maxSteps, state } = loop
    const toolSet = yield* Ref.get(state.tools)
    const messages: Array<Message> = [...start]
    for (let step = 1;; step++) {
      const response = yield* modelTurn(loop, { history: [...messages], tools: toolSet.tools, responseFormat }, emit)
      // Nothing to add to on a fresh client: keep the turn's record rather than build an equal one.
      yield* Ref.update(state.usage, (u) => (u === Usage.empty ? response.usage : Usage.add(u, response.usage)))
      if (emit !== undefined) yield* emit(new UsageEvent({ usage: response.usage }))
      if (response.toolCalls.length === 0) {
        // A structured answer joins the history as its JSON, so the model sees what it answered.
        const text = response.structured !== undefined ? JSON.stringify(response.structured) : response.text
        messages.push({ role: "assistant", text, toolCalls: [] })
        return { messages, response }
      }
      messages.push({ role: "assistant", text: response.text, toolCalls: response.toolCalls })
      const results = yield* runTools(loop.options, toolSet, response.toolCalls, emit)
      messages.push({ role: "tool", results })
      if (step >= maxSteps) {
        return yield* new MaxStepsError({
          maxSteps,
          message: `The model still called tools after ${maxSteps} steps`
        })
      }
    }
  }
)

/** One user turn, all or nothing: history and the `add` buffer change only on success. */
const converse = <A>(
  loop: Loop,
  prompt: Prompt,
  responseFormat: ResponseFormat | undefined,
  finish: (response: TurnResponse) => Effect.Effect<A, ChatError>,
  emit?: Emit
): Effect.Effect<A, ChatError> => {
  const { state } = loop
  return state.lock.withPermits(1)(Effect.gen(function*() {
    const buffered = yield* Ref.get(state.pending)
    const before = yield* Ref.get(state.history)
    const user: Message = userMessage([...buffered, prompt])
    yield* Telemetry.recordPrompt(user.content)
    const { messages, response } = yield* runLoop(loop, [...before, user], responseFormat, emit)
    const value = yield* finish(response)
    yield* Telemetry.recordAnswer(lastText(messages))
    yield* Ref.set(state.history, messages)
    yield* Ref.set(state.pending, [])
    return value
  }))
}

const answerText = (response: TurnResponse) => Effect.succeed(response.text)

/** The ChatClient operations of one loop. */
const clientOf = (loop: Loop): ChatClientService => {
  const { media, options, state } = loop
  const add = Effect.fn("ChatClient.add")(function*(prompt: Prompt) {
    yield* requirePrompt("added message", prompt, media)
    yield* state.lock.withPermits(1)(Ref.update(state.pending, (p) => [...p, prompt]))
  })

  // `chat` and `ask` run once per user turn, so their spans are made directly: the same name as
  // `Effect.fn` would give, without capturing a call-site stack trace on every call (`Effect.fn`
  // builds an `Error` per call for that). Metrics measured inside carry the provider label.
  const spanAttributes = Telemetry.clientSpanAttributes(loop.info)
  const spanOptions = { attributes: spanAttributes, captureStackTrace: false }
  const traced = <A>(effect: Effect.Effect<A, ChatError>, name: string) =>
    Effect.withSpan(withMetricAttribute(effect, Attributes.provider, options.provider), name, spanOptions)

  const chat = (prompt: Prompt): Effect.Effect<string, ChatError> =>
    traced(
      Effect.andThen(requirePrompt("prompt", prompt, media), converse(loop, prompt, undefined, answerText)),
      "ChatClient.chat"
    )

  const ask = <A, I>(question: Prompt, schema: Schema.Codec<A, I>): Effect.Effect<A, ChatError> =>
    traced(
      Effect.andThen(
        requirePrompt("question", question, media),
        Effect.flatMap(
          responseFormatFor(schema),
          ({ format, wrapped }) =>
            converse(loop, question, format, (response) => decodeAnswer(schema, response, wrapped))
        )
      ),
      "ChatClient.ask"
    )

  const setTools = Effect.fn("ChatClient.setTools")(function*<R>(list: ReadonlyArray<Tool.Tool<R>>) {
    const set = yield* Tool.capture(list)
    yield* state.lock.withPermits(1)(Ref.set(state.tools, set))
  })

  const chatStream = (prompt: Prompt) =>
    streamOf((emit) =>
      withMetricAttribute(
        Effect.andThen(
          requirePrompt("prompt", prompt, media),
          converse(loop, prompt, undefined, answerText, emit)
        ),
        Attributes.provider,
        options.provider
      )
    ).pipe(Stream.withSpan("ChatClient.chatStream", { attributes: spanAttributes }))

  return { add, chat, chatStream, ask, setTools, usage: Ref.get(state.usage) } satisfies ChatClientService
}

/** Builds a ChatClient on a single-turn model function. */
export const makeLoopClient = (options: LoopOptions): Effect.Effect<ChatClientService> =>
  Effect.map(makeState, (state) =>
    clientOf({
      options,
      maxSteps: Math.max(1, options.maxSteps ?? DefaultMaxSteps),
      media: options.media ?? textOnly(options.provider),
      info: { provider: options.provider, model: options.model },
      state
    }))
