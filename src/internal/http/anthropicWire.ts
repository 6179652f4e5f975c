/**
 * The subset of the Anthropic Messages API the ClaudeApi provider uses: request types (checked in
 * tests against `@anthropic-ai/sdk`'s `MessageCreateParamsNonStreaming`), the response schema
 * (unknown fields and block types tolerated), and the TurnRequest/TurnResponse translation.
 */
import * as Schema from "effect/Schema"
import { Usage } from "../../services/ChatClient.ts"
import type { ImagePart, Part } from "../../services/Content.ts"
import type { Message, TurnRequest, TurnResponse } from "../../services/ModelTurn.ts"
import { type JsonSchemaObject, ToolCall } from "../../services/Tool.ts"
import type { StreamStep } from "./turnStream.ts"
import { argumentsObject, uniqueName } from "./wireTools.ts"

// --- request --------------------------------------------------------------------------------
// Arrays are mutable here only so the types are assignable to the SDK's (checked in tests).

export interface TextBlock {
  readonly type: "text"
  readonly text: string
}
export interface ToolUseBlock {
  readonly type: "tool_use"
  readonly id: string
  readonly name: string
  readonly input: Record<string, unknown>
}
// Media types as the API lists them; parts were checked against these before the request is built.
export type ImageMediaType = "image/png" | "image/jpeg" | "image/gif" | "image/webp"
export interface UrlSourceParam {
  readonly type: "url"
  readonly url: string
}
export interface ImageBlock {
  readonly type: "image"
  readonly source:
    | { readonly type: "base64"; readonly media_type: ImageMediaType; readonly data: string }
    | UrlSourceParam
}
export interface DocumentBlock {
  readonly type: "document"
  readonly source:
    | { readonly type: "base64"; readonly media_type: "application/pdf"; readonly data: string }
    | UrlSourceParam
  readonly title?: string
}
export interface ToolResultBlock {
  readonly type: "tool_result"
  readonly tool_use_id: string
  readonly content: string | Array<TextBlock | ImageBlock>
  readonly is_error: boolean
}
export type MessageParam =
  | {
    readonly role: "user"
    readonly content: string | Array<TextBlock | ImageBlock | DocumentBlock | ToolResultBlock>
  }
  | { readonly role: "assistant"; readonly content: Array<TextBlock | ToolUseBlock> }

export interface ToolParam {
  readonly name: string
  readonly description: string
  readonly input_schema: JsonSchemaObject
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "any" }
  | { readonly type: "tool"; readonly name: string }

export interface MessagesRequest {
  readonly model: string
  readonly max_tokens: number
  readonly messages: Array<MessageParam>
  readonly system?: string
  readonly tools?: Array<ToolParam>
  readonly tool_choice?: ToolChoice
}

// --- response -------------------------------------------------------------------------------

const ContentBlock = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("tool_use"),
    id: Schema.String,
    name: Schema.String,
    input: Schema.Unknown
  }),
  // thinking, server tool results and future block types: tolerated, ignored
  Schema.Struct({ type: Schema.String })
])

const NullableNumber = Schema.optional(Schema.NullOr(Schema.Number))

export const MessagesResponse = Schema.Struct({
  content: Schema.Array(ContentBlock),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(Schema.Struct({
    input_tokens: Schema.Number,
    output_tokens: Schema.Number,
    cache_read_input_tokens: NullableNumber,
    cache_creation_input_tokens: NullableNumber
  }))
})
export type MessagesResponse = typeof MessagesResponse.Type

// --- translation ----------------------------------------------------------------------------

export interface RequestSettings {
  readonly model: string
  readonly maxTokens: number
  readonly system?: string | undefined
}

const assistantContent = (m: Extract<Message, { role: "assistant" }>): Array<TextBlock | ToolUseBlock> => {
  const blocks: Array<TextBlock | ToolUseBlock> = []
  // The API refuses empty text blocks.
  if (m.text !== "") blocks.push({ type: "text", text: m.text })
  for (const call of m.toolCalls) {
    blocks.push({ type: "tool_use", id: call.id, name: call.name, input: argumentsObject(call.arguments) })
  }
  if (blocks.length === 0) blocks.push({ type: "text", text: "(empty answer)" })
  return blocks
}

const imageBlock = ({ source: s }: ImagePart): ImageBlock => ({
  type: "image",
  source: s.type === "base64"
    ? { type: "base64", media_type: s.mediaType as ImageMediaType, data: s.data }
    : { type: "url", url: s.url }
})

/** A prompt part as a content block; empty text parts are dropped (the API refuses them). */
export const contentBlock = (part: Part): Array<TextBlock | ImageBlock | DocumentBlock> => {
  switch (part.type) {
    case "text":
      return part.text === "" ? [] : [{ type: "text", text: part.text }]
    case "image":
      return [imageBlock(part)]
    case "document":
      return [{
        type: "document",
        source: part.source.type === "base64"
          ? { type: "base64", media_type: "application/pdf", data: part.source.data }
          : { type: "url", url: part.source.url },
        ...(part.title === undefined ? {} : { title: part.title })
      }]
  }
}

