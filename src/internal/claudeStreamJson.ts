/**
 * The parts of `claude -p --output-format stream-json --verbose` output the library reads: the
 * `system/init` line (MCP server status) and the final `result` line. Unknown fields are ignored.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import {
  AgentToolEnd,
  AgentToolStart,
  type ChatEvent,
  ReasoningDelta,
  TextDelta,
  ToolCallEnd,
  ToolCallStart
} from "../services/ChatEvent.js"

export const InitLine = Schema.Struct({
  type: Schema.Literal("system"),
  subtype: Schema.Literal("init"),
  session_id: Schema.optional(Schema.String),
  mcp_servers: Schema.optionalWith(
    Schema.Array(Schema.Struct({ name: Schema.String, status: Schema.String })),
    { default: () => [] }
  )
})
export type InitLine = typeof InitLine.Type

const Count = Schema.optionalWith(Schema.NullOr(Schema.Number), { default: () => 0 })

export const ResultUsage = Schema.Struct({
  input_tokens: Count,
  output_tokens: Count,
  cache_creation_input_tokens: Count,
  cache_read_input_tokens: Count
})

export const PermissionDenial = Schema.Struct({
  tool_name: Schema.String,
  tool_use_id: Schema.optional(Schema.String)
})

export const ResultLine = Schema.Struct({
  type: Schema.Literal("result"),
  subtype: Schema.optional(Schema.String),
  is_error: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  result: Schema.optionalWith(Schema.String, { default: () => "" }),
  session_id: Schema.optional(Schema.String),
  api_error_status: Schema.optional(Schema.NullOr(Schema.Number)),
  total_cost_usd: Schema.optional(Schema.NullOr(Schema.Number)),
  num_turns: Schema.optional(Schema.Number),
  usage: Schema.optional(ResultUsage),
  permission_denials: Schema.optionalWith(Schema.Array(PermissionDenial), { default: () => [] }),
  structured_output: Schema.optional(Schema.Unknown)
})
export type ResultLine = typeof ResultLine.Type

const decodeInit = Schema.decodeUnknownEither(InitLine)
const decodeResult = Schema.decodeUnknownEither(ResultLine)

export interface ParsedRun {
  readonly init: InitLine | undefined
  readonly result: ResultLine | undefined
  /** Lines that were not JSON at all (the CLI printing something unexpected). */
  readonly garbage: ReadonlyArray<string>
  /** The text of the last assistant message that had text. */
  readonly lastText: string | undefined
}

/** The text blocks of an assistant message line, joined; undefined when it has none. */
export const assistantText = (json: unknown): string | undefined => {
  const msg = json as { type?: unknown; message?: { content?: unknown } } | null
  if (msg === null || typeof msg !== "object" || msg.type !== "assistant") return undefined
  const content = Array.isArray(msg.message?.content) ? (msg.message.content as Array<Record<string, unknown>>) : []
  const texts = content.filter((b) => b.type === "text" && typeof b.text === "string").map((b) => b.text as string)
  return texts.length === 0 ? undefined : texts.join("")
}

/** Reads the init and result lines out of the CLI's stdout. */
export const parseRun = (stdout: string): ParsedRun => {
  let init: InitLine | undefined
  let result: ResultLine | undefined
  let lastText: string | undefined
  const garbage: Array<string> = []
  for (const line of stdout.split("\n")) {
    const trimmed = line.trim()
    if (trimmed === "") continue
    let json: unknown
    try {
      json = JSON.parse(trimmed)
    } catch {
      garbage.push(trimmed)
      continue
    }
    if (init === undefined) {
      const i = decodeInit(json)
      if (Either.isRight(i)) {
        init = i.right
        continue
      }
    }
    lastText = assistantText(json) ?? lastText
    const r = decodeResult(json)
    if (Either.isRight(r)) result = r.right
  }
  return { init, result, garbage, lastText }
}

/** Tools the library itself puts in a run (`ask`'s answer channel): not agent activity. */
const InternalTools = new Set(["StructuredOutput"])

/**
 * Translates stream-json lines (with `--include-partial-messages`) into chat events: text and
 * thinking deltas, calls to the bridge's tools as ToolCallStart / ToolCallEnd, and calls to every
 * other tool (built-in ones, application MCP servers) as AgentToolStart / AgentToolEnd. Stateful:
 * one instance per run.
 */
