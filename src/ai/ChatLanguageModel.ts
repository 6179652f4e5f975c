/**
 * Any ChatClient provider — above all Claude Code (`ClaudeLocal`, `ClaudeAgent`) — as an
 * `effect/ai` `LanguageModel`, running the application's own `Toolkit`.
 *
 * **Details**
 *
 * How it maps:
 * - One `generateText` / `generateObject` / `streamText` is one fresh client, hence one CLI run
 *   (a new session), closed when the call ends.
 * - The toolkit passed to the call is what the model can call: its handlers (taken from the
 *   calling context, where the toolkit's `toLayer` provides them) are set on the client with
 *   {@link AiToolkit.toTools}, so the CLI reaches them through the MCP bridge (`ClaudeLocal`) or
 *   in-process (`ClaudeAgent`). `toolChoice: "none"` sets no tools; `oneOf` narrows them;
 *   `"required"` and `{ tool }` cannot be enforced on the CLI and behave as `"auto"`.
 *   `Tool.dynamic` tools are passed through (their JSON Schema as given). Provider-defined
 *   tools are refused (`InvalidRequestError`), and so are tools with `needsApproval` on a client
 *   that cannot park a call (anything but `ClaudeLocal`).
 * - `needsApproval` (since 2.2.0, `ClaudeLocal`): the CLI parks each call of such a tool and the
 *   turn ends; the call comes back as a `tool-call` part that is not provider-executed, finish
 *   reason `tool-calls` (the parked approval in the finish part's metadata, `approval`), so
 *   `effect/ai` asks with its `tool-approval-request` part. A `tool-approval-response` in the next
 *   prompt is resolved by `effect/ai` itself, as it documents: it runs the handler (once) or
 *   writes the denial, and this call continues from the prompt's history in a fresh session.
 * - The CLI runs its own tool loop. The calls it made come back as `tool-call` and `tool-result`
 *   parts marked `providerExecuted`, so `effect/ai` does not run them again. A call whose
 *   arguments did not decode, or whose handler failed with `failureMode: "error"`, has no typed
 *   result: its parts are left out (`effect/ai` would fail the whole call on them) and the error
 *   text is in the finish part's metadata (`effect-chat-bridge.toolErrors`); the model saw the
 *   error and carried on, so the call does not fail. `failureMode: "return"` failures come back
 *   as `isFailure` results. `tool-call` params are what the model sent (`effect/ai`'s default
 *   "opaque" parameters mode).
 * - `generateObject` uses the CLI's structured output (`ask`, `--json-schema`); its content is
 *   the tool parts of the calls made on the way (ids of our own: `ask` has no event stream),
 *   the object's JSON (the schema's JSON codec, which is also what decodes it) and the finish part.
 * - `streamText` is `chatStream`: text of every model turn, tool parts as they happen, then the
 *   finish part.
 * - The prompt: system messages become the system prompt (replacing a configured one); earlier
 *   messages, which `Chat` resends on every call, are given to the CLI as a transcript ahead of
 *   the last user message, in one fresh session. Nothing persists between calls, so `Chat`'s
 *   history stays the single source of truth (at the cost of resending it). Text only: file parts
 *   fail with `InvalidRequestError`.
 * - Finish reason `stop`; a turn stopped by `ClaudeLive.interrupt` (a client built with
 *   `keepAlive`, whose `ClaudeLive` the application keeps hold of) ends `streamText` and
 *   `generateText` with the text so far and finish reason `other`, the stop in the finish part's
 *   metadata (`effect-chat-bridge.interrupted`: `terminalReason`, `tools`), instead of an error.
 *   An interrupted fiber has no stream left to end. Usage summed over the run in `effect/ai`'s shape (`inputTokens.total`,
 *   `.cacheRead`, `.uncached` = total − cache reads; `outputTokens.total`, `.reasoning`, `.text` =
 *   total − reasoning); cost (when known) in the finish part's metadata.
 * - A `ChatError` becomes an `AiError` whose `reason` says what kind of failure it was (see
 *   {@link toAiError}); the `ChatError` itself, encoded, is in `reason.metadata["effect-chat-bridge"]`
 *   ({@link chatErrorOf} reads it back).
 *
 * @summary Any `ChatClient` provider, Claude Code above all, as an `effect/ai` `LanguageModel`.
 * @group effect/ai
 * @since 0.1.0
 * @module
 */
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Response from "effect/ai/Response"
import type * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Config from "effect/Config"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { approvalsOf, type SessionClient } from "../internal/claude/conversation.ts"
import { invalidRequest, toAiError } from "../internal/effectAi/errors.ts"
import { renderPrompt } from "../internal/effectAi/prompt.ts"
import { type AnyCodec, collectParts, makeTranslator, parseJson } from "../internal/effectAi/translate.ts"
import * as ClaudeLocal from "../layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../layers/NodeSubprocess.ts"
import type { ChatClientService } from "../services/ChatClient.ts"
import { type ChatEvent, Complete, ToolCallEnd, ToolCallStart, UsageEvent } from "../services/ChatEvent.ts"
import * as Content from "../services/Content.ts"
import type { SecretFile } from "../services/SecretFile.ts"
import type { Subprocess } from "../services/Subprocess.ts"
import type * as Tool from "../services/Tool.ts"
import * as AiToolkit from "./AiToolkit.ts"

