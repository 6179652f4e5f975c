/**
 * In-process tools a model can call, and the one execution path (`executeTool`) that every
 * provider and the MCP bridge go through, so a tool behaves the same wherever it is called from.
 *
 * @summary In-process tools a model can call, and the one path (`executeTool`) that runs them everywhere.
 * @group Tools
 * @since 0.1.0
 * @module
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Tracer from "effect/Tracer"
import * as ParseErrorText from "../internal/core/parseErrorText.ts"
import * as ToolJsonSchema from "../internal/core/toolJsonSchema.ts"
import { toolSpan } from "../internal/core/toolSpan.ts"
import { ImagePart, ToolContent } from "./Content.ts"

/**
 * A JSON Schema document, as plain data.
 *
 * @category models
 * @since 1.0.0
 */
export type JsonSchema = ToolJsonSchema.JsonSchema

/**
 * A JSON Schema whose root describes an object, which is what every provider and MCP require.
 *
 * @category models
 * @since 1.0.0
 */
export type JsonSchemaObject = ToolJsonSchema.JsonSchemaObject

/**
 * Marks values built by {@link make} and {@link dynamic}.
 *
 * @category models
 * @since 1.0.0
 */
export const TypeId: unique symbol = Symbol.for("effect-chat-bridge/Tool")
/**
 * The type of the {@link Tool} brand.
 *
 * @category models
 * @since 1.0.0
 */
export type TypeId = typeof TypeId

/**
 * The arguments are not JSON or do not decode with the tool's parameters. Not retryable: the same
 * arguments fail again (the model sees the message and may send others).
 *
 * @since 2.0.0
 * @category errors
 */
