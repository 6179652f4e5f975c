/**
 * The subset of OpenAI Chat Completions the OpenAi provider uses (also spoken by OpenAI-compatible
 * servers): request types (checked in tests against `openai`'s
 * `ChatCompletionCreateParamsNonStreaming`), the response schema, and the translation.
 */
import * as Schema from "effect/Schema"
import { Usage } from "../../services/ChatClient.ts"
import type { MediaSource, Part } from "../../services/Content.ts"
import type { Message, ResponseFormat, TurnRequest, TurnResponse } from "../../services/ModelTurn.ts"
import { ToolCall, type ToolResult } from "../../services/Tool.ts"
import { omittedImagesNote } from "../chat/media.ts"
import type { StreamStep } from "./turnStream.ts"

// --- request (arrays mutable only so the types are assignable to the SDK's) -----------------

export interface FunctionToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
}

export type ContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string } }
  | { readonly type: "file"; readonly file: { readonly file_data: string; readonly filename: string } }

export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string | Array<ContentPart> }
  | { readonly role: "assistant"; readonly content: string | null; readonly tool_calls?: Array<FunctionToolCall> }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string }

export interface FunctionTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: { readonly [key: string]: unknown }
  }
}

export interface JsonSchemaFormat {
  readonly type: "json_schema"
  readonly json_schema: {
    readonly name: string
    readonly schema: { readonly [key: string]: unknown }
    readonly strict: boolean
  }
}

export interface ChatRequest {
  readonly model: string
  readonly messages: Array<ChatMessage>
  readonly max_completion_tokens?: number
  readonly max_tokens?: number
  readonly tools?: Array<FunctionTool>
  readonly response_format?: JsonSchemaFormat
}

// --- response -------------------------------------------------------------------------------

const OptionalNumber = Schema.optional(Schema.NullOr(Schema.Number))

export const ChatResponse = Schema.Struct({
  choices: Schema.NonEmptyArray(Schema.Struct({
    finish_reason: Schema.optional(Schema.NullOr(Schema.String)),
    message: Schema.Struct({
      content: Schema.optional(Schema.NullOr(Schema.String)),
      refusal: Schema.optional(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
        id: Schema.String,
        function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
      }))))
    })
  })),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    prompt_tokens: Schema.Number,
    completion_tokens: Schema.Number,
    total_tokens: OptionalNumber,
    prompt_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ cached_tokens: OptionalNumber }))),
    completion_tokens_details: Schema.optional(Schema.NullOr(Schema.Struct({ reasoning_tokens: OptionalNumber })))
  })))
})
export type ChatResponse = typeof ChatResponse.Type

// --- translation ----------------------------------------------------------------------------

export interface RequestSettings {
  readonly model: string
  readonly system?: string | undefined
  readonly maxTokens?: number | undefined
  /** `max_completion_tokens` (OpenAI's current name) or `max_tokens` (older compatible servers). */
  readonly maxTokensField: "max_completion_tokens" | "max_tokens"
}

/**
 * A failed tool's result goes back as `{"error": <message>}` JSON: Chat Completions has no error
 * flag on tool messages, and a JSON object is unambiguous where a text prefix could be a real result.
 */
export const toolContent = (result: ToolResult): string =>
  result.isError
    ? JSON.stringify({ error: result.content })
    : result.content + omittedImagesNote(result.images ?? [])

const dataUrl = (s: MediaSource): string => s.type === "base64" ? `data:${s.mediaType};base64,${s.data}` : s.url

/**
 * A prompt part as a content part: images as `image_url` (a data URL, or the URL itself), PDFs as
 * `file` with `file_data` (a data URL; Chat Completions takes no PDF URLs, refused earlier).
 */
export const contentPart = (part: Part): ContentPart => {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "image":
      return { type: "image_url", image_url: { url: dataUrl(part.source) } }
    case "document":
      return { type: "file", file: { file_data: dataUrl(part.source), filename: part.title ?? "document.pdf" } }
  }
}

