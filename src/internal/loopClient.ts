/**
 * The ReAct loop every turn-based provider shares, and the ChatClient built on it. A provider
 * supplies one `ModelTurn`; the loop owns history, buffered `add` text, tools, usage, `maxSteps`,
 * the request timeout and the `ask` decoding, so those rules are the same on every provider.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  type ChatClientService,
  type ChatError,
  EmptyPromptError,
  MaxStepsError,
  ProviderError,
  StructuredOutputError,
  Usage
} from "../services/ChatClient.js"
import {
  type ChatEvent,
  Complete,
  ReasoningDelta,
  TextDelta,
  ToolCallEnd,
  ToolCallStart,
  UsageEvent
} from "../services/ChatEvent.js"
import type {
  Message,
  ModelTurn,
  ModelTurnStream,
  ResponseFormat,
  TurnRequest,
  TurnResponse
} from "../services/ModelTurn.js"
import * as Tool from "../services/Tool.js"

export interface LoopOptions {
  /** Provider name used in errors and spans. */
  readonly provider: string
  readonly turn: ModelTurn
  /** The same model, streaming; without it `chatStream` reports each turn's text in one piece. */
  readonly streamTurn?: ModelTurnStream | undefined
  /** Model turns per `chat`/`ask` before `MaxStepsError`; default 20. */
  readonly maxSteps?: number | undefined
  /** Tool calls of one turn run at most this many at a time; default 5. */
  readonly toolConcurrency?: number | undefined
  /** Bound on each model turn. */
  readonly requestTimeout?: Duration.DurationInput | undefined
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
  Stream.asyncScoped<ChatEvent, E>((queue) => {
    const emit: Emit = (event) => Effect.asVoid(Effect.promise(() => queue.single(event)))
    return run(emit).pipe(
      Effect.flatMap((text) => emit(new Complete({ text }))),
      Effect.matchCauseEffect({
        onFailure: (cause) => Effect.promise(() => queue.halt(cause)),
        onSuccess: () => Effect.promise(() => queue.end())
      }),
      Effect.forkScoped
    )
  })

const MaxAnswerPreview = 2_000

/** Fails with `EmptyPromptError` for empty or whitespace-only text. */
export const requireText = (what: string, text: string): Effect.Effect<void, EmptyPromptError> =>
  text.trim() === "" ? Effect.fail(new EmptyPromptError({ message: `The ${what} is empty` })) : Effect.void

/**
 * Turns an Effect Schema into the object-rooted JSON Schema every provider accepts for structured
 * answers; `wrapped` tells whether the answer sits under `value`.
 */
export const responseFormatFor = <A, I>(
  schema: Schema.Schema<A, I>
): Effect.Effect<{ readonly format: ResponseFormat; readonly wrapped: boolean }, StructuredOutputError> =>
  Effect.try({
    try: () => {
      const { $schema: _ignored, ...made } = JSONSchema.make(schema) as unknown as Record<string, unknown>
      const json = inlineRootRef(made)
      if (json.type === "object") {
        return { format: { name: "answer", schema: json as Tool.JsonSchemaObject }, wrapped: false }
      }
      const { $defs, ...inner } = json
      const wrappedSchema: Tool.JsonSchemaObject = {
        type: "object",
        properties: { value: inner },
        required: ["value"],
        additionalProperties: false,
        ...($defs === undefined ? {} : { $defs })
      }
      return { format: { name: "answer", schema: wrappedSchema }, wrapped: true }
    },
    catch: (e) =>
      new StructuredOutputError({
        message: `The schema cannot be expressed as JSON Schema: ${e instanceof Error ? e.message : String(e)}`,
        answer: ""
      })
  })

/**
 * A `Schema.Class` (or any schema with an identifier) renders as `{ $ref, $defs }`; providers want
 * the object itself at the root, so the referenced definition is inlined there.
 */
const inlineRootRef = (json: Record<string, unknown>): Record<string, unknown> => {
  const ref = json.$ref
  const defs = json.$defs as Record<string, Record<string, unknown>> | undefined
  if (typeof ref !== "string" || !ref.startsWith("#/$defs/") || defs === undefined) return json
  const target = defs[ref.slice("#/$defs/".length)]
  if (target === undefined) return json
  const { $ref: _ref, $defs: _defs, ...rest } = json
  return { ...rest, ...target, $defs: defs }
}