export { chatErrorOf, MetadataKey, toAiError } from "../internal/effectAi/errors.ts"
export { renderPrompt } from "../internal/effectAi/prompt.ts"
export { encodeUsage, makeTranslator } from "../internal/effectAi/translate.ts"

type Method = "generateText" | "generateObject" | "streamText"

const module = "ChatLanguageModel"

/**
 * What a call asks of the client it builds.
 *
 * @category config
 * @since 1.0.0
 */
export interface ClientOptions {
  /** The prompt's system messages, joined; absent when it has none. */
  readonly systemPrompt?: string | undefined
}

/**
 * Builds one client per call; its scope is the call's.
 *
 * @category models
 * @since 1.0.0
 */
export type MakeClient<R> = (options: ClientOptions) => Effect.Effect<ChatClientService, never, R>

const toolsFor = Effect.fnUntraced(function*(
  options: LanguageModel.ProviderOptions,
  method: Method,
  convert: AiToolkit.ConvertOptions
) {
  if (options.toolChoice === "none" || options.tools.length === 0) return []
  const rejected = AiToolkit.rejectedTools(options.tools, convert)
  if (rejected !== undefined) return yield* invalidRequest(method, "toolkit", `Toolkit rejected: ${rejected}`)
  const context = yield* Effect.context<never>()
  const missing = options.tools.filter((tool) => !context.mapUnsafe.has(tool.id)).map((tool) => tool.name)
  if (missing.length > 0) {
    return yield* invalidRequest(
      method,
      "toolkit",
      `No handler in context for tool(s) ${missing.join(", ")}: provide the toolkit's handler ` +
        "layer (MyToolkit.toLayer(...)) to the effect that calls the LanguageModel."
    )
  }
  const toolkit = yield* (Toolkit.make(...options.tools) as unknown as Effect.Effect<
    Toolkit.WithHandler<Record<string, AiTool.Any>>
  >)
  return yield* Effect.mapError(AiToolkit.toTools(toolkit, convert), toAiError(method))
})

/**
 * `tool` reporting its calls to `observe` as ToolCallStart / ToolCallEnd, with the texts the
 * model gets; for calls (`ask`) that have no event stream.
 */
