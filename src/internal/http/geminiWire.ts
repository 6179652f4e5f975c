/**
 * The subset of the Gemini API (`models/<model>:generateContent`) the Gemini provider uses:
 * request types (checked in tests against `@google/genai`'s `Content`, `Tool` and
 * `GenerationConfig`), the JSON Schema → Gemini schema conversion, the response schema and the
 * translation.
 */
import * as Schema from "effect/Schema"
import { Usage } from "../../services/ChatClient.ts"
import type { Part as ContentPart } from "../../services/Content.ts"
import type { Message, TurnRequest, TurnResponse } from "../../services/ModelTurn.ts"
import { ToolCall, type ToolResult } from "../../services/Tool.ts"
import { omittedImagesNote } from "../chat/media.ts"
import type { StreamStep } from "./turnStream.ts"
import { argumentsObject } from "./wireTools.ts"

// --- Gemini's schema dialect (an OpenAPI 3.0 subset) ------------------------------------------

export type GeminiType = "STRING" | "NUMBER" | "INTEGER" | "BOOLEAN" | "ARRAY" | "OBJECT" | "NULL"

export interface GeminiSchema {
  readonly type?: GeminiType
  readonly description?: string
  readonly title?: string
  readonly nullable?: boolean
  readonly enum?: Array<string>
  readonly format?: string
  readonly properties?: Record<string, GeminiSchema>
  readonly required?: Array<string>
  readonly propertyOrdering?: Array<string>
  readonly items?: GeminiSchema
  readonly anyOf?: Array<GeminiSchema>
  readonly minItems?: string
  readonly maxItems?: string
  readonly minLength?: string
  readonly maxLength?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly pattern?: string
}

const typeNames: Record<string, GeminiType> = {
  string: "STRING",
  number: "NUMBER",
  integer: "INTEGER",
  boolean: "BOOLEAN",
  array: "ARRAY",
  object: "OBJECT",
  null: "NULL"
}

// Gemini accepts only these formats; others are dropped rather than rejected by the API.
const formats: Partial<Record<GeminiType, ReadonlySet<string>>> = {
  STRING: new Set(["enum", "date-time"]),
  NUMBER: new Set(["float", "double"]),
  INTEGER: new Set(["int32", "int64"])
}

/** A JSON Schema node: the keywords read here, and any others. */
interface Json {
  readonly $defs?: unknown
  readonly $ref?: unknown
  readonly type?: unknown
  readonly description?: unknown
  readonly title?: unknown
  readonly anyOf?: unknown
  readonly oneOf?: unknown
  readonly const?: unknown
  readonly enum?: unknown
  readonly format?: unknown
  readonly properties?: unknown
  readonly required?: unknown
  readonly items?: unknown
  readonly pattern?: unknown
  readonly [key: string]: unknown
}
const isJson = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** Refs deeper than this (recursive schemas) become an unconstrained object: Gemini has no `$ref`. */
const MaxRefDepth = 8

/**
 * Converts a JSON Schema (as Effect's `JSONSchema.make` and tools produce it) to Gemini's dialect:
 * `$ref`s into the root's `$defs` inlined, types upper-cased, `["T", "null"]` and
 * `anyOf [T, null]` turned into `nullable`, `const` into a one-value enum, only string enums
 * kept, unsupported keywords (`additionalProperties`, `$schema`, `default`, …) dropped, and
 * `propertyOrdering` set to the declaration order so answers come out in that order.
 */