/** Decodes a structured answer (given as a value, or as JSON text) with `schema`. */
export const decodeAnswer = <A, I>(
  schema: Schema.Schema<A, I>,
  raw: { readonly structured?: unknown; readonly text: string },
  wrapped: boolean
): Effect.Effect<A, StructuredOutputError> => {
  const preview = raw.text.length > MaxAnswerPreview ? `${raw.text.slice(0, MaxAnswerPreview)}…` : raw.text
  return Effect.gen(function*() {
    let value: unknown = raw.structured
    if (value === undefined) {
      value = yield* Effect.try({
        try: () => JSON.parse(stripFence(raw.text)) as unknown,
        catch: () => new StructuredOutputError({ message: "The answer is not JSON", answer: preview })
      })
    }
    if (wrapped) {
      if (typeof value !== "object" || value === null || !("value" in value)) {
        return yield* new StructuredOutputError({ message: "The answer has no `value` field", answer: preview })
      }
      value = value.value
    }
    return yield* Schema.decodeUnknown(schema, { errors: "all" })(value).pipe(
      Effect.mapError((error) =>
        new StructuredOutputError({
          message: `The answer does not match the schema: ${ParseResult.TreeFormatter.formatErrorSync(error)}`,
          answer: preview
        })
      )
    )
  })
}

// Models sometimes wrap JSON in a markdown fence even when asked not to.
const stripFence = (text: string): string => {
  const m = /^\s*```(?:json)?\s*\n([\s\S]*?)\n\s*```\s*$/.exec(text)
  return m ? m[1]! : text
}