export const messages = (history: ReadonlyArray<Message>): Array<MessageParam> =>
  history.map((m): MessageParam => {
    switch (m.role) {
      case "user":
        return { role: "user", content: m.parts === undefined ? m.content : m.parts.flatMap(contentBlock) }
      case "assistant":
        return { role: "assistant", content: assistantContent(m) }
      case "tool":
        return {
          role: "user",
          content: m.results.map((r): ToolResultBlock => ({
            type: "tool_result",
            tool_use_id: r.callId,
            content: r.images === undefined || r.images.length === 0
              ? r.content
              : [
                ...(r.content === "" ? [] : [{ type: "text", text: r.content } as const]),
                ...r.images.map(imageBlock)
              ],
            is_error: r.isError
          }))
        }
    }
  })

/**
 * Builds the request body. For `ask` (a `responseFormat`), the answer is an extra tool whose input
 * schema is the answer's schema. Without user tools it is forced (`tool_choice: tool`); with user
 * tools the model must call *some* tool (`tool_choice: any`), so it can still use the user's tools
 * first and then "call" the answer tool — whose input is the structured answer. Returns the
 * answer tool's name (unique among the user's tools) so the response can be read back.
 */
export const requestBody = (
  settings: RequestSettings,
  request: TurnRequest
): { readonly body: MessagesRequest; readonly answerTool: string | undefined } => {
  const tools: Array<ToolParam> = request.tools.map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: t.inputSchema
  }))
  let answerTool: string | undefined
  let toolChoice: ToolChoice | undefined
  if (request.responseFormat !== undefined) {
    answerTool = uniqueName(request.responseFormat.name, tools.map((t) => t.name))
    toolChoice = tools.length === 0 ? { type: "tool", name: answerTool } : { type: "any" }
    tools.push({
      name: answerTool,
      description: "Give your final answer by calling this tool; its input is the answer.",
      input_schema: request.responseFormat.schema
    })
  }
  const body: MessagesRequest = {
    model: settings.model,
    max_tokens: settings.maxTokens,
    messages: messages(request.history),
    ...(settings.system === undefined ? {} : { system: settings.system }),
    ...(tools.length === 0 ? {} : { tools }),
    ...(toolChoice === undefined ? {} : { tool_choice: toolChoice })
  }
  return { body, answerTool }
}

/**
 * Usage: `inputTokens` counts every prompt token (fresh, cache reads and cache writes), like
 * OpenAI's `prompt_tokens`; `cachedTokens` is the cache reads.
 */
export const usage = (u: MessagesResponse["usage"]): Usage => {
  if (u === undefined) return Usage.empty
  const cacheRead = u.cache_read_input_tokens ?? 0
  const cacheWrite = u.cache_creation_input_tokens ?? 0
  return Usage.of({
    inputTokens: u.input_tokens + cacheRead + cacheWrite,
    outputTokens: u.output_tokens,
    cachedTokens: cacheRead
  })
}

/**
 * Reads a response. A call to the answer tool is the structured answer — unless the model also
 * called user tools in the same turn: then those run first (the answer call is dropped, the model
 * answers again with their results), so an answer is never built on tool calls left unanswered.
 */
export const turnResponse = (response: MessagesResponse, answerTool: string | undefined): TurnResponse => {
  let text = ""
  const calls: Array<ToolCall> = []
  let structured: { readonly value: unknown } | undefined
  for (const block of response.content) {
    if (block.type === "text" && "text" in block) text += block.text
    else if (block.type === "tool_use" && "input" in block) {
      if (block.name === answerTool) structured ??= { value: block.input }
      // Fields of a decoded response: already validated, so the constructor does not check again.
      else calls.push(new ToolCall({ id: block.id, name: block.name, arguments: block.input }, { disableChecks: true }))
    }
  }
  const base = {
    text,
    toolCalls: calls,
    usage: usage(response.usage),
    ...(response.stop_reason == null ? {} : { finishReason: response.stop_reason })
  }
  return structured !== undefined && calls.length === 0 ? { ...base, structured: structured.value } : base
}

// --- streaming (`stream: true`) ----------------------------------------------------------------

const StreamUsage = Schema.Struct({
  input_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
  output_tokens: Schema.optional(Schema.NullOr(Schema.Number)),
  cache_read_input_tokens: NullableNumber,
  cache_creation_input_tokens: NullableNumber
})

const MessageStart = Schema.Struct({ message: Schema.Struct({ usage: Schema.optional(StreamUsage) }) })
const BlockStart = Schema.Struct({ index: Schema.Number, content_block: ContentBlock })
const BlockDelta = Schema.Struct({
  index: Schema.Number,
  delta: Schema.Struct({
    type: Schema.String,
    text: Schema.optional(Schema.String),
    partial_json: Schema.optional(Schema.String),
    thinking: Schema.optional(Schema.String)
  })
})
const MessageDelta = Schema.Struct({
  delta: Schema.optional(Schema.Struct({ stop_reason: Schema.optional(Schema.NullOr(Schema.String)) })),
  usage: Schema.optional(StreamUsage)
})
const StreamError = Schema.Struct({ error: Schema.Struct({ type: Schema.String, message: Schema.String }) })