export const toGeminiSchema = (schema: Json, root: Json = schema, depth = 0): GeminiSchema => {
  const defs = isJson(root.$defs) ? root.$defs : {}
  if (typeof schema.$ref === "string") {
    const name = /^#\/\$defs\/(.+)$/.exec(schema.$ref)?.[1]
    const target = name === undefined ? undefined : defs[decodeURIComponent(name)]
    if (!isJson(target) || depth >= MaxRefDepth) return { type: "OBJECT" }
    const { $ref: _ref, ...rest } = schema
    return toGeminiSchema({ ...target, ...rest }, root, depth + 1)
  }
  const out: { -readonly [K in keyof GeminiSchema]: GeminiSchema[K] } = {}
  if (typeof schema.description === "string") out.description = schema.description
  if (typeof schema.title === "string") out.title = schema.title

  // Union branches: a null branch is `nullable`; one remaining branch is merged in, several are anyOf.
  const union = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined
  if (union !== undefined) {
    const branches = union.filter(isJson)
    const nonNull = branches.filter((b) => b.type !== "null")
    if (nonNull.length < branches.length) out.nullable = true
    if (nonNull.length === 1) return { ...toGeminiSchema(nonNull[0]!, root, depth), ...out }
    if (nonNull.length > 1) out.anyOf = nonNull.map((b) => toGeminiSchema(b, root, depth))
    return out
  }

  let type: string | undefined
  if (typeof schema.type === "string") type = schema.type
  else if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t): t is string => typeof t === "string")
    if (types.includes("null")) out.nullable = true
    type = types.find((t) => t !== "null")
  }
  if (type === undefined && "const" in schema) type = typeof schema.const === "string" ? "string" : typeof schema.const
  const geminiType = type === undefined ? undefined : typeNames[type]
  if (geminiType !== undefined) out.type = geminiType

  const values = Array.isArray(schema.enum) ? schema.enum : "const" in schema ? [schema.const] : undefined
  if (values !== undefined && values.every((v) => typeof v === "string")) {
    out.enum = values as Array<string>
    out.type = "STRING"
  }
  if (typeof schema.format === "string" && geminiType !== undefined && formats[geminiType]?.has(schema.format)) {
    out.format = schema.format
  }
  if (isJson(schema.properties)) {
    const properties: Record<string, GeminiSchema> = {}
    for (const [key, value] of Object.entries(schema.properties)) {
      if (isJson(value)) properties[key] = toGeminiSchema(value, root, depth)
    }
    out.properties = properties
    out.propertyOrdering = Object.keys(properties)
    out.type ??= "OBJECT"
  }
  if (Array.isArray(schema.required)) out.required = schema.required.filter((r): r is string => typeof r === "string")
  if (isJson(schema.items)) out.items = toGeminiSchema(schema.items, root, depth)
  for (const key of ["minItems", "maxItems", "minLength", "maxLength"] as const) {
    const v = schema[key]
    if (typeof v === "number") out[key] = String(v)
  }
  for (const key of ["minimum", "maximum"] as const) {
    const v = schema[key]
    if (typeof v === "number") out[key] = v
  }
  if (typeof schema.pattern === "string") out.pattern = schema.pattern
  return out
}

// --- request (arrays mutable only so the types are assignable to the SDK's) -----------------

export interface FunctionCallPart {
  readonly functionCall: { readonly name: string; readonly args: Record<string, unknown>; readonly id?: string }
  readonly thoughtSignature?: string
}
export interface FunctionResponsePart {
  readonly functionResponse: {
    readonly name: string
    readonly response: Record<string, unknown>
    readonly id?: string
  }
}
export interface InlineDataPart {
  readonly inlineData: { readonly mimeType: string; readonly data: string }
}
export type Part = { readonly text: string } | InlineDataPart | FunctionCallPart | FunctionResponsePart

export interface Content {
  readonly role: "user" | "model"
  readonly parts: Array<Part>
}

export interface FunctionDeclaration {
  readonly name: string
  readonly description: string
  readonly parameters?: GeminiSchema
}

export interface GenerateContentRequest {
  readonly contents: Array<Content>
  readonly systemInstruction?: { readonly parts: Array<{ readonly text: string }> }
  readonly tools?: Array<{ readonly functionDeclarations: Array<FunctionDeclaration> }>
  readonly generationConfig?: {
    readonly maxOutputTokens?: number
    readonly responseMimeType?: string
    readonly responseSchema?: GeminiSchema
  }
}

// --- response -------------------------------------------------------------------------------

export const GenerateContentResponse = Schema.Struct({
  candidates: Schema.optional(Schema.Array(Schema.Struct({
    content: Schema.optional(Schema.Struct({
      parts: Schema.optional(Schema.Array(Schema.Struct({
        text: Schema.optional(Schema.String),
        thought: Schema.optional(Schema.Boolean),
        thoughtSignature: Schema.optional(Schema.String),
        functionCall: Schema.optional(Schema.Struct({
          id: Schema.optional(Schema.String),
          name: Schema.String,
          args: Schema.optional(Schema.Unknown)
        }))
      })))
    })),
    finishReason: Schema.optional(Schema.String)
  }))),
  promptFeedback: Schema.optional(Schema.Struct({ blockReason: Schema.optional(Schema.String) })),
  usageMetadata: Schema.optional(Schema.Struct({
    promptTokenCount: Schema.optional(Schema.Number),
    candidatesTokenCount: Schema.optional(Schema.Number),
    totalTokenCount: Schema.optional(Schema.Number),
    cachedContentTokenCount: Schema.optional(Schema.Number),
    thoughtsTokenCount: Schema.optional(Schema.Number)
  }))
})
export type GenerateContentResponse = typeof GenerateContentResponse.Type

// --- translation ----------------------------------------------------------------------------