export const makeEventTranslator = (toolPrefix: string) => {
  const started = new Map<string, string>()
  const agentStarted = new Map<string, string>()
  return (line: string): ReadonlyArray<TranslatedEvent> => {
    let json: unknown
    try {
      json = JSON.parse(line)
    } catch {
      return []
    }
    if (typeof json !== "object" || json === null) return []
    const msg = json as {
      type?: string
      event?: { type?: string; delta?: { type?: string; text?: string; thinking?: string } }
      message?: { content?: unknown }
    }
    if (msg.type === "stream_event") {
      const delta = msg.event?.type === "content_block_delta" ? msg.event.delta : undefined
      if (delta?.type === "thinking_delta" && typeof delta.thinking === "string" && delta.thinking !== "") {
        return [{ _tag: "ReasoningDelta", text: delta.thinking }]
      }
      return delta?.type === "text_delta" && typeof delta.text === "string" && delta.text !== ""
        ? [{ _tag: "TextDelta", text: delta.text }]
        : []
    }
    const content = Array.isArray(msg.message?.content) ? (msg.message.content as Array<Record<string, unknown>>) : []
    const out: Array<TranslatedEvent> = []
    if (msg.type === "assistant") {
      for (const block of content) {
        if (block.type !== "tool_use" || typeof block.name !== "string") continue
        if (!block.name.startsWith(toolPrefix)) {
          if (InternalTools.has(block.name)) continue
          agentStarted.set(String(block.id), block.name)
          out.push({ _tag: "AgentToolStart", id: String(block.id), name: block.name, input: block.input ?? {} })
          continue
        }
        const id = String(block.id)
        const name = block.name.slice(toolPrefix.length)
        started.set(id, name)
        out.push({ _tag: "ToolCallStart", id, name, arguments: block.input ?? {} })
      }
    } else if (msg.type === "user") {
      for (const block of content) {
        if (block.type !== "tool_result") continue
        const id = String(block.tool_use_id)
        const result = typeof block.content === "string"
          ? block.content
          : Array.isArray(block.content)
          ? (block.content as Array<{ text?: unknown }>).map((c) => (typeof c.text === "string" ? c.text : "")).join("")
          : ""
        const agentName = agentStarted.get(id)
        if (agentName !== undefined) {
          agentStarted.delete(id)
          out.push({ _tag: "AgentToolEnd", id, name: agentName, result, isError: block.is_error === true })
          continue
        }
        const name = started.get(id)
        if (name === undefined) continue
        started.delete(id)
        out.push({ _tag: "ToolCallEnd", id, name, result, isError: block.is_error === true })
      }
    }
    return out
  }
}

export type TranslatedEvent =
  | { readonly _tag: "TextDelta"; readonly text: string }
  | { readonly _tag: "ReasoningDelta"; readonly text: string }
  | { readonly _tag: "AgentToolStart"; readonly id: string; readonly name: string; readonly input: unknown }
  | {
    readonly _tag: "AgentToolEnd"
    readonly id: string
    readonly name: string
    readonly result: string
    readonly isError: boolean
  }
  | { readonly _tag: "ToolCallStart"; readonly id: string; readonly name: string; readonly arguments: unknown }
  | {
    readonly _tag: "ToolCallEnd"
    readonly id: string
    readonly name: string
    readonly result: string
    readonly isError: boolean
  }

/** The agent runtime's own tool calls in a run's stdout lines. */
export const agentActivity = (lines: ReadonlyArray<string>, toolPrefix: string) => {
  const translate = makeEventTranslator(toolPrefix)
  const out: Array<AgentToolStart | AgentToolEnd> = []
  for (const line of lines) {
    for (const event of translate(line)) {
      if (event._tag === "AgentToolStart") out.push(new AgentToolStart(event))
      else if (event._tag === "AgentToolEnd") out.push(new AgentToolEnd(event))
    }
  }
  return out
}

/** The chat event for a translated line event. */
export const toChatEvent = (event: TranslatedEvent): ChatEvent => {
  switch (event._tag) {
    case "TextDelta":
      return new TextDelta(event)
    case "ReasoningDelta":
      return new ReasoningDelta(event)
    case "ToolCallStart":
      return new ToolCallStart(event)
    case "ToolCallEnd":
      return new ToolCallEnd(event)
    case "AgentToolStart":
      return new AgentToolStart(event)
    case "AgentToolEnd":
      return new AgentToolEnd(event)
  }
}
