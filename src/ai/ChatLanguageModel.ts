/**
 * Any ChatClient provider — above all Claude Code (`ClaudeLocal`, `ClaudeAgent`) — as an
 * `@effect/ai` `LanguageModel`, running the application's own `Toolkit`.
 *
 * How it maps:
 * - One `generateText` / `generateObject` / `streamText` is one fresh client, hence one CLI run
 *   (a new session), closed when the call ends.
 * - The toolkit passed to the call is what the model can call: its handlers (taken from the
 *   calling context, where the toolkit's `toLayer` provides them) are set on the client with
 *   {@link AiToolkit.toTools}, so the CLI reaches them through the MCP bridge (`ClaudeLocal`) or
 *   in-process (`ClaudeAgent`). `toolChoice: "none"` sets no tools; `oneOf` narrows them;
 *   `"required"` and `{ tool }` cannot be enforced on the CLI and behave as `"auto"`.
 * - The CLI runs its own tool loop. The calls it made come back as `tool-call` and `tool-result`
 *   parts marked `providerExecuted`, so `@effect/ai` does not run them again. A call whose
 *   arguments did not decode, or whose handler failed with `failureMode: "error"`, has no typed
 *   result: its `tool-result` part is left out and the error text is in the finish part's
 *   metadata (`effect-chat-bridge.toolErrors`); the model saw the error and carried on, so the
 *   call does not fail. `failureMode: "return"` failures come back as `isFailure` results.
 * - `generateObject` uses the CLI's structured output (`ask`, `--json-schema`); its content is
 *   the tool parts of the calls made on the way (ids of our own: `ask` has no event stream),
 *   the object's JSON and the finish part.
 * - `streamText` is `chatStream`: text of every model turn, tool parts as they happen, then the
 *   finish part.
 * - The prompt: system messages become the system prompt (replacing a configured one); earlier
 *   messages, which `Chat` resends on every call, are given to the CLI as a transcript ahead of
 *   the last user message, in one fresh session. Nothing persists between calls, so `Chat`'s
 *   history stays the single source of truth (at the cost of resending it). Text only: file parts
 *   fail with `MalformedInput`.
 * - Finish reason `stop`; usage summed over the run; cost (when known) in the finish part's
 *   metadata. A `ChatError` becomes an `AiError` (`MalformedInput` for empty prompts and rejected
 *   tools, `MalformedOutput` for undecodable output, `UnknownError` otherwise) with the original
 *   error as `cause`.
 *
 * @since 0.1.0
 * @module
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import type * as AiTool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Chunk from "effect/Chunk"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as ClaudeLocal from "../layers/ClaudeLocal.js"
import * as NodeSecretFile from "../layers/NodeSecretFile.js"
import * as NodeSubprocess from "../layers/NodeSubprocess.js"
import { type ChatClientService, type ChatError, Usage } from "../services/ChatClient.js"
import { type ChatEvent, Complete, ToolCallEnd, ToolCallStart, UsageEvent } from "../services/ChatEvent.js"
import type { SecretFile } from "../services/SecretFile.js"
import type { Subprocess } from "../services/Subprocess.js"
import type * as Tool from "../services/Tool.js"
import * as AiToolkit from "./AiToolkit.js"

/** What a call asks of the client it builds. */
export interface ClientOptions {
  /** The prompt's system messages, joined; absent when it has none. */
  readonly systemPrompt?: string | undefined
}

/** Builds one client per call; its scope is the call's. */
export type MakeClient<R> = (options: ClientOptions) => Effect.Effect<ChatClientService, never, R>

/** The metadata key of this library's data in response parts. */
export const MetadataKey = "effect-chat-bridge"

type Method = "generateText" | "generateObject" | "streamText"

const module = "ChatLanguageModel"

/** Maps a ChatError to the `AiError` `@effect/ai` callers handle, keeping it as the cause. */
export const toAiError = (method: string) => (error: ChatError): AiError.AiError => {
  switch (error._tag) {
    case "EmptyPromptError":
    case "InvalidToolsError":
      return new AiError.MalformedInput({ module, method, description: error.message, cause: error })
    case "StructuredOutputError":
      return new AiError.MalformedOutput({ module, method, description: error.message, cause: error })
    case "ProviderError":
      return error.kind === "decode"
        ? new AiError.MalformedOutput({ module, method, description: error.message, cause: error })
        : new AiError.UnknownError({ module, method, description: error.message, cause: error })
    default:
      return new AiError.UnknownError({ module, method, description: error.message, cause: error })
  }
}