/** Call ids we made up (Gemini often sends none) carry this prefix and are never sent back. */
export const LocalIdPrefix = "gemini_local_"

/**
 * What the provider remembers between turns: Gemini 3 requires each function call's
 * `thoughtSignature` to be sent back with it, and our ToolCall has no field for it.
 */
export type Signatures = ReadonlyMap<string, string>

const remoteId = (callId: string): { readonly id?: string } => callId.startsWith(LocalIdPrefix) ? {} : { id: callId }

/** A failed tool is `{ error }`, a successful one `{ output }`: the convention Gemini documents. */
export const functionResponse = (r: ToolResult): FunctionResponsePart => ({
  functionResponse: {
    name: r.name,
    response: r.isError ? { error: r.content } : { output: r.content + omittedImagesNote(r.images ?? []) },
    ...remoteId(r.callId)
  }
})

/** A prompt part: images and PDFs inline (`inlineData`); URLs were refused before the request. */
export const inlinePart = (part: ContentPart): Part =>
  part.type === "text"
    ? { text: part.text }
    : part.source.type === "base64"
    ? { inlineData: { mimeType: part.source.mediaType, data: part.source.data } }
    : { text: part.source.url }

export const contents = (history: ReadonlyArray<Message>, signatures: Signatures): Array<Content> =>
  history.map((m): Content => {
    switch (m.role) {
      case "user":
        return { role: "user", parts: m.parts === undefined ? [{ text: m.content }] : m.parts.map(inlinePart) }
      case "assistant": {
        const parts: Array<Part> = m.text === "" ? [] : [{ text: m.text }]
        for (const call of m.toolCalls) {
          const signature = signatures.get(call.id)
          parts.push({
            functionCall: { name: call.name, args: argumentsObject(call.arguments), ...remoteId(call.id) },
            ...(signature === undefined ? {} : { thoughtSignature: signature })
          })
        }
        if (parts.length === 0) parts.push({ text: "(empty answer)" })
        return { role: "model", parts }
      }
      case "tool":
        return { role: "user", parts: m.results.map(functionResponse) }
    }
  })

export interface RequestSettings {
  readonly system?: string | undefined
  readonly maxTokens?: number | undefined
}

/**
 * Builds the body. For `ask`, `responseMimeType: application/json` and the converted
 * `responseSchema` are set on this request only. Tools stay available alongside (models that
 * cannot combine function calling with a response schema answer with an HTTP 400).
 */
export const requestBody = (
  settings: RequestSettings,
  request: TurnRequest,
  signatures: Signatures
): GenerateContentRequest => {
  const generationConfig = {
    ...(settings.maxTokens === undefined ? {} : { maxOutputTokens: settings.maxTokens }),
    ...(request.responseFormat === undefined ? {} : {
      responseMimeType: "application/json",
      responseSchema: toGeminiSchema(request.responseFormat.schema)
    })
  }
  return {
    contents: contents(request.history, signatures),
    ...(settings.system === undefined ? {} : { systemInstruction: { parts: [{ text: settings.system }] } }),
    ...(request.tools.length === 0 ? {} : {
      tools: [{
        functionDeclarations: request.tools.map((t): FunctionDeclaration => {
          const parameters = toGeminiSchema(t.inputSchema)
          // A function without parameters must omit them: an OBJECT with no properties is refused.
          const empty = parameters.properties === undefined || Object.keys(parameters.properties).length === 0
          return { name: t.name, description: t.description, ...(empty ? {} : { parameters }) }
        })
      }]
    }),
    ...(Object.keys(generationConfig).length === 0 ? {} : { generationConfig })
  }
}

/** `outputTokens` includes thinking tokens (as OpenAI's `completion_tokens` does); they are also `reasoningTokens`. */
export const usage = (u: GenerateContentResponse["usageMetadata"]): Usage => {
  if (u === undefined) return Usage.empty
  const input = u.promptTokenCount ?? 0
  const thoughts = u.thoughtsTokenCount ?? 0
  const output = (u.candidatesTokenCount ?? 0) + thoughts
  return Usage.of({
    inputTokens: input,
    outputTokens: output,
    totalTokens: u.totalTokenCount ?? input + output,
    cachedTokens: u.cachedContentTokenCount ?? 0,
    reasoningTokens: thoughts
  })
}

/**
 * Reads the first candidate: text parts (thoughts skipped) and function calls, minting local ids
 * where Gemini sent none. Returns the thought signatures to remember, or `undefined` when there is
 * no candidate at all (a blocked prompt), with the block reason.
 */