export const messages = (system: string | undefined, history: ReadonlyArray<Message>): Array<ChatMessage> => {
  const out: Array<ChatMessage> = system === undefined ? [] : [{ role: "system", content: system }]
  for (const m of history) {
    switch (m.role) {
      case "user":
        out.push({ role: "user", content: m.parts === undefined ? m.content : m.parts.map(contentPart) })
        break
      case "assistant":
        out.push(
          m.toolCalls.length === 0 ? { role: "assistant", content: m.text } : {
            role: "assistant",
            content: m.text === "" ? null : m.text,
            tool_calls: m.toolCalls.map((call) => ({
              id: call.id,
              type: "function",
              function: {
                name: call.name,
                arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {})
              }
            }))
          }
        )
        break
      case "tool":
        for (const r of m.results) out.push({ role: "tool", tool_call_id: r.callId, content: toolContent(r) })
    }
  }
  return out
}

/**
 * Strict structured outputs need every object to list all its properties as required and to
 * forbid extra ones. Schemas with optional fields cannot be strict; they are sent non-strict
 * (still `json_schema`) and the answer is decoded with the schema either way.
 */
export const strictCompatible = (schema: unknown): boolean => {
  if (Array.isArray(schema)) return schema.every(strictCompatible)
  if (typeof schema !== "object" || schema === null) return true
  const node = schema as {
    readonly properties?: unknown
    readonly required?: unknown
    readonly additionalProperties?: unknown
  }
  if (typeof node.properties === "object" && node.properties !== null) {
    const keys = Object.keys(node.properties)
    const required = Array.isArray(node.required) ? node.required : []
    if (node.additionalProperties !== false || !keys.every((k) => required.includes(k))) return false
  }
  return Object.values(node).every(strictCompatible)
}

export const responseFormat = (format: ResponseFormat): JsonSchemaFormat => ({
  type: "json_schema",
  json_schema: { name: format.name, schema: format.schema, strict: strictCompatible(format.schema) }
})

/** Builds the body; the response format is set on this request only, never on shared state. */
export const requestBody = (settings: RequestSettings, request: TurnRequest): ChatRequest => ({
  model: settings.model,
  messages: messages(settings.system, request.history),
  ...(settings.maxTokens === undefined ? {} : { [settings.maxTokensField]: settings.maxTokens }),
  ...(request.tools.length === 0 ? {} : {
    tools: request.tools.map((t): FunctionTool => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.inputSchema }
    }))
  }),
  ...(request.responseFormat === undefined ? {} : { response_format: responseFormat(request.responseFormat) })
})

/** `inputTokens` is `prompt_tokens` (cached included), `outputTokens` `completion_tokens` (reasoning included). */
export const usage = (u: ChatResponse["usage"]): Usage =>
  u == null ? Usage.empty : Usage.of({
    inputTokens: u.prompt_tokens,
    outputTokens: u.completion_tokens,
    totalTokens: u.total_tokens ?? u.prompt_tokens + u.completion_tokens,
    cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
    reasoningTokens: u.completion_tokens_details?.reasoning_tokens ?? 0
  })

/** Reads the first choice. A refusal becomes the text (so `ask` fails to decode it, with it shown). */
export const turnResponse = (response: ChatResponse): TurnResponse => {
  const { finish_reason, message } = response.choices[0]
  return {
    ...(finish_reason == null ? {} : { finishReason: finish_reason }),
    text: message.content ?? message.refusal ?? "",
    // Arguments stay JSON text; the tool engine parses them and reports bad JSON as a tool error.
    toolCalls: (message.tool_calls ?? []).map((c) =>
      // Fields of a decoded response: already validated, so the constructor does not check again.
      new ToolCall({ id: c.id, name: c.function.name, arguments: c.function.arguments }, { disableChecks: true })
    ),
    usage: usage(response.usage)
  }
}

// --- streaming (`stream: true`) ----------------------------------------------------------------

/** `stream_options.include_usage` makes the last chunk carry the usage (with no choices). */
export interface StreamRequest extends ChatRequest {
  readonly stream: true
  readonly stream_options: { readonly include_usage: true }
}