/** Builds a ChatClient on a single-turn model function. */
export const makeLoopClient = (options: LoopOptions): Effect.Effect<ChatClientService> =>
  Effect.gen(function*() {
    const maxSteps = Math.max(1, options.maxSteps ?? DefaultMaxSteps)
    const history = yield* Ref.make<ReadonlyArray<Message>>([])
    const pending = yield* Ref.make<ReadonlyArray<string>>([])
    const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
    const usage = yield* Ref.make(Usage.empty)
    // One conversation: turns must not interleave, or history would be corrupted.
    const lock = yield* Effect.makeSemaphore(1)

    const timed = (effect: Effect.Effect<TurnResponse, ProviderError>) =>
      options.requestTimeout === undefined ? effect : effect.pipe(
        Effect.timeoutFail({
          duration: options.requestTimeout,
          onTimeout: () =>
            new ProviderError({
              provider: options.provider,
              kind: "timeout",
              message: `The model did not answer within ${Duration.format(Duration.decode(options.requestTimeout!))}`,
              retryable: true
            })
        })
      )

    const streamEnded = () =>
      new ProviderError({
        provider: options.provider,
        kind: "decode",
        message: "The model's stream ended without a final message",
        retryable: false
      })

    /** One model turn; with `emit`, its text is reported as it arrives (if the model can stream). */
    const modelTurn = (request: TurnRequest, emit: Emit | undefined): Effect.Effect<TurnResponse, ChatError> => {
      if (emit === undefined) return timed(options.turn(request))
      const streamTurn = options.streamTurn
      if (streamTurn === undefined) {
        return timed(options.turn(request)).pipe(
          Effect.tap((
            r
          ) => (r.text === "" || r.structured !== undefined ? Effect.void : emit(new TextDelta({ text: r.text }))))
        )
      }
      return timed(
        Stream.runFoldEffect(
          streamTurn(request),
          undefined as TurnResponse | undefined,
          (done, event) =>
            event._tag === "Done"
              ? Effect.succeed(event.response)
              : Effect.as(
                emit(event._tag === "TextDelta" ? new TextDelta(event) : new ReasoningDelta(event)),
                done
              )
        ).pipe(Effect.flatMap((done) => (done === undefined ? Effect.fail(streamEnded()) : Effect.succeed(done))))
      )
    }

    const runTools = (toolSet: Tool.ToolSet, calls: ReadonlyArray<Tool.ToolCall>, emit: Emit | undefined) =>
      emit === undefined
        ? Tool.dispatch(toolSet, calls, { concurrency: options.toolConcurrency ?? 5 })
        : Effect.forEach(
          calls,
          (call) =>
            Effect.zipRight(
              emit(new ToolCallStart({ id: call.id, name: call.name, arguments: argumentsOf(call.arguments) })),
              Effect.tap(
                Tool.executeTool(toolSet, call),
                (r) => emit(new ToolCallEnd({ id: r.callId, name: r.name, result: r.content, isError: r.isError }))
              )
            ),
          { concurrency: Math.max(1, options.toolConcurrency ?? 5) }
        )

    /** Runs turns until the model stops calling tools; returns the new messages and the last turn. */
    const runLoop = (
      start: ReadonlyArray<Message>,
      responseFormat: ResponseFormat | undefined,
      emit: Emit | undefined
    ) =>
      Effect.gen(function*() {
        const toolSet = yield* Ref.get(tools)
        const messages: Array<Message> = [...start]
        for (let step = 1;; step++) {
          const response = yield* modelTurn({ history: [...messages], tools: toolSet.tools, responseFormat }, emit)
          // Nothing to add to on a fresh client: keep the turn's record rather than build an equal one.
          yield* Ref.update(usage, (u) => (u === Usage.empty ? response.usage : Usage.add(u, response.usage)))
          if (emit !== undefined) yield* emit(new UsageEvent({ usage: response.usage }))
          if (response.toolCalls.length === 0) {
            // A structured answer joins the history as its JSON, so the model sees what it answered.
            const text = response.structured !== undefined ? JSON.stringify(response.structured) : response.text
            messages.push({ role: "assistant", text, toolCalls: [] })
            return { messages, response }
          }
          messages.push({ role: "assistant", text: response.text, toolCalls: response.toolCalls })
          const results = yield* runTools(toolSet, response.toolCalls, emit)
          messages.push({ role: "tool", results })
          if (step >= maxSteps) {
            return yield* new MaxStepsError({
              maxSteps,
              message: `The model still called tools after ${maxSteps} steps`
            })
          }
        }
      })

    /** One user turn, all or nothing: history and the `add` buffer change only on success. */
    const converse = <A>(
      prompt: string,
      responseFormat: ResponseFormat | undefined,
      finish: (response: TurnResponse) => Effect.Effect<A, ChatError>,
      emit?: Emit
    ): Effect.Effect<A, ChatError> =>
      lock.withPermits(1)(Effect.gen(function*() {
        const buffered = yield* Ref.get(pending)
        const before = yield* Ref.get(history)
        const user: Message = { role: "user", content: [...buffered, prompt].join("\n\n") }
        const { messages, response } = yield* runLoop([...before, user], responseFormat, emit)
        const value = yield* finish(response)
        yield* Ref.set(history, messages)
        yield* Ref.set(pending, [])
        return value
      }))

    const add = Effect.fn("ChatClient.add")(function*(prompt: string) {
      yield* requireText("added message", prompt)
      yield* lock.withPermits(1)(Ref.update(pending, (p) => [...p, prompt]))
    })

    // `chat` and `ask` run once per user turn, so their spans are made directly: the same name and
    // `chat.provider` attribute as `Effect.fn` would give, without capturing a call-site stack
    // trace on every call (`Effect.fn` builds an `Error` per call for that).
    const spanOptions = { attributes: { "chat.provider": options.provider }, captureStackTrace: false }
    const answerText = (response: TurnResponse) => Effect.succeed(response.text)

    const chat = (prompt: string): Effect.Effect<string, ChatError> =>
      Effect.withSpan(
        Effect.zipRight(requireText("prompt", prompt), converse(prompt, undefined, answerText)),
        "ChatClient.chat",
        spanOptions
      )

    const ask = <A, I>(question: string, schema: Schema.Schema<A, I>): Effect.Effect<A, ChatError> =>
      Effect.withSpan(
        Effect.zipRight(
          requireText("question", question),
          Effect.flatMap(
            responseFormatFor(schema),
            ({ format, wrapped }) => converse(question, format, (response) => decodeAnswer(schema, response, wrapped))
          )
        ),
        "ChatClient.ask",
        spanOptions
      )

    const setTools = Effect.fn("ChatClient.setTools")(function*<R>(list: ReadonlyArray<Tool.Tool<R>>) {
      const set = yield* Tool.capture(list)
      yield* lock.withPermits(1)(Ref.set(tools, set))
    })

    const chatStream = (prompt: string) =>
      streamOf((emit) =>
        Effect.zipRight(
          requireText("prompt", prompt),
          converse(prompt, undefined, (response) => Effect.succeed(response.text), emit)
        )
      ).pipe(Stream.withSpan("ChatClient.chatStream", { attributes: { "chat.provider": options.provider } }))

    return { add, chat, chatStream, ask, setTools, usage: Ref.get(usage) } satisfies ChatClientService
  })
