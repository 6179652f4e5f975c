/**
 * An `@effect/ai` `Toolkit` with its handlers as this library's tools, so one tool definition
 * serves `LanguageModel.generateText` and every provider's `setTools` (and `McpBridge`).
 *
 * Parameters are decoded with the toolkit's own schemas and results encoded with its success
 * (and failure) schemas, by the toolkit's `handle` — exactly as `@effect/ai` runs them itself.
 * What the model sees is the JSON of the encoded result.
 *
 * `failureMode`:
 * - `"error"` (the default): a failing handler becomes an error result (`isError: true`,
 *   `Error: <message>`), like every other tool here: the model sees it and the loop goes on. The
 *   chat call does not fail (in `@effect/ai`'s own loop `generateText` would fail instead).
 * - `"return"`: the failure is encoded with the tool's `failure` schema and sent as an error
 *   result whose text is `Error: <JSON of the encoded failure>`.
 *
 * @since 0.1.0
 * @module
 */
import * as AiError from "@effect/ai/AiError"
import * as AiTool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Predicate from "effect/Predicate"
import * as Tool from "../services/Tool.js"

/** What the handlers of `Tools` need beyond the toolkit's handler layer (their schemas' context). */
export type Requirements<Tools extends Record<string, AiTool.Any>> = AiTool.Requirements<Tools[keyof Tools]>

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

const describeAiError = (error: AiError.AiError): string => {
  const cause = "cause" in error && ParseResult.isParseError(error.cause)
    ? `: ${ParseResult.TreeFormatter.formatErrorSync(error.cause)}`
    : ""
  return `${error.description ?? error.message}${cause}`
}

const parseInput = (name: string, input: unknown): Effect.Effect<unknown, Tool.ToolFailure> => {
  if (typeof input !== "string") return Effect.succeed(input ?? {})
  if (input.trim() === "") return Effect.succeed({})
  return Effect.try({
    try: () => JSON.parse(input) as unknown,
    catch: (e) =>
      new Tool.ToolFailure({
        reason: "InvalidArguments",
        message: `Invalid arguments for tool ${name}: not JSON (${describe(e)})`
      })
  })
}

const toJson = (name: string, value: unknown): Effect.Effect<string, Tool.ToolFailure> =>
  Effect.try({
    try: () => JSON.stringify(value === undefined ? null : value),
    catch: (e) =>
      new Tool.ToolFailure({
        reason: "UnencodableResult",
        message: `Tool ${name} returned a result that cannot be encoded as JSON: ${describe(e)}`
      })
  })

const inputSchemaOf = (tool: AiTool.Any): Tool.JsonSchemaObject => {
  const { $schema: _ignored, ...schema } = AiTool.getJsonSchemaFromSchemaAst(tool.parametersSchema.ast) as unknown as {
    readonly [key: string]: unknown
  }
  // An empty parameters struct renders as "object or array"; a tool input is always an object.
  return schema.type === "object"
    ? schema as Tool.JsonSchemaObject
    : { type: "object", properties: {}, additionalProperties: false }
}

/**
 * Why tools of a toolkit cannot be served: provider-defined tools (they run at one vendor, not
 * in-process) and names our providers cannot send. `undefined` when all are fine.
 */
export const rejectedTools = (tools: ReadonlyArray<AiTool.Any>): string | undefined => {
  const providerDefined = tools.filter(AiTool.isProviderDefined).map((tool) => tool.name)
  const badNames = tools.filter((tool) => !AiTool.isProviderDefined(tool) && !Tool.NamePattern.test(tool.name))
    .map((tool) => JSON.stringify(tool.name))
  const reasons = [
    ...(providerDefined.length === 0 ? [] : [
      `provider-defined tools cannot run in-process (${providerDefined.join(", ")}); ` +
      "remove them from the toolkit or use that vendor's @effect/ai provider"
    ]),
    ...(badNames.length === 0 ? [] : [
      `tool names must match ${Tool.NamePattern.source} (${badNames.join(", ")}); rename them`
    ])
  ]
  return reasons.length === 0 ? undefined : reasons.join("; ")
}

const fromHandleError = (error: unknown): Effect.Effect<never, Tool.ToolFailure> => {
  // The toolkit reports its own decode/encode problems as AiErrors of module "Toolkit".
  if (AiError.isAiError(error) && "module" in error && error.module === "Toolkit") {
    return Effect.fail(
      new Tool.ToolFailure({
        reason: error._tag === "MalformedOutput" ? "InvalidArguments" : "UnencodableResult",
        message: describeAiError(error)
      })
    )
  }
  return Effect.fail(new Tool.ToolFailure({ reason: "HandlerFailed", message: describe(error) }))
}

const one = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.WithHandler<Tools>,
  tool: AiTool.Any
): Tool.Tool<Requirements<Tools>> => ({
  [Tool.TypeId]: Tool.TypeId,
  name: tool.name,
  description: tool.description ?? "",
  inputSchema: inputSchemaOf(tool),
  run: (input) =>
    parseInput(tool.name, input).pipe(
      Effect.flatMap((params) =>
        (toolkit.handle(tool.name, params as never) as Effect.Effect<
          AiTool.HandlerResult<AiTool.Any>,
          unknown,
          Requirements<Tools>
        >).pipe(Effect.catchAll(fromHandleError))
      ),
      Effect.flatMap((outcome) =>
        outcome.isFailure
          ? Effect.flatMap(
            toJson(tool.name, outcome.encodedResult),
            (message) => Effect.fail(new Tool.ToolFailure({ reason: "HandlerFailed", message }))
          )
          : toJson(tool.name, outcome.encodedResult)
      )
    )
})

/**
 * A toolkit whose handlers are resolved (`yield* MyToolkit`) as tools for `setTools` or
 * `McpBridge`. Fails with `InvalidToolsError` naming every provider-defined tool and every name
 * our providers cannot accept.
 *
 * @example
 * ```ts
 * import { Tool as AiTool, Toolkit } from "@effect/ai"
 * import { Effect, Schema } from "effect"
 * import { ChatClient } from "effect-chat-bridge"
 * import { AiToolkit } from "effect-chat-bridge/effect-ai"
 *
 * const Add = AiTool.make("add", {
 *   parameters: { a: Schema.Number, b: Schema.Number },
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
 */
export const toTools: <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.WithHandler<Tools>
) => Effect.Effect<ReadonlyArray<Tool.Tool<Requirements<Tools>>>, Tool.InvalidToolsError> = Effect.fn(
  "AiToolkit.toTools"
)(function*<Tools extends Record<string, AiTool.Any>>(toolkit: Toolkit.WithHandler<Tools>) {
  const tools = Object.values(toolkit.tools) as ReadonlyArray<AiTool.Any>
  const rejected = rejectedTools(tools)
  if (rejected !== undefined) return yield* new Tool.InvalidToolsError({ message: `Toolkit rejected: ${rejected}` })
  const converted = tools.map((tool) => one(toolkit, tool))
  // Duplicates and schema roots are checked the same way as for every tool set.
  yield* Tool.validate(converted)
  return converted
})

/**
 * {@link toTools} for a toolkit whose handlers come from the context (its `toLayer`).
 */
export const fromToolkit = <Tools extends Record<string, AiTool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>
): Effect.Effect<ReadonlyArray<Tool.Tool<Requirements<Tools>>>, Tool.InvalidToolsError, AiTool.HandlersFor<Tools>> =>
  Effect.flatMap(toolkit, toTools)