const observed = (tool: Tool.Tool, observe: (event: ChatEvent) => void): Tool.Tool => {
  let calls = 0
  return {
    ...tool,
    run: (input) =>
      Effect.suspend(() => {
        const id = `${tool.name}_${++calls}`
        const parsed = typeof input === "string" ? parseJson(input) : Result.succeed(input ?? {})
        observe(new ToolCallStart({ id, name: tool.name, arguments: Result.getOrElse(parsed, () => input) }))
        return tool.run(input).pipe(
          Effect.tapError((failure) =>
            Effect.sync(() =>
              observe(
                new ToolCallEnd({
                  id,
                  name: tool.name,
                  result: failure.reason._tag === "HandlerFailed" ? `Error: ${failure.message}` : failure.message,
                  isError: true
                })
              )
            )
          ),
          Effect.tap((result) =>
            // A `ToolContent` result is reported by its text, as the tool loop reports it.
            Effect.sync(() =>
              observe(
                new ToolCallEnd({
                  id,
                  name: tool.name,
                  result: typeof result === "string" ? result : Content.textOf(result.parts),
                  isError: false
                })
              )
            )
          )
        )
      })
  }
}

/**
 * Structured output is read back with the schema's JSON codec, the one the answer was written
 * with (so a `Schema.Date` field travels as its ISO string).
 */
const codecTransformer: LanguageModel.CodecTransformer = (schema) => ({
  codec: Schema.toCodecJson(schema),
  jsonSchema: LanguageModel.defaultCodecTransformer(schema).jsonSchema
})