const json = (value: unknown): string => {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

const textOf = (parts: ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  parts.flatMap((part) => (part.type === "text" && part.text !== undefined ? [part.text] : [])).join("")

const renderMessage = (message: Prompt.Message): ReadonlyArray<string> => {
  switch (message.role) {
    case "system":
      return []
    case "user":
      return [`User: ${textOf(message.content)}`]
    case "assistant":
      return message.content.flatMap((part) => {
        switch (part.type) {
          case "text":
            return [`Assistant: ${part.text}`]
          case "tool-call":
            return [`Assistant called tool ${part.name} with ${json(part.params)}`]
          case "tool-result":
            return [`Tool ${part.name} ${part.isFailure ? "failed with" : "returned"} ${json(part.result)}`]
          default:
            return []
        }
      })
    case "tool":
      return message.content.map((part) =>
        `Tool ${part.name} ${part.isFailure ? "failed with" : "returned"} ${json(part.result)}`
      )
  }
}

/**
 * The prompt as the CLI takes it: system messages joined into the system prompt; the last user
 * message as the request, earlier messages as a transcript before it.
 */
export const renderPrompt = (
  prompt: Prompt.Prompt,
  method: string
): Effect.Effect<{ readonly systemPrompt: string | undefined; readonly text: string }, AiError.AiError> => {
  for (const message of prompt.content) {
    if (message.role === "user" || message.role === "assistant") {
      const file = message.content.find((part) => part.type === "file")
      if (file !== undefined && file.type === "file") {
        return Effect.fail(
          new AiError.MalformedInput({
            module,
            method,
            description: `File parts (${file.mediaType}) are not supported: the claude CLI takes text prompts. ` +
              "Put the file's text in a text part, or let the agent read it from its working directory."
          })
        )
      }
    }
  }
  const system = prompt.content.flatMap((m) => (m.role === "system" ? [m.content] : []))
  const conversation = prompt.content.filter((m) => m.role !== "system")
  const last = conversation.at(-1)
  const request = last !== undefined && last.role === "user" ? textOf(last.content) : ""
  const history = (last !== undefined && last.role === "user" ? conversation.slice(0, -1) : conversation)
    .flatMap(renderMessage)
  const text = history.length === 0
    ? request
    : `<conversation_so_far>\n${history.join("\n\n")}\n</conversation_so_far>\n\n${
      request === "" ? "Continue the conversation." : request
    }`
  return Effect.succeed({ systemPrompt: system.length === 0 ? undefined : system.join("\n\n"), text })
}

const decodes = (schema: Schema.Schema.All, value: unknown): boolean => {
  try {
    return Either.isRight(ParseResult.decodeUnknownEither(schema as Schema.Schema<unknown, unknown>)(value))
  } catch {
    // A schema that needs services or async work cannot be checked here; let @effect/ai decode it.
    return true
  }
}

const parseJson = (text: string): Either.Either<unknown, void> => {
  try {
    return Either.right(JSON.parse(text) as unknown)
  } catch {
    return Either.left(undefined)
  }
}

const encodeUsage = (usage: Usage): typeof Response.Usage.Encoded =>
  usage.known
    ? {
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      totalTokens: usage.totalTokens,
      reasoningTokens: usage.reasoningTokens,
      cachedInputTokens: usage.cachedTokens
    }
    : { inputTokens: undefined, outputTokens: undefined, totalTokens: undefined }

const finishPart = (usage: Usage, toolErrors: ReadonlyArray<unknown>): Response.FinishPartEncoded => ({
  type: "finish",
  reason: "stop",
  usage: encodeUsage(usage),
  metadata: {
    [MetadataKey]: {
      ...(usage.costUsd === undefined ? {} : { costUsd: usage.costUsd }),
      ...(toolErrors.length === 0 ? {} : { toolErrors })
    }
  }
})

/**
 * Turns ChatEvents into `@effect/ai` stream parts: text blocks, provider-executed tool calls and
 * results of the toolkit's tools, and a finish part with the summed usage.
 */
export const makeTranslator = (tools: ReadonlyArray<AiTool.Any>) => {
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  const reported = new Set<string>()
  const toolErrors: Array<{ readonly id: string; readonly name: string; readonly message: string }> = []
  let usage = Usage.empty
  let textId: string | undefined
  let blocks = 0
  const closeText = (): Array<Response.StreamPartEncoded> => {
    if (textId === undefined) return []
    const id = textId
    textId = undefined
    return [{ type: "text-end", id }]
  }
  return (event: ChatEvent): ReadonlyArray<Response.StreamPartEncoded> => {
    switch (event._tag) {
      case "TextDelta": {
        if (event.text === "") return []
        const start: Array<Response.StreamPartEncoded> = []
        if (textId === undefined) {
          textId = `text-${blocks++}`
          start.push({ type: "text-start", id: textId })
        }
        return [...start, { type: "text-delta", id: textId, delta: event.text }]
      }
      case "ToolCallStart": {
        const tool = byName.get(event.name)
        if (tool === undefined) return []
        if (!decodes(tool.parametersSchema, event.arguments)) {
          toolErrors.push({ id: event.id, name: event.name, message: "arguments did not decode" })
          return []
        }
        reported.add(event.id)
        return [...closeText(), {
          type: "tool-call",
          id: event.id,
          name: event.name,
          params: event.arguments,
          providerExecuted: true
        }]
      }
      case "ToolCallEnd": {
        const tool = byName.get(event.name)
        if (tool === undefined || !reported.has(event.id)) return []
        const payload = event.isError
          ? (tool.failureMode === "return" && event.result.startsWith("Error: ")
            ? parseJson(event.result.slice("Error: ".length))
            : Either.left(undefined))
          : parseJson(event.result)
        const schema = event.isError ? tool.failureSchema : tool.successSchema
        if (Either.isLeft(payload) || !decodes(schema, payload.right)) {
          toolErrors.push({ id: event.id, name: event.name, message: event.result })
          return []
        }
        return [{
          type: "tool-result",
          id: event.id,
          name: event.name,
          result: payload.right,
          isFailure: event.isError,
          providerExecuted: true
        }]
      }
      case "Usage":
        usage = Usage.add(usage, event.usage)
        return []
      case "Complete":
        return [...closeText(), finishPart(usage, toolErrors)]
      default:
        // Event kinds added later carry nothing @effect/ai has a part for.
        return []
    }
  }
}

/** Folds stream parts into the parts of a non-streaming response. */
const collectParts = (parts: Iterable<Response.StreamPartEncoded>): Array<Response.PartEncoded> => {
  const out: Array<Response.PartEncoded> = []
  const open = new Map<string, string>()
  for (const part of parts) {
    switch (part.type) {
      case "text-start":
        open.set(part.id, "")
        break
      case "text-delta":
        open.set(part.id, (open.get(part.id) ?? "") + part.delta)
        break
      case "text-end":
        out.push({ type: "text", text: open.get(part.id) ?? "" })
        open.delete(part.id)
        break
      case "tool-call":
      case "tool-result":
      case "finish":
        out.push(part)
        break
      default:
        break
    }
  }
  return out
}

/**
 * The toolkit's tools, with handlers from the calling context, as tools for `setTools`. Fails
 * with `MalformedInput` for provider-defined tools, bad names and missing handlers.
 */
const toolsFor = (options: LanguageModel.ProviderOptions, method: Method) =>
  Effect.gen(function*() {
    if (options.toolChoice === "none" || options.tools.length === 0) return []
    const rejected = AiToolkit.rejectedTools(options.tools)
    if (rejected !== undefined) {
      return yield* new AiError.MalformedInput({ module, method, description: `Toolkit rejected: ${rejected}` })
    }
    const context = yield* Effect.context<never>()
    const missing = options.tools.filter((tool) => !context.unsafeMap.has(tool.id)).map((tool) => tool.name)
    if (missing.length > 0) {
      return yield* new AiError.MalformedInput({
        module,
        method,
        description: `No handler in context for tool(s) ${missing.join(", ")}: provide the toolkit's handler ` +
          "layer (MyToolkit.toLayer(...)) to the effect that calls the LanguageModel."
      })
    }
    const toolkit = yield* (Toolkit.make(...options.tools) as unknown as Effect.Effect<
      Toolkit.WithHandler<Record<string, AiTool.Any>>
    >)
    return yield* Effect.mapError(AiToolkit.toTools(toolkit), toAiError(method))
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
        const parsed = typeof input === "string" ? parseJson(input) : Either.right(input ?? {})
        observe(new ToolCallStart({ id, name: tool.name, arguments: Either.getOrElse(parsed, () => input) }))
        return tool.run(input).pipe(Effect.tapBoth({
          onSuccess: (result) =>
            Effect.sync(() => observe(new ToolCallEnd({ id, name: tool.name, result, isError: false }))),
          onFailure: (failure) =>
            Effect.sync(() =>
              observe(
                new ToolCallEnd({
                  id,
                  name: tool.name,
                  result: failure.reason === "HandlerFailed" ? `Error: ${failure.message}` : failure.message,
                  isError: true
                })
              )
            )
        }))
      })
  }
}

