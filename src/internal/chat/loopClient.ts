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
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import {
  type ChatClientService,
  type ChatError,
  MaxStepsError,
  ProviderError,
  StructuredOutputError,
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
import * as ParseErrorText from "../core/parseErrorText.ts"
import * as ToolJsonSchema from "../core/toolJsonSchema.ts"
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

const MaxAnswerPreview = 2_000

/**
 * Turns an Effect Schema into the object-rooted JSON Schema every provider accepts for structured
 * answers; `wrapped` tells whether the answer sits under `value`.
 */
export const responseFormatFor = (
  schema: Schema.Top
): Effect.Effect<{ readonly format: ResponseFormat; readonly wrapped: boolean }, StructuredOutputError> =>
  Effect.try({
    try: () => {
      const opaque = opaqueDeclaration(schema.ast)
      if (opaque !== undefined) throw new Error(`${opaque} has no JSON form (give it a \`toCodecJson\` annotation)`)
      const json = inlineRootRef(ToolJsonSchema.fromSchema(schema) as Record<string, unknown>)
      if (json["type"] === "object") {
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
 * Effect 4 renders a declaration it has no JSON codec for (`Schema.declare` without a
 * `toCodecJson` annotation) as "any JSON", which no answer can then decode into; v3's generator
 * refused such schemas, and so does `ask` before any request. Returns the offending node's name.
 */
const opaqueDeclaration = (ast: SchemaAST.AST, seen = new Set<SchemaAST.AST>()): string | undefined => {
  if (seen.has(ast)) return undefined
  seen.add(ast)
  const first = (nodes: ReadonlyArray<SchemaAST.AST>) => {
    for (const node of nodes) {
      const found = opaqueDeclaration(node, seen)
      if (found !== undefined) return found
    }
    return undefined
  }
  switch (ast._tag) {
    case "Declaration":
      return ast.annotations?.["toCodecJson"] === undefined && ast.encoding === undefined
        ? String(ast.annotations?.["expected"] ?? ast.annotations?.["identifier"] ?? "a declared type")
        : first(ast.typeParameters)
    case "Objects":
      return first([...ast.propertySignatures.map((p) => p.type), ...ast.indexSignatures.map((i) => i.type)])
    case "Arrays":
      return first([...ast.elements, ...ast.rest])
    case "Union":
      return first(ast.types)
    case "Suspend":
      return opaqueDeclaration(ast.thunk(), seen)
    default:
      return undefined
  }
}

/**
 * A `Schema.Class` (or any schema with an identifier) renders as `{ $ref, $defs }`; providers want
 * the object itself at the root, so the referenced definition is inlined there.
 */
const inlineRootRef = (json: Record<string, unknown>): Record<string, unknown> => {
  const ref = json["$ref"]
  const defs = json["$defs"] as Record<string, Record<string, unknown>> | undefined
  if (typeof ref !== "string" || !ref.startsWith("#/$defs/") || defs === undefined) return json
  const target = defs[ref.slice("#/$defs/".length)]
  if (target === undefined) return json
  const { $ref: _ref, $defs: _defs, ...rest } = json
  return { ...rest, ...target, $defs: defs }
}

/** Decodes a structured answer (given as a value, or as JSON text) with `schema`. */
export const decodeAnswer = <A, I>(
  schema: Schema.Codec<A, I>,
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
    // The JSON codec of the schema: the JSON Schema the model was given describes its encoded side.
    return yield* Schema.decodeUnknownEffect(Schema.toCodecJson(schema))(value, ParseErrorText.parseOptions).pipe(
      Effect.mapError((error) =>
        new StructuredOutputError({
          message: `The answer does not match the schema: ${ParseErrorText.format(error)}`,
          answer: preview
        })
      )
    )
  })
}

const lastText = (messages: ReadonlyArray<Message>): string => {
  const last = messages[messages.length - 1]
  return last?.role === "assistant" ? last.text : ""
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
    const pending = yield* Ref.make<ReadonlyArray<Prompt>>([])
    const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
    const media = options.media ?? textOnly(options.provider)
    const usage = yield* Ref.make(Usage.empty)
    // One conversation: turns must not interleave, or history would be corrupted.
    const lock = yield* Semaphore.make(1)

    const timed = (effect: Effect.Effect<TurnResponse, ProviderError>) =>
      options.requestTimeout === undefined ? effect : effect.pipe(
        Effect.timeoutOrElse({
          duration: options.requestTimeout,
          orElse: () =>
            Effect.fail(
              new ProviderError({
                provider: options.provider,
                kind: "timeout",
                message: `The model did not answer within ${
                  Duration.format(Duration.fromInputUnsafe(options.requestTimeout!))
                }`,
                retryable: true
              })
            )
        })
      )

    const streamEnded = () =>
      new ProviderError({
        provider: options.provider,
        kind: "decode",
        message: "The model's stream ended without a final message",
        retryable: false
      })

    const info: Telemetry.TurnInfo = { provider: options.provider, model: options.model }
    const turnUsage = (response: TurnResponse) => ({
      usage: response.usage,
      finishReason: response.finishReason ?? (response.toolCalls.length > 0 ? "tool_calls" : undefined)
    })

    /** One model turn, traced as a turn span under the `chat`/`ask` span. */
    const modelTurn = (request: TurnRequest, emit: Emit | undefined): Effect.Effect<TurnResponse, ChatError> =>
      Telemetry.turnSpan(info, untracedTurn(request, emit), turnUsage)

    /** One model turn; with `emit`, its text is reported as it arrives (if the model can stream). */
    const untracedTurn = (request: TurnRequest, emit: Emit | undefined): Effect.Effect<TurnResponse, ChatError> => {
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
          (): TurnResponse | undefined => undefined,
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
      prompt: Prompt,
      responseFormat: ResponseFormat | undefined,
      finish: (response: TurnResponse) => Effect.Effect<A, ChatError>,
      emit?: Emit
    ): Effect.Effect<A, ChatError> =>
      lock.withPermits(1)(Effect.gen(function*() {
        const buffered = yield* Ref.get(pending)
        const before = yield* Ref.get(history)
        const user: Message = userMessage([...buffered, prompt])
        yield* Telemetry.recordPrompt(user.content)
        const { messages, response } = yield* runLoop([...before, user], responseFormat, emit)
        const value = yield* finish(response)
        yield* Telemetry.recordAnswer(lastText(messages))
        yield* Ref.set(history, messages)
        yield* Ref.set(pending, [])
        return value
      }))

    const add = Effect.fn("ChatClient.add")(function*(prompt: Prompt) {
      yield* requirePrompt("added message", prompt, media)
      yield* lock.withPermits(1)(Ref.update(pending, (p) => [...p, prompt]))
    })

    // `chat` and `ask` run once per user turn, so their spans are made directly: the same name as
    // `Effect.fn` would give, without capturing a call-site stack trace on every call (`Effect.fn`
    // builds an `Error` per call for that). Metrics measured inside carry the provider label.
    const spanAttributes = Telemetry.clientSpanAttributes(info)
    const spanOptions = { attributes: spanAttributes, captureStackTrace: false }
    const traced = <A>(effect: Effect.Effect<A, ChatError>, name: string) =>
      Effect.withSpan(withMetricAttribute(effect, Attributes.provider, options.provider), name, spanOptions)
    const answerText = (response: TurnResponse) => Effect.succeed(response.text)

    const chat = (prompt: Prompt): Effect.Effect<string, ChatError> =>
      traced(
        Effect.andThen(requirePrompt("prompt", prompt, media), converse(prompt, undefined, answerText)),
        "ChatClient.chat"
      )

    const ask = <A, I>(question: Prompt, schema: Schema.Codec<A, I>): Effect.Effect<A, ChatError> =>
      traced(
        Effect.andThen(
          requirePrompt("question", question, media),
          Effect.flatMap(
            responseFormatFor(schema),
            ({ format, wrapped }) => converse(question, format, (response) => decodeAnswer(schema, response, wrapped))
          )
        ),
        "ChatClient.ask"
      )

    const setTools = Effect.fn("ChatClient.setTools")(function*<R>(list: ReadonlyArray<Tool.Tool<R>>) {
      const set = yield* Tool.capture(list)
      yield* lock.withPermits(1)(Ref.set(tools, set))
    })

    const chatStream = (prompt: Prompt) =>
      streamOf((emit) =>
        withMetricAttribute(
          Effect.andThen(
            requirePrompt("prompt", prompt, media),
            converse(prompt, undefined, (response) => Effect.succeed(response.text), emit)
          ),
          Attributes.provider,
          options.provider
        )
      ).pipe(Stream.withSpan("ChatClient.chatStream", { attributes: spanAttributes }))

    return { add, chat, chatStream, ask, setTools, usage: Ref.get(usage) } satisfies ChatClientService
  })
