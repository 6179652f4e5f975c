/**
 * An `effect/ai` `Toolkit` with its handlers as this library's tools, so one tool definition
 * serves `LanguageModel.generateText` and every provider's `setTools` (and `McpBridge`).
 *
 * **Details**
 *
 * Parameters are decoded with the toolkit's own schemas and results encoded with its success
 * (and failure) schemas, by the toolkit's `handle` — exactly as `effect/ai` runs them itself.
 * What the model sees is the JSON of the encoded result, or the tool's `toModelOutput` (text and
 * images) when it has one. Bad arguments are reported in this library's parse-error text
 * (`Invalid arguments for tool add: Expected string, actual 40 at ["b"]`).
 *
 * `failureMode`:
 * - `"error"` (the default): a failing handler becomes an error result (`isError: true`,
 *   `Error: <message>`), like every other tool here: the model sees it and the loop goes on. The
 *   chat call does not fail (in `effect/ai`'s own loop `generateText` would fail instead).
 * - `"return"`: the failure is encoded with the tool's `failure` schema and sent as an error
 *   result whose text is `Error: <JSON of the encoded failure>`.
 *
 * **Gotchas**
 *
 * `Tool.dynamic` tools are passed through: a JSON Schema given as `parameters` is sent to the
 * model unchanged and the handler gets the arguments as they came. What cannot be honoured is
 * refused when the tools are built: provider-defined tools (they run at one vendor) and tools with
 * `needsApproval` (every loop here runs a call as soon as the model makes it), unless
 * `{ approvals: true }` is passed for a client that parks such calls (`ClaudeLocal`).
 *
 * @summary An `effect/ai` `Toolkit` with its handlers as this library's tools, for every provider.
 * @group effect/ai
 * @since 0.1.0
 * @module
 */
import * as AiError from "effect/ai/AiError"
import type * as Prompt from "effect/ai/Prompt"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ParseErrorText from "../internal/core/parseErrorText.ts"
import * as ToolJsonSchema from "../internal/core/toolJsonSchema.ts"
import * as Content from "../services/Content.ts"
import * as Tool from "../services/Tool.ts"

/**
 * What the handlers of `Tools` need beyond the toolkit's handler layer (their schemas' and dependencies' services).
 *
 * @category models
 * @since 1.0.0
 */
export type Requirements<Tools extends Record<string, AiTool.Any>> = AiTool.HandlerServices<Tools[keyof Tools]>