/**
 * Builds a `LanguageModel` service that runs every call on a fresh client from `makeClient`.
 * `R` (besides `Scope`) is captured when the service is built.
 *
 * @example
 * ```ts
 * import { LanguageModel } from "@effect/ai"
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
 */
export const make: <R>(
  makeClient: MakeClient<R>
) => Effect.Effect<LanguageModel.Service, never, Exclude<R, Scope.Scope>> = Effect.fn("ChatLanguageModel.make")(
  function*<R>(makeClient: MakeClient<R>) {
    const captured = yield* Effect.context<Exclude<R, Scope.Scope>>()

    const clientFor = (
      options: LanguageModel.ProviderOptions,
      method: Method,
      observe?: (event: ChatEvent) => void
    ) =>
      Effect.gen(function*() {
        const rendered = yield* renderPrompt(options.prompt, method)
        const found = yield* toolsFor(options, method)
        const tools = observe === undefined
          ? found
          : found.map((tool) => observed(tool as unknown as Tool.Tool, observe))
        const client = yield* (makeClient({ systemPrompt: rendered.systemPrompt }) as Effect.Effect<
          ChatClientService,
          never,
          Exclude<R, Scope.Scope> | Scope.Scope
        >).pipe(Effect.provide(captured as Context.Context<Exclude<R, Scope.Scope>>))
        // The tools' schema requirements come from the calling context, like the handlers.
        if (tools.length > 0) {
          yield* Effect.mapError(client.setTools(tools as unknown as ReadonlyArray<Tool.Tool>), toAiError(method))
        }
        return { client, text: rendered.text }
      })

    const streamParts = (options: LanguageModel.ProviderOptions, method: Method) =>
      Stream.unwrapScoped(Effect.map(clientFor(options, method), ({ client, text }) => {
        const translate = makeTranslator(options.tools)
        return client.chatStream(text).pipe(
          Stream.mapError(toAiError(method)),
          Stream.mapConcat(translate)
        )
      }))

    const generateObject = (options: LanguageModel.ProviderOptions, schema: Schema.Schema.Any) =>
      Effect.scoped(Effect.gen(function*() {
        const events: Array<ChatEvent> = []
        const { client, text } = yield* clientFor(options, "generateObject", (event) => events.push(event))
        const typed = schema as Schema.Schema<unknown, unknown>
        const value = yield* Effect.mapError(client.ask(text, typed), toAiError("generateObject"))
        const encoded = yield* Schema.encode(typed)(value).pipe(
          Effect.mapError((cause) =>
            new AiError.MalformedOutput({
              module,
              method: "generateObject",
              description: "The structured answer could not be encoded back with the schema",
              cause
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
      }))

    return yield* LanguageModel.make({
      generateText: (options) =>
        options.responseFormat.type === "json"
          ? generateObject(options, options.responseFormat.schema)
          : Effect.map(Stream.runCollect(streamParts(options, "generateText")), (chunk) =>
            collectParts(Chunk.toReadonlyArray(chunk))),
      streamText: (options) => streamParts(options, "streamText")
    })
  }
)

/**
 * A `LanguageModel` layer on any ChatClient provider's `make`.
 *
 * @example
 * ```ts
 * import { ClaudeLocal } from "effect-chat-bridge"
 * import { ChatLanguageModel } from "effect-chat-bridge/effect-ai"
 *
 * const Model = ChatLanguageModel.layer((options) => ClaudeLocal.make({ model: "sonnet", ...options }))
 * ```
 */
export const layer = <R>(
  makeClient: MakeClient<R>
): Layer.Layer<LanguageModel.LanguageModel, never, Exclude<R, Scope.Scope>> =>
  Layer.effect(LanguageModel.LanguageModel, make(makeClient))

/** Claude Code (the `claude` CLI, tools over the loopback MCP bridge) as a `LanguageModel`. */
export const layerClaudeLocal = (
  options: ClaudeLocal.Options = {}
): Layer.Layer<LanguageModel.LanguageModel, never, Subprocess | SecretFile> =>
  layer((client) =>
    ClaudeLocal.make({
      ...options,
      ...(client.systemPrompt === undefined ? {} : { systemPrompt: client.systemPrompt })
    })
  )

/** {@link layerClaudeLocal} with the Node implementations of Subprocess and SecretFile. */
export const layerClaudeLocalNode = (options: ClaudeLocal.Options = {}): Layer.Layer<LanguageModel.LanguageModel> =>
  layerClaudeLocal(options).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(NodeSecretFile.layer()))