/**
 * Builds a `LanguageModel` service that runs every call on a fresh client from `makeClient`.
 * `R` (besides `Scope`) is captured when the service is built.
 *
 * **Example** (Claude Code through the Agent SDK as a LanguageModel)
 *
 * ```ts
 * import { LanguageModel } from "effect/ai"
 * import { Layer } from "effect"
 * import { ClaudeAgent } from "effect-chat-bridge/claude-agent"
 * import { ChatLanguageModel } from "effect-chat-bridge/effect-ai"
 *
 * // Claude Code through the Agent SDK: the toolkit runs in-process.
 * const ClaudeAgentModel = Layer.effect(
 *   LanguageModel.LanguageModel,
 *   ChatLanguageModel.make((options) => ClaudeAgent.make({ model: "sonnet", ...options }))
 * )
 * ```
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: <R>(
  makeClient: MakeClient<R>
) => Effect.Effect<LanguageModel.LanguageModel, never, Exclude<R, Scope.Scope>> = Effect.fn(
  "ChatLanguageModel.make"
)(function*<R>(makeClient: MakeClient<R>) {
  const captured = yield* Effect.context<Exclude<R, Scope.Scope>>()

  const clientFor = Effect.fnUntraced(
    function*(options: LanguageModel.ProviderOptions, method: Method, observe?: (event: ChatEvent) => void) {
      const rendered = yield* renderPrompt(options.prompt, method)
      const client = yield* (makeClient({ systemPrompt: rendered.systemPrompt }) as Effect.Effect<
        ChatClientService,
        never,
        Exclude<R, Scope.Scope> | Scope.Scope
      >).pipe(Effect.provideContext(captured as Context.Context<Exclude<R, Scope.Scope>>))
      // Only a client with approvals can park a call for effect/ai's `tool-approval-request`.
      const approvals = approvalsOf(client as SessionClient) !== undefined
      const found = yield* toolsFor(options, method, { approvals })
      const tools = observe === undefined
        ? found
        : found.map((tool) => observed(tool as unknown as Tool.Tool, observe))
      // The tools' schema requirements come from the calling context, like the handlers.
      if (tools.length > 0) {
        yield* Effect.mapError(client.setTools(tools as unknown as ReadonlyArray<Tool.Tool>), toAiError(method))
      }
      return { client, text: rendered.text }
    }
  )

  const streamParts = (options: LanguageModel.ProviderOptions, method: Method) =>
    Stream.unwrap(Effect.map(clientFor(options, method), ({ client, text }) => {
      const translate = makeTranslator(options.tools)
      return client.chatStream(text).pipe(
        Stream.map(translate),
        Stream.flattenIterable,
        // A stopped turn is an answer cut short, not a failure: its stream ends with a finish part.
        Stream.catchReason(
          "ClaudeLiveError",
          "Interrupted",
          (reason) =>
            Stream.fromIterableEffect(Effect.map(client.usage, (usage) => translate.interrupted(reason, usage)))
        ),
        // A parked call is a call for effect/ai to ask about (`needsApproval`), not a failure.
        Stream.catchReason(
          "ProviderError",
          "ApprovalRequired",
          (reason) => Stream.fromIterableEffect(Effect.map(client.usage, (usage) => translate.parked(reason, usage)))
        ),
        Stream.mapError(toAiError(method))
      )
    }))

  const generateObject = Effect.fnUntraced(function*(options: LanguageModel.ProviderOptions, schema: Schema.Top) {
    const events: Array<ChatEvent> = []
    const { client, text } = yield* clientFor(options, "generateObject", (event) => events.push(event))
    const typed = schema as AnyCodec
    const value = yield* Effect.mapError(client.ask(text, typed), toAiError("generateObject"))
    const encoded = yield* Schema.encodeEffect(Schema.toCodecJson(typed))(value).pipe(
      Effect.mapError((error) =>
        AiError.make({
          module,
          method: "generateObject",
          reason: new AiError.InvalidOutputError({
            description: `The structured answer could not be encoded back with the schema: ${error.message}`
          })
        })
      )
    )
    const translate = makeTranslator(options.tools)
    const toolParts = events.flatMap(translate) as Array<Response.PartEncoded>
    const finish = [new UsageEvent({ usage: yield* client.usage }), new Complete({ text: "" })].flatMap(translate)
    const parts: Array<Response.PartEncoded> = [
      ...toolParts,
      { type: "text", text: JSON.stringify(encoded) },
      ...(finish as Array<Response.PartEncoded>)
    ]
    return parts
  }, Effect.scoped)

  return yield* LanguageModel.make({
    generateText: (options) =>
      options.responseFormat.type === "json"
        ? generateObject(options, options.responseFormat.schema)
        : Effect.map(Stream.runCollect(streamParts(options, "generateText")), collectParts),
    streamText: (options) => streamParts(options, "streamText"),
    codecTransformer
  })
})

/**
 * A `LanguageModel` layer on any ChatClient provider's `make`.
 *
 * **Example** (A LanguageModel layer on ClaudeLocal)
 *
 * ```ts
 * import { ClaudeLocal } from "effect-chat-bridge"
 * import { ChatLanguageModel } from "effect-chat-bridge/effect-ai"
 *
 * const Model = ChatLanguageModel.layer((options) => ClaudeLocal.make({ model: "sonnet", ...options }))
 * ```
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = <R>(
  makeClient: MakeClient<R>
): Layer.Layer<LanguageModel.LanguageModel, never, Exclude<R, Scope.Scope>> =>
  Layer.effect(LanguageModel.LanguageModel, make(makeClient))

/**
 * Claude Code (the `claude` CLI, tools over the loopback MCP bridge) as a `LanguageModel`.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerClaudeLocal = (
  options: ClaudeLocal.Options = {}
): Layer.Layer<LanguageModel.LanguageModel, never, Subprocess | SecretFile> =>
  layer((client) =>
    ClaudeLocal.make({
      ...options,
      ...(client.systemPrompt === undefined ? {} : { systemPrompt: client.systemPrompt })
    })
  )

/**
 * {@link layerClaudeLocal} with the Node implementations of Subprocess and SecretFile. The binary
 * is `options.binary`, else the `CLAUDE_BINARY` variable, else `claude` on PATH (as in
 * `ClaudeLocal.layerFromEnv`).
 *
 * @category layers
 * @since 1.0.0
 */
export const layerClaudeLocalNode = (options: ClaudeLocal.Options = {}): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.unwrap(
    Effect.map(
      // A missing variable is None; a string variable cannot be malformed.
      Effect.orDie(Config.option(Config.String("CLAUDE_BINARY"))),
      (binary) =>
        layerClaudeLocal({ ...options, binary: options.binary ?? Option.getOrUndefined(binary) }).pipe(
          Layer.provide(NodeSubprocess.layer),
          Layer.provide(NodeSecretFile.layer())
        )
    )
  )