const describe = (u: unknown): string => {
  if (u instanceof Error) return u.message
  if (typeof u === "string") return u
  if (Predicate.hasProperty(u, "message") && typeof u.message === "string") return u.message
  try {
    return JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

const parseInput = (name: string, input: unknown): Effect.Effect<unknown, Tool.ToolFailure> => {
  if (typeof input !== "string") return Effect.succeed(input ?? {})
  if (input.trim() === "") return Effect.succeed({})
  return Effect.try({
    try: () => JSON.parse(input) as unknown,
    catch: (e) =>
      new Tool.ToolFailure({
        reason: new Tool.InvalidArguments({ message: `Invalid arguments for tool ${name}: not JSON (${describe(e)})` })
      })
  })
}

const toJson = (name: string, value: unknown): Effect.Effect<string, Tool.ToolFailure> =>
  Effect.try({
    try: () => JSON.stringify(value === undefined ? null : value),
    catch: (e) =>
      new Tool.ToolFailure({
        reason: new Tool.UnencodableResult({
          message: `Tool ${name} returned a result that cannot be encoded as JSON: ${describe(e)}`
        })
      })
  })

const emptyObject: Tool.JsonSchemaObject = { type: "object", properties: {}, additionalProperties: false }

const isStruct = (schema: unknown): schema is { readonly fields: Schema.Struct.Fields } =>
  Schema.isSchema(schema) && Predicate.hasProperty(schema, "fields") && Predicate.isObject(schema.fields)

/**
 * The JSON Schema the model sees: a dynamic tool's own JSON Schema as given; a struct in the
 * library's shape (`Tool.make`'s: object root, plain `number`, `additionalProperties: false`);
 * no parameters as the empty object. Anything else as `effect/ai` renders it (a non-object root is
 * then refused by `Tool.validate`).
 */
const inputSchemaOf = (tool: AiTool.Any): Tool.JsonSchemaObject => {
  if (AiTool.isDynamic(tool) && tool.jsonSchema !== undefined) return tool.jsonSchema as Tool.JsonSchemaObject
  const schema = tool.parametersSchema
  if (schema === AiTool.EmptyParams) return emptyObject
  // `Tool.dynamic` without parameters: the handler takes any object.
  if (schema === Schema.Unknown) return { type: "object" }
  if (isStruct(schema)) return ToolJsonSchema.fromFields(schema.fields)
  const { $schema: _ignored, ...rest } = AiTool.getJsonSchema(tool) as { readonly [key: string]: unknown }
  return rest as Tool.JsonSchemaObject
}

const hasApproval = (tool: AiTool.Any): boolean => tool.needsApproval !== undefined && tool.needsApproval !== false

/**
 * How {@link toTools} converts a toolkit.
 *
 * @category config
 * @since 2.2.0
 */
export interface ConvertOptions {
  /**
   * Tools with `needsApproval` (a boolean or a function) become tools whose every call waits for
   * an approval (`Tool.needsApproval`), instead of being refused. Only for a client that honours
   * it (`ClaudeLocal`: the call is parked and the turn ends with `ApprovalRequired`); on any other
   * the call would run unasked. `ChatLanguageModel` sets it for such clients.
   */
  readonly approvals?: boolean | undefined
}

/**
 * Why tools of a toolkit cannot be served: provider-defined tools (they run at one vendor, not
 * in-process), tools that need approval (no loop here can pause a call) and names our providers
 * cannot send. `undefined` when all are fine.
 *
 * @category utils
 * @since 1.0.0
 */
export const rejectedTools = (
  tools: ReadonlyArray<AiTool.Any>,
  options?: ConvertOptions
): string | undefined => {
  const providerDefined = tools.filter(AiTool.isProviderDefined).map((tool) => tool.name)
  const userTools = tools.filter((tool) => !AiTool.isProviderDefined(tool))
  const approval = options?.approvals === true ? [] : userTools.filter(hasApproval).map((tool) => tool.name)
  const badNames = userTools.filter((tool) => !Tool.NamePattern.test(tool.name)).map((tool) =>
    JSON.stringify(tool.name)
  )
  const reasons = [
    ...(providerDefined.length === 0 ? [] : [
      `provider-defined tools cannot run in-process (${providerDefined.join(", ")}); ` +
      "remove them from the toolkit or use that vendor's effect/ai provider"
    ]),
    ...(approval.length === 0 ? [] : [
      `needsApproval cannot be honoured (${approval.join(", ")}): the provider's tool loop (or the claude CLI's) ` +
      "runs a call as soon as the model makes it; remove needsApproval and decide inside the handler, " +
      "or restrict the tool with a tool policy"
    ]),
    ...(badNames.length === 0 ? [] : [
      `tool names must match ${Tool.NamePattern.source} (${badNames.join(", ")}); rename them`
    ])
  ]
  return reasons.length === 0 ? undefined : reasons.join("; ")
}

/** A `toModelOutput` result as the parts a tool can return: text, and images (other files named). */
const toolContentOf = (parts: ReadonlyArray<Prompt.ToolModelOutputPart>): Content.ToolContent =>
  Content.toolContent(parts.map((part): Content.TextPart | Content.ImagePart => {
    if (part.type === "text") return Content.text(part.text)
    if (Content.ImageMediaTypes.includes(part.mediaType)) {
      return part.data instanceof URL ? Content.imageUrl(part.data.href) : Content.image(part.data, part.mediaType)
    }
    return Content.text(`[${part.mediaType}${part.fileName === undefined ? "" : ` ${part.fileName}`} omitted]`)
  }))

const unencodable = (name: string, error: unknown): Tool.ToolFailure => {
  const reason = AiError.isAiError(error) ? error.reason : undefined
  return new Tool.ToolFailure({
    reason: new Tool.UnencodableResult({
      message:
        reason !== undefined && (reason._tag === "ToolResultEncodingError" || reason._tag === "InvalidToolResultError")
          ? `Tool ${name} returned a result that does not match its success schema: ${reason.description}`
          : describe(error)
    })
  })
}

/** A failure of `handle`'s stream: the handler's own error, or the toolkit's result encoding (`failureOrigin`). */
const fromHandleCause = (name: string) => (cause: Cause.Cause<unknown>): Effect.Effect<never, Tool.ToolFailure> => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isNone(failure)) return Effect.failCause(cause as Cause.Cause<never>)
  const origin = Context.get(Cause.annotations(cause), Toolkit.FailureOrigin)
  return Effect.fail(
    origin === "handler"
      ? new Tool.ToolFailure({ reason: new Tool.HandlerFailed({ message: describe(failure.value) }) })
      : unencodable(name, failure.value)
  )
}