/** Error types of an `error` event worth a later retry (the same conditions as 429/5xx/529). */
const RetryableStreamErrors: ReadonlySet<string> = new Set(["overloaded_error", "api_error", "rate_limit_error"])

const nothing: StreamStep = { _tag: "Nothing" }

/**
 * Assembles a streamed message into the `MessagesResponse` the non-streaming API would have
 * returned, so `turnResponse` reads both the same way. Tool input arrives as `input_json_delta`
 * pieces, parsed once the block is complete; no pieces (a tool without arguments) is `{}`.
 * Mutable and single-use: one per streamed turn.
 */
export const messageStream = () => {
  type Block = { type: string; text: string; id: string; name: string; json: string; input: unknown }
  const blocks = new Map<number, Block>()
  type StreamUsage = typeof StreamUsage.Type
  let usage: { -readonly [K in keyof StreamUsage]?: number } | undefined
  let stopReason: string | null | undefined
  let stopped = false
  const mergeUsage = (u: StreamUsage | undefined) => {
    if (u === undefined) return
    const merged = { ...usage }
    for (const k of Object.keys(u) as Array<keyof StreamUsage>) {
      const v = u[k]
      if (v !== undefined && v !== null) merged[k] = v
    }
    usage = merged
  }

  /** Reads one event (the parsed `data` of an SSE event); undecodable known events throw a SchemaError. */
  const push = (json: unknown): StreamStep => {
    const type = typeof json === "object" && json !== null && "type" in json ? json.type : undefined
    switch (type) {
      case "message_start": {
        mergeUsage(Schema.decodeUnknownSync(MessageStart)(json).message.usage)
        return nothing
      }
      case "content_block_start": {
        const { content_block: block, index } = Schema.decodeUnknownSync(BlockStart)(json)
        blocks.set(index, {
          type: block.type,
          text: "text" in block ? block.text : "",
          id: "id" in block ? block.id : "",
          name: "name" in block ? block.name : "",
          json: "",
          input: "input" in block ? block.input : undefined
        })
        return "text" in block && block.text !== "" ? { _tag: "Text", text: block.text } : nothing
      }
      case "content_block_delta": {
        const { delta, index } = Schema.decodeUnknownSync(BlockDelta)(json)
        const block = blocks.get(index)
        if (block === undefined) return nothing
        if (delta.type === "text_delta" && delta.text !== undefined && block.type === "text") {
          block.text += delta.text
          return delta.text === "" ? nothing : { _tag: "Text", text: delta.text }
        }
        if (delta.type === "input_json_delta" && delta.partial_json !== undefined) block.json += delta.partial_json
        // Shown as reasoning only: thinking blocks are not kept for the next turn's request.
        if (delta.type === "thinking_delta" && delta.thinking !== undefined && delta.thinking !== "") {
          return { _tag: "Text", text: "", reasoning: delta.thinking }
        }
        return nothing
      }
      case "message_delta": {
        const delta = Schema.decodeUnknownSync(MessageDelta)(json)
        if (delta.delta?.stop_reason !== undefined) stopReason = delta.delta.stop_reason
        mergeUsage(delta.usage)
        return nothing
      }
      case "message_stop":
        stopped = true
        return nothing
      case "error": {
        const { error } = Schema.decodeUnknownSync(StreamError)(json)
        return {
          _tag: "Error",
          message: `${error.type}: ${error.message}`,
          retryable: RetryableStreamErrors.has(error.type)
        }
      }
      default:
        // ping, content_block_stop, thinking and future events
        return nothing
    }
  }

  /** The whole message, or `undefined` if the stream ended before `message_stop`. */
  const response = (): MessagesResponse | undefined => {
    if (!stopped) return undefined
    const content = [...blocks.entries()].sort(([a], [b]) => a - b).map(
      ([, b]): MessagesResponse["content"][number] => {
        if (b.type === "text") return { type: "text", text: b.text }
        if (b.type === "tool_use") {
          return { type: "tool_use", id: b.id, name: b.name, input: toolInput(b.json, b.input) }
        }
        return { type: b.type }
      }
    )
    return {
      content,
      stop_reason: stopReason,
      usage: usage === undefined ? undefined : {
        input_tokens: usage.input_tokens ?? 0,
        output_tokens: usage.output_tokens ?? 0,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens
      }
    }
  }
  return { push, response }
}

/** A streamed tool input: the joined JSON pieces; none (or blank) is `{}`; bad JSON stays text for the tool engine to report. */
const toolInput = (json: string, initial: unknown): unknown => {
  if (json.trim() === "") return typeof initial === "object" && initial !== null ? initial : {}
  try {
    return JSON.parse(json) as unknown
  } catch {
    return json
  }
}