export const streamRequestBody = (settings: RequestSettings, request: TurnRequest): StreamRequest => ({
  ...requestBody(settings, request),
  stream: true,
  stream_options: { include_usage: true }
})

const NullableString = Schema.optional(Schema.NullOr(Schema.String))

const ChatChunk = Schema.Struct({
  choices: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
    index: Schema.optional(Schema.Number),
    delta: Schema.optional(Schema.NullOr(Schema.Struct({
      content: NullableString,
      refusal: NullableString,
      // OpenAI-compatible servers (DeepSeek, vLLM, OpenRouter, Ollama) stream reasoning in one of these.
      reasoning_content: NullableString,
      reasoning: NullableString,
      tool_calls: Schema.optional(Schema.NullOr(Schema.Array(Schema.Struct({
        index: Schema.Number,
        id: NullableString,
        function: Schema.optional(Schema.NullOr(Schema.Struct({ name: NullableString, arguments: NullableString })))
      }))))
    }))),
    finish_reason: NullableString
  })))),
  usage: ChatResponse.fields.usage
})

const ChunkError = Schema.Struct({
  error: Schema.Union([Schema.String, Schema.Struct({ message: Schema.String, type: NullableString })])
})

/**
 * Assembles a streamed completion into the `ChatResponse` the non-streaming API would have
 * returned, so `turnResponse` reads both the same way. Tool calls are assembled by `index` (id
 * and name arrive first, the arguments in pieces); empty arguments become `{}`. Only the first
 * choice is read. Mutable and single-use: one per streamed turn.
 */
export const completionStream = () => {
  let content = ""
  let refusal = ""
  let finished = false
  let finishReason: string | undefined
  let usage: ChatResponse["usage"]
  const calls = new Map<number, { id: string; name: string; arguments: string }>()

  /** Reads one chunk (the parsed `data` of an SSE event); an undecodable chunk throws ParseError. */
  const push = (json: unknown): StreamStep => {
    if (typeof json === "object" && json !== null && "error" in json) {
      const { error } = Schema.decodeUnknownSync(ChunkError)(json)
      return { _tag: "Error", message: typeof error === "string" ? error : error.message, retryable: false }
    }
    const chunk = Schema.decodeUnknownSync(ChatChunk)(json)
    if (chunk.usage != null) usage = chunk.usage
    let shown = ""
    let reasoning = ""
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue
      if (choice.finish_reason != null) {
        finished = true
        finishReason = choice.finish_reason
      }
      const delta = choice.delta
      if (delta == null) continue
      const thought = delta.reasoning_content ?? delta.reasoning
      if (thought != null) reasoning += thought
      if (delta.content != null && delta.content !== "") {
        content += delta.content
        shown += delta.content
      }
      if (delta.refusal != null && delta.refusal !== "") {
        // A refusal is the answer's text only when there is no content; show it on that condition.
        if (content === "") shown += delta.refusal
        refusal += delta.refusal
      }
      for (const call of delta.tool_calls ?? []) {
        const current = calls.get(call.index) ?? { id: "", name: "", arguments: "" }
        if (call.id != null && call.id !== "") current.id = call.id
        if (call.function?.name != null) current.name += call.function.name
        if (call.function?.arguments != null) current.arguments += call.function.arguments
        calls.set(call.index, current)
      }
    }
    return shown === "" && reasoning === ""
      ? { _tag: "Nothing" }
      : { _tag: "Text", text: shown, ...(reasoning === "" ? {} : { reasoning }) }
  }

  /** The whole completion, or `undefined` if the stream ended before a `finish_reason`. */
  const response = (): ChatResponse | undefined => {
    if (!finished) return undefined
    const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => ({
      id: c.id,
      function: { name: c.name, arguments: c.arguments.trim() === "" ? "{}" : c.arguments }
    }))
    return {
      choices: [{
        finish_reason: finishReason,
        message: {
          content: content === "" ? null : content,
          refusal: refusal === "" ? null : refusal,
          ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls })
        }
      }],
      usage
    }
  }
  return { push, response }
}