const one = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.WithHandler<Tools>,
  tool: AiTool.Any,
  options?: ConvertOptions
): Tool.Tool<Requirements<Tools>> => {
  // Decoded here first so the model gets this library's parse-error text (message, value, path);
  // the toolkit decodes again with the same schema and cannot fail then.
  const decode = Schema.isSchema(tool.parametersSchema)
    ? Schema.decodeUnknownEffect(tool.parametersSchema as Schema.Codec<unknown, unknown>, ParseErrorText.parseOptions)
    : Effect.succeed
  const run = (input: unknown) =>
    parseInput(tool.name, input).pipe(
      Effect.tap((params) =>
        Effect.mapError(decode(params), (error) =>
          new Tool.ToolFailure({
            reason: new Tool.InvalidArguments({
              message: `Invalid arguments for tool ${tool.name}: ${ParseErrorText.format(error)}`
            })
          }))
      ),
      Effect.flatMap((params) =>
        (toolkit.handle(tool.name, params as never) as Effect.Effect<
          Stream.Stream<AiTool.HandlerResult<AiTool.Any>, unknown, Requirements<Tools>>,
          AiError.AiError,
          Requirements<Tools>
        >).pipe(
          Effect.flatMap((results) =>
            Stream.runLast(Stream.filter(results, (result) => !result.preliminary)).pipe(
              Effect.catchCause(fromHandleCause(tool.name))
            )
          ),
          Effect.catchTag("AiError", (error) => Effect.fail(unencodable(tool.name, error)))
        )
      ),
      Effect.flatMap((last): Effect.Effect<string | Content.ToolContent, Tool.ToolFailure> => {
        if (Option.isNone(last)) {
          return Effect.fail(
            new Tool.ToolFailure({
              reason: new Tool.UnencodableResult({ message: `Tool ${tool.name} returned no result` })
            })
          )
        }
        const outcome = last.value
        if (!outcome.isFailure) {
          return outcome.modelOutput === undefined
            ? toJson(tool.name, outcome.encodedResult)
            : Effect.succeed(toolContentOf(outcome.modelOutput))
        }
        // failureMode "return": a result the toolkit could not produce is not the tool's failure.
        if (outcome.failureOrigin !== "handler" && AiError.isAiError(outcome.result)) {
          return Effect.fail(unencodable(tool.name, outcome.result))
        }
        return Effect.flatMap(
          toJson(tool.name, outcome.encodedResult),
          (message) => Effect.fail(new Tool.ToolFailure({ reason: new Tool.HandlerFailed({ message }) }))
        )
      })
    )
  return {
    [Tool.TypeId]: Tool.TypeId,
    name: tool.name,
    description: AiTool.getDescription(tool) ?? "",
    inputSchema: inputSchemaOf(tool),
    ...(options?.approvals === true && hasApproval(tool) ? { needsApproval: true } : {}),
    run
  }
}

/**
 * A toolkit whose handlers are resolved (`yield* MyToolkit`) as tools for `setTools` or
 * `McpBridge`. Fails with `InvalidToolsError` naming every provider-defined tool, every tool with
 * `needsApproval` and every name our providers cannot accept.
 *
 * **Example** (Giving an effect/ai toolkit to a ChatClient)
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Tool as AiTool, Toolkit } from "effect/ai"
 * import { ChatClient } from "effect-chat-bridge"
 * import { AiToolkit } from "effect-chat-bridge/effect-ai"
 *
 * const Add = AiTool.make("add", {
 *   parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
 *   success: Schema.Number
 * })
 * const Math = Toolkit.make(Add)
 * const MathLive = Math.toLayer({ add: ({ a, b }) => Effect.succeed(a + b) })
 *
 * const program = Effect.gen(function*() {
 *   const chat = yield* ChatClient.ChatClient
 *   yield* chat.setTools(yield* AiToolkit.toTools(yield* Math))
 *   return yield* chat.chat("What is 2 + 3?")
 * })
 * ```
 *
 * @category utils
 * @since 1.0.0
 */
export const toTools: <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.WithHandler<Tools>,
  options?: ConvertOptions
) => Effect.Effect<ReadonlyArray<Tool.Tool<Requirements<Tools>>>, Tool.InvalidToolsError> = Effect.fn(
  "AiToolkit.toTools"
)(function*<Tools extends Record<string, AiTool.Any>>(toolkit: Toolkit.WithHandler<Tools>, options?: ConvertOptions) {
  const tools = Object.values(toolkit.tools) as ReadonlyArray<AiTool.Any>
  const rejected = rejectedTools(tools, options)
  if (rejected !== undefined) return yield* new Tool.InvalidToolsError({ message: `Toolkit rejected: ${rejected}` })
  const converted = tools.map((tool) => one(toolkit, tool, options))
  // Duplicates and schema roots are checked the same way as for every tool set.
  yield* Tool.validate(converted)
  return converted
})

/**
 * {@link toTools} for a toolkit whose handlers come from the context (its `toLayer`).
 *
 * @category constructors
 * @since 1.0.0
 */
export const fromToolkit = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>
): Effect.Effect<ReadonlyArray<Tool.Tool<Requirements<Tools>>>, Tool.InvalidToolsError, AiTool.HandlersFor<Tools>> =>
  Effect.flatMap(toolkit, toTools)