export class InvalidArguments
  extends Schema.TaggedError<InvalidArguments>("effect-chat-bridge/ToolFailure/InvalidArguments")(
    "InvalidArguments",
    {
      /** Names the tool and what is wrong with the arguments. */
      message: Schema.String
    }
  )
{
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The handler failed (its error's message is kept). Not retryable here: whether the handler's
 * own failure is transient is the handler's business, and the model decides what to do next.
 *
 * @since 2.0.0
 * @category errors
 */
export class HandlerFailed extends Schema.TaggedError<HandlerFailed>("effect-chat-bridge/ToolFailure/HandlerFailed")(
  "HandlerFailed",
  {
    /** The handler error's message; the model sees `Error: <message>`. */
    message: Schema.String
  }
) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The handler's result cannot be sent: it is not JSON-encodable, does not match the tool's
 * `success` schema, or there is none. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class UnencodableResult extends Schema.TaggedError<UnencodableResult>(
  "effect-chat-bridge/ToolFailure/UnencodableResult"
)("UnencodableResult", {
  /** Names the tool and why its result cannot be encoded. */
  message: Schema.String
}) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Why a tool run did not produce a result.
 *
 * @since 2.0.0
 * @category schemas
 */
export const ToolFailureReason: Schema.Union<
  [typeof InvalidArguments, typeof HandlerFailed, typeof UnencodableResult]
> = Schema.Union([InvalidArguments, HandlerFailed, UnencodableResult])

/**
 * The type of {@link ToolFailureReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type ToolFailureReason = typeof ToolFailureReason.Type

/**
 * Why a tool run did not produce a result; `executeTool` turns it into an error result whose text
 * is the reason's message (`Error: <message>` for `HandlerFailed`). Select a reason with
 * `Effect.catchReason("ToolFailure", "InvalidArguments", …)`.
 *
 * @since 2.0.0
 * @category errors
 */
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  /** Arguments that are not JSON or do not decode, a failing handler, or a result that cannot be sent. */
  reason: ToolFailureReason
}) {
  /** The reason's message: sent to the model as the error result's text. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether running the call again may succeed; the reason decides (no reason is retryable today). */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * A tool: a name, a description, the JSON Schema of its arguments and a handler. `R` is what the
 * handler needs; it is provided from the context where the tools are set.
 *
 * @category models
 * @since 1.0.0
 */
export interface Tool<R = never> {
  /** The brand set by {@link make} and {@link dynamic}. */
  readonly [TypeId]: TypeId
  /** What the model calls it; must match {@link NamePattern} and be unique in a set. */
  readonly name: string
  /** Tells the model what the tool does and when to use it. */
  readonly description: string
  /** The JSON Schema of the arguments, sent to the model. */
  readonly inputSchema: JsonSchemaObject
  /**
   * Decodes `input`, runs the handler and encodes its result as the text sent to the model (or
   * passes on the handler's `ToolContent`, text with images).
   */
  readonly run: (input: unknown) => Effect.Effect<string | ToolContent, ToolFailure, R>
  /**
   * Each call waits for an approval first: the Claude Code providers ask `canUseTool` (default:
   * defer the call until `ClaudeApprovals.approve` or `deny`; see the approvals guide).
   *
   * @since 2.1.0
   */
  readonly needsApproval?: boolean | undefined
}

/**
 * The runtime name rule shared by the Anthropic, OpenAI and Gemini APIs and MCP clients.
 *
 * @category models
 * @since 1.0.0
 */
export const NamePattern = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * A request from the model to run a tool. `arguments` is the decoded JSON object or its JSON text.
 *
 * @category schemas
 * @since 1.0.0
 */
export class ToolCall extends Schema.Class<ToolCall>("effect-chat-bridge/ToolCall")({
  /** The provider's call id, echoed back in the {@link ToolResult}. */
  id: Schema.String,
  /** The tool to run. */
  name: Schema.String,
  /** The arguments: a decoded JSON object, or its JSON text. */
  arguments: Schema.Unknown
}) {}

/**
 * What goes back to the model for one call. Failures are results too, with `isError: true`.
 *
 * @category schemas
 * @since 1.0.0
 */
export class ToolResult extends Schema.Class<ToolResult>("effect-chat-bridge/ToolResult")({
  /** The id of the {@link ToolCall} this answers. */
  callId: Schema.String,
  /** The tool that was called. */
  name: Schema.String,
  /** The text sent to the model: the encoded result, or the error message. */
  content: Schema.String,
  /** True when the call failed; the model sees `content` as an error. */
  isError: Schema.Boolean,
  /** Images the tool returned with its text (a `ToolContent` result), in order. */
  images: Schema.optional(Schema.Array(ImagePart))
}) {}

/**
 * A tool set was rejected: a bad name, a duplicate, or a schema that is not an object schema.
 *
 * @category errors
 * @since 1.0.0
 */
export class InvalidToolsError extends Schema.TaggedError<InvalidToolsError>()("InvalidToolsError", {
  /** Names the offending tool and the rule it broke. */
  message: Schema.String
}) {}

const describeUnknown = (u: unknown): string => {
  if (u instanceof Error) return u.message
  if (typeof u === "string") return u
  if (typeof u === "object" && u !== null && "message" in u && typeof u.message === "string") return u.message
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

const encodeJson = (toolName: string, value: unknown): Effect.Effect<string, ToolFailure> =>
  Effect.try({
    try: () => JSON.stringify(value === undefined ? null : value),
    catch: (e) =>
      new ToolFailure({
        reason: new UnencodableResult({
          message: `Tool ${toolName} returned a result that cannot be encoded as JSON: ${describeUnknown(e)}`
        })
      })
  })

const parseArguments = (toolName: string, input: unknown): Effect.Effect<unknown, ToolFailure> => {
  if (typeof input !== "string") return Effect.succeed(input ?? {})
  if (input.trim() === "") return Effect.succeed({})
  return Effect.try({
    try: () => JSON.parse(input) as unknown,
    catch: (e) =>
      new ToolFailure({
        reason: new InvalidArguments({
          message: `Invalid arguments for tool ${toolName}: not JSON (${describeUnknown(e)})`
        })
      })
  })
}

const handlerFailed = (error: unknown) =>
  new ToolFailure({ reason: new HandlerFailed({ message: describeUnknown(error) }) })

const guarded = <A, E, R>(
  options: { readonly uninterruptible?: boolean | undefined },
  handler: Effect.Effect<A, E, R>
) => options.uninterruptible === true ? Effect.uninterruptible(handler) : handler

/**
 * Defines a tool whose arguments are an Effect Schema struct. The JSON Schema sent to the model is
 * derived from the fields (object root, plain `number`, `additionalProperties: false`); arguments
 * are decoded with the JSON codec of the fields (`Schema.toCodecJson`), which is what that schema
 * describes, before the handler runs. With `success`, the handler's result is encoded with that
 * schema's JSON codec before being sent as JSON.
 *
 * **Details**
 *
 * The tool itself never fails: bad arguments, a handler's failure or defect and an unencodable
 * result reach the model as an error result (see {@link executeTool}). A bad name or a
 * non-object schema is rejected when the tools are set, with `InvalidToolsError`.
 *
 * **Gotchas**
 *
 * A handler is interrupted with the turn that called it: a Claude Code turn stopped by
 * `ClaudeLive.interrupt`, by a `steer` with `when: "now"` or by interrupting the `chat` fiber (the
 * CLI cancels the MCP call), or any provider's turn whose fiber is interrupted. With
 * `uninterruptible: true` it finishes instead (as under `Effect.uninterruptible`), but the
 * stopped turn drops its result: the CLI tells the model on the next turn that the call was
 * interrupted, not that it completed (the claude-code docs page quotes what the model sees).
 *
 * **Example** (Defining a tool)
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Tool } from "effect-chat-bridge"
 *
 * const add = Tool.make("add", {
 *   description: "Adds two numbers",
 *   parameters: { a: Schema.Number, b: Schema.Number },
 *   handler: ({ a, b }) => Effect.succeed(a + b)
 * })
 * ```
 *
 * @category constructors
 * @since 1.0.0
 */
export const make = <Fields extends Schema.Struct.Fields, A, E = never, R = never, I = A>(
  name: string,
  options: {
    readonly description: string
    readonly parameters: Fields
    readonly success?: Schema.Codec<A, I>
    readonly handler: (params: Schema.Struct.Type<Fields>) => Effect.Effect<A, E, R>
    /** Each call waits for an approval first (see {@link Tool.needsApproval}). */
    readonly needsApproval?: boolean | undefined
    /**
     * Whether the handler runs to its end when the turn that called it is stopped (default: it is
     * interrupted with the turn, and its finalizers run). For a side effect that must not stop
     * half-way; the stopped turn drops its result (see **Gotchas**). Since 2.1.0.
     */
    readonly uninterruptible?: boolean | undefined
  }
): Tool<R | Schema.Struct.DecodingServices<Fields>> => {
  const parameters = Schema.toCodecJson(Schema.Struct(options.parameters))
  const decode = Schema.decodeUnknownEffect(parameters, { ...ParseErrorText.parseOptions, onExcessProperty: "ignore" })
  const success = options.success
  const encodeSuccess = success === undefined
    ? undefined
    : Schema.encodeEffect(Schema.toCodecJson(success), ParseErrorText.parseOptions)
  return {
    [TypeId]: TypeId,
    name,
    description: options.description,
    inputSchema: ToolJsonSchema.fromFields(options.parameters),
    ...(options.needsApproval === true ? { needsApproval: true } : {}),
    run: (input) =>
      parseArguments(name, input).pipe(
        Effect.flatMap((raw) =>
          Effect.mapError(decode(raw), (error) =>
            new ToolFailure({
              reason: new InvalidArguments({
                message: `Invalid arguments for tool ${name}: ${ParseErrorText.format(error)}`
              })
            }))
        ),
        Effect.flatMap((params) =>
          Effect.mapError(
            guarded(options, Effect.suspend(() => options.handler(params as Schema.Struct.Type<Fields>))),
            handlerFailed
          )
        ),
        Effect.flatMap((result): Effect.Effect<string | ToolContent, ToolFailure> => {
          if (result instanceof ToolContent) return Effect.succeed(result)
          if (encodeSuccess !== undefined) {
            return encodeSuccess(result).pipe(
              Effect.mapError((error) =>
                new ToolFailure({
                  reason: new UnencodableResult({
                    message: `Tool ${name} returned a result that does not match its success schema: ${
                      ParseErrorText.format(error)
                    }`
                  })
                })
              ),
              Effect.flatMap((encoded) => encodeJson(name, encoded))
            )
          }
          return typeof result === "string" ? Effect.succeed(result) : encodeJson(name, result)
        })
      )
  }
}

/**
 * Defines a tool from a JSON Schema you already have. The handler receives the parsed arguments
 * as `unknown`: validating them is the handler's job.
 *
 * **Example** (A tool with a raw JSON Schema)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { Tool } from "effect-chat-bridge"
 *
 * const echo = Tool.dynamic("echo", {
 *   description: "Returns its arguments",
 *   inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
 *   handler: (input) => Effect.succeed(input)
 * })
 * ```
 *
 * @category constructors
 * @since 1.0.0
 */
export const dynamic = <A, E = never, R = never>(
  name: string,
  options: {
    readonly description: string
    readonly inputSchema: JsonSchemaObject
    readonly handler: (input: unknown) => Effect.Effect<A, E, R>
    /** Each call waits for an approval first (see {@link Tool.needsApproval}). */
    readonly needsApproval?: boolean | undefined
    /** Whether the handler runs to its end when its turn is stopped, as in {@link make}. Since 2.1.0. */
    readonly uninterruptible?: boolean | undefined
  }
): Tool<R> => ({
  [TypeId]: TypeId,
  name,
  description: options.description,
  inputSchema: options.inputSchema,
  ...(options.needsApproval === true ? { needsApproval: true } : {}),
  run: (input) =>
    parseArguments(name, input).pipe(
      Effect.flatMap((raw) =>
        Effect.mapError(guarded(options, Effect.suspend(() => options.handler(raw))), handlerFailed)
      ),
      Effect.flatMap((result: unknown): Effect.Effect<string | ToolContent, ToolFailure> =>
        typeof result === "string" || result instanceof ToolContent ? Effect.succeed(result) : encodeJson(name, result)
      )
    )
})

/**
 * A validated set of tools, looked up by name; `R` is what their handlers still need.
 *
 * @category models
 * @since 1.0.0
 */
export interface ToolSet<R = never> {
  /** The tools, in the order given. */
  readonly tools: ReadonlyArray<Tool<R>>
  /** The same tools by name. */
  readonly byName: ReadonlyMap<string, Tool<R>>
}

/**
 * The empty tool set.
 *
 * @category constructors
 * @since 1.0.0
 */
export const empty: ToolSet = { tools: [], byName: new Map() }

/**
 * Checks names (pattern, uniqueness) and that each schema is an object schema. Fails with
 * `InvalidToolsError` naming the first offending tool.
 *
 * @category utils
 * @since 1.0.0
 */
export const validate = <R>(tools: ReadonlyArray<Tool<R>>): Effect.Effect<ToolSet<R>, InvalidToolsError> =>
  Effect.suspend(() => {
    const byName = new Map<string, Tool<R>>()
    for (const tool of tools) {
      if (!NamePattern.test(tool.name)) {
        return Effect.fail(
          new InvalidToolsError({ message: `Tool name ${JSON.stringify(tool.name)} must match ${NamePattern.source}` })
        )
      }
      if (byName.has(tool.name)) {
        return Effect.fail(new InvalidToolsError({ message: `Tool name ${tool.name} is used twice` }))
      }
      if (tool.inputSchema.type !== "object") {
        return Effect.fail(
          new InvalidToolsError({ message: `Tool ${tool.name}: inputSchema must have type "object" at its root` })
        )
      }
      byName.set(tool.name, tool)
    }
    return Effect.succeed({ tools: [...tools], byName })
  })

/**
 * Provides the handlers' requirements from `context`, giving a set that needs nothing.
 *
 * @category utils
 * @since 1.0.0
 */
export const provideContext = <R>(set: ToolSet<R>, context: Context.Context<R>): ToolSet => {
  const tools = set.tools.map((tool): Tool => ({
    ...tool,
    run: (input) => Effect.provideContext(tool.run(input), context)
  }))
  return { tools, byName: new Map(tools.map((tool) => [tool.name, tool])) }
}

/**
 * Validates `tools` and captures their requirements from the current context. This is what
 * `setTools` does, so handlers can use the caller's services. Fails with `InvalidToolsError`.
 *
 * @category utils
 * @since 1.0.0
 */
export const capture = <R = never>(tools: ReadonlyArray<Tool<R>>): Effect.Effect<ToolSet, InvalidToolsError, R> =>
  Effect.flatMap(
    validate(tools),
    (set) => Effect.map(Effect.context<R>(), (context) => provideContext(set, withoutCallSite(context)))
  )

/**
 * On Effect 4 log annotations, log spans, metric attributes and the parent span live in the
 * context: captured with the services, they would freeze `setTools`' call site into every later
 * call. Dropped, so each call sees those of the turn (or bridge run) that makes it.
 */
const withoutCallSite = <R>(context: Context.Context<R>): Context.Context<R> =>
  Context.omit(
    References.CurrentLogAnnotations,
    References.CurrentLogSpans,
    References.CurrentStackFrame,
    Metric.CurrentMetricAttributes,
    Tracer.ParentSpan
  )(context) as Context.Context<R>

const errorResult = (call: ToolCall, content: string) =>
  new ToolResult({ callId: call.id, name: call.name, content, isError: true })

// Why a result is an error, for the tool span's `error.type` and the tool-error metric; set by
// `executeTool` on the results it builds and read back from this map, so results stay plain.
const errorTypes = new WeakMap<ToolResult, string>()
const typedError = (call: ToolCall, content: string, type: string) => {
  const result = errorResult(call, content)
  errorTypes.set(result, type)
  return result
}

/** A tool's output as a result: `ToolContent`'s text parts become the text, its images ride along. */
const successResult = (call: ToolCall, output: string | ToolContent): ToolResult => {
  if (typeof output === "string") {
    return new ToolResult({ callId: call.id, name: call.name, content: output, isError: false })
  }
  const text = output.parts.flatMap((p) => p.type === "text" ? [p.text] : []).join("\n\n")
  const images = output.parts.flatMap((p) => p.type === "image" ? [p] : [])
  return new ToolResult({ callId: call.id, name: call.name, content: text, isError: false, images })
}

/**
 * Runs one call. Never fails: an unknown tool, bad arguments, a failing or dying handler and an
 * unencodable result all become results with `isError: true`. Interruption is never swallowed.
 * Traced as a `Tool.executeTool` span with the GenAI `execute_tool` attributes, and measured in
 * `ChatTelemetry.toolDuration` / `ChatTelemetry.toolErrors`.
 *
 * @category utils
 * @since 1.0.0
 */
export const executeTool = <R>(set: ToolSet<R>, call: ToolCall): Effect.Effect<ToolResult, never, R> => {
  const tool = set.byName.get(call.name)
  const run: Effect.Effect<ToolResult, never, R> = tool === undefined
    ? Effect.succeed(typedError(call, `Tool ${call.name} not found`, "ToolNotFound"))
    : Effect.suspend(() => tool.run(call.arguments)).pipe(
      Effect.map((content) => successResult(call, content)),
      Effect.catchCause((cause) => {
        const failure = Cause.findErrorOption(cause)
        if (Option.isSome(failure)) {
          const f = failure.value
          return Effect.succeed(
            typedError(call, f.reason._tag === "HandlerFailed" ? `Error: ${f.message}` : f.message, f.reason._tag)
          )
        }
        const defect = Cause.findDefect(cause)
        if (Result.isSuccess(defect)) {
          return Effect.succeed(
            typedError(call, `tool handler panicked: ${describeUnknown(defect.success)}`, "HandlerPanicked")
          )
        }
        return Effect.interrupt
      })
    )
  return toolSpan(call, run, (result) => errorTypes.get(result) ?? "_OTHER")
}

/**
 * Runs several calls with bounded concurrency (default 5); results keep the calls' order.
 *
 * @category utils
 * @since 1.0.0
 */
export const dispatch = <R>(
  set: ToolSet<R>,
  calls: ReadonlyArray<ToolCall>,
  options?: { readonly concurrency?: number }
): Effect.Effect<ReadonlyArray<ToolResult>, never, R> =>
  Effect.forEach(calls, (call) => executeTool(set, call), { concurrency: Math.max(1, options?.concurrency ?? 5) })