export const turnResponse = (
  response: GenerateContentResponse,
  newId: () => string
):
  | {
    readonly _tag: "Turn"
    readonly turn: TurnResponse
    readonly signatures: ReadonlyArray<readonly [string, string]>
  }
  | { readonly _tag: "NoCandidate"; readonly reason: string } =>
{
  const candidate = response.candidates?.[0]
  if (candidate === undefined) {
    return { _tag: "NoCandidate", reason: response.promptFeedback?.blockReason ?? "no candidates" }
  }
  let text = ""
  const calls: Array<ToolCall> = []
  const signatures: Array<readonly [string, string]> = []
  for (const part of candidate.content?.parts ?? []) {
    if (part.functionCall !== undefined) {
      const id = part.functionCall.id ?? newId()
      // Fields of a decoded response (or our own id): already valid, so the constructor does not check again.
      calls.push(
        new ToolCall({ id, name: part.functionCall.name, arguments: part.functionCall.args ?? {} }, {
          disableChecks: true
        })
      )
      if (part.thoughtSignature !== undefined) signatures.push([id, part.thoughtSignature])
    } else if (part.text !== undefined && part.thought !== true) {
      text += part.text
    }
  }
  const turn: TurnResponse = {
    text,
    toolCalls: calls,
    usage: usage(response.usageMetadata),
    ...(candidate.finishReason === undefined ? {} : { finishReason: candidate.finishReason })
  }
  return { _tag: "Turn", turn, signatures }
}

// --- streaming (`:streamGenerateContent?alt=sse`) -------------------------------------------

const StreamError = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    status: Schema.optional(Schema.String),
    code: Schema.optional(Schema.Number)
  })
})

/** Server-side statuses worth a later retry (the same conditions as 429/5xx). */
const RetryableStatuses: ReadonlySet<string> = new Set([
  "RESOURCE_EXHAUSTED",
  "UNAVAILABLE",
  "INTERNAL",
  "DEADLINE_EXCEEDED"
])

/**
 * Assembles streamed chunks (each a partial `GenerateContentResponse`) into the response the
 * non-streaming endpoint would have returned: the first candidate's parts in arrival order, the
 * last finish reason and usage, any block reason — so `turnResponse` reads both the same way.
 * Function calls arrive whole in one part; one without `args` is `{}` there. Mutable and
 * single-use: one per streamed turn.
 */
export const contentStream = () => {
  const parts: Array<
    NonNullable<NonNullable<NonNullable<GenerateContentResponse["candidates"]>[number]["content"]>["parts"]>[number]
  > = []
  let candidate = false
  let finishReason: string | undefined
  let blockReason: string | undefined
  let usageMetadata: GenerateContentResponse["usageMetadata"]

  /** Reads one chunk (the parsed `data` of an SSE event); an undecodable chunk throws ParseError. */
  const push = (json: unknown): StreamStep => {
    if (typeof json === "object" && json !== null && "error" in json) {
      const { error } = Schema.decodeUnknownSync(StreamError)(json)
      return {
        _tag: "Error",
        message: error.status === undefined ? error.message : `${error.status}: ${error.message}`,
        retryable: error.status !== undefined && RetryableStatuses.has(error.status)
      }
    }
    const chunk = Schema.decodeUnknownSync(GenerateContentResponse)(json)
    if (chunk.usageMetadata !== undefined) usageMetadata = chunk.usageMetadata
    if (chunk.promptFeedback?.blockReason !== undefined) blockReason = chunk.promptFeedback.blockReason
    const first = chunk.candidates?.[0]
    if (first === undefined) return { _tag: "Nothing" }
    candidate = true
    if (first.finishReason !== undefined) finishReason = first.finishReason
    let shown = ""
    let thought = ""
    for (const part of first.content?.parts ?? []) {
      parts.push(part)
      if (part.functionCall !== undefined || part.text === undefined) continue
      if (part.thought === true) thought += part.text
      else shown += part.text
    }
    return shown === "" && thought === ""
      ? { _tag: "Nothing" }
      : { _tag: "Text", text: shown, ...(thought === "" ? {} : { reasoning: thought }) }
  }

  /** The whole response, or `undefined` if the stream ended before a finish (or block) reason. */
  const response = (): GenerateContentResponse | undefined => {
    if (finishReason === undefined && blockReason === undefined) return undefined
    return {
      ...(candidate
        ? { candidates: [{ content: { parts }, ...(finishReason === undefined ? {} : { finishReason }) }] }
        : {}),
      ...(blockReason === undefined ? {} : { promptFeedback: { blockReason } }),
      ...(usageMetadata === undefined ? {} : { usageMetadata })
    }
  }
  return { push, response }
}
