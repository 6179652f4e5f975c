/**
 * The parts of `claude -p --output-format stream-json --verbose` output the library reads: the
 * `system/init` line (MCP server status), the final `result` line, the assistant's text and the
 * tool calls (`tool_use` / `tool_result` blocks), read in one pass by `makeRunReader`. Unknown
 * fields are ignored.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import {
  AgentToolEnd,
  AgentToolStart,
  type ChatEvent,
  ReasoningDelta,
  TextDelta,
  ToolCallEnd,
  ToolCallStart
} from "../../services/ChatEvent.ts"

export const InitLine = Schema.Struct({
  type: Schema.Literal("system"),
  subtype: Schema.Literal("init"),
  session_id: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  mcp_servers: Schema.Array(Schema.Struct({ name: Schema.String, status: Schema.String })).pipe(
    Schema.withDecodingDefault(Effect.succeed([]))
  )
})
export type InitLine = typeof InitLine.Type

const Count = Schema.NullOr(Schema.Number).pipe(Schema.withDecodingDefault(Effect.succeed(0)))

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
  is_error: Schema.Boolean.pipe(Schema.withDecodingDefault(Effect.succeed(false))),
  result: Schema.String.pipe(Schema.withDecodingDefault(Effect.succeed(""))),
  session_id: Schema.optional(Schema.String),
  api_error_status: Schema.optional(Schema.NullOr(Schema.Number)),
  total_cost_usd: Schema.optional(Schema.NullOr(Schema.Number)),
  num_turns: Schema.optional(Schema.Number),
  stop_reason: Schema.optional(Schema.NullOr(Schema.String)),
  /** Why the turn ended early, e.g. `aborted_streaming` / `aborted_tools` after an interrupt. */
  terminal_reason: Schema.optional(Schema.NullOr(Schema.String)),
  usage: Schema.optional(ResultUsage),
  permission_denials: Schema.Array(PermissionDenial).pipe(Schema.withDecodingDefault(Effect.succeed([]))),
  structured_output: Schema.optional(Schema.Unknown),
  /** What failed, on an error result without `result` (a start-up failure, an interrupt). */
  errors: Schema.optional(Schema.Array(Schema.String)),
  /** Why the CLI did not start the session (claude 2.1.335+), e.g. `resume_target_not_found`. */
  startup_failure_reason: Schema.optional(Schema.String)
})
export type ResultLine = typeof ResultLine.Type

const decodeInit = Schema.decodeUnknownResult(InitLine)
const decodeResult = Schema.decodeUnknownResult(ResultLine)

export interface ParsedRun {
  readonly init: InitLine | undefined
  readonly result: ResultLine | undefined
  /** Lines that were not JSON at all (the CLI printing something unexpected). */
  readonly garbage: ReadonlyArray<string>
  /** The text of the last assistant message that had text. */
  readonly lastText: string | undefined
  /** Every tool the CLI ran, the bridge's included, in order: for the turn span's events. */
  readonly toolUses: ReadonlyArray<ToolUse>
  /** The agent runtime's own tool calls (not the bridge's, not the library's), as chat events. */
  readonly activity: ReadonlyArray<AgentToolStart | AgentToolEnd>
  /** `ask`: the model's last StructuredOutput call and why the CLI rejected it, if it did. */
  readonly structuredAttempt?: StructuredAttempt | undefined
}

/** The model's last structured answer attempt in a run (`--json-schema`). */
export interface StructuredAttempt {
  readonly input: unknown
  /** The CLI's validation error, when it rejected the attempt. */
  readonly rejection?: string | undefined
}

/** A content block of a message, as the CLI writes it: every field may be missing or of another type. */
interface Block {
  readonly type?: unknown
  readonly text?: unknown
  readonly id?: unknown
  readonly name?: unknown
  readonly input?: unknown
  readonly tool_use_id?: unknown
  readonly is_error?: unknown
  readonly content?: unknown
}

/** The text blocks of an assistant message line, joined; undefined when it has none. */
const assistantText = (json: unknown): string | undefined => {
  const msg = json as { type?: unknown; message?: { content?: unknown } } | null
  if (msg === null || typeof msg !== "object" || msg.type !== "assistant") return undefined
  const content = Array.isArray(msg.message?.content) ? (msg.message.content as Array<Block>) : []
  const texts = content.filter((b) => b.type === "text" && typeof b.text === "string").map((b) => b.text as string)
  return texts.length === 0 ? undefined : texts.join("")
}

/** A tool the CLI ran during a run: its id, name, and whether its result was an error. */
export interface ToolUse {
  readonly id: string
  readonly name: string
  readonly isError: boolean | undefined
  /**
   * For a bridge tool: the CLI's own transport error, put where the tool's result should be (see
   * {@link isTransportFailure}). The model saw this text as the tool's answer.
   */
  readonly transportError?: string | undefined
}

/**
 * Whether a bridge tool's error result is the CLI failing to reach the bridge rather than the
 * bridge's answer: the CLI's fetch error (Bun's `ECONNRESET: The socket connection was closed
 * unexpectedly…`, `Unable to connect…`, Node's `fetch failed` on the JS CLI) in place of the
 * result. The bridge's own error results never look like that: `executeTool` writes
 * `Error: <message>`, `tool handler panicked: …`, `Tool <name> not found` or a decode message,
 * so a handler whose own fetch failed with ECONNRESET still reads `Error: ECONNRESET…`.
 */
export const isTransportFailure = (text: string): boolean => TransportFailure.test(text)

const TransportFailure =
  /^(?:(?:ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|UND_ERR_[A-Z_]+|ConnectionRefused|ConnectionClosed|FailedToOpenSocket)\b|(?:TypeError: )?fetch failed\b|Unable to connect\. Is the computer able to access the url\?|The socket connection was closed unexpectedly)/

/** Tools the library itself puts in a run (`ask`'s answer channel): not agent activity. */
const InternalTools = new Set(["StructuredOutput"])

/** A `tool_result`'s content as text: a string, or the text of its text blocks. */
const resultText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? (content as Array<{ text?: unknown }>).map((c) => (typeof c.text === "string" ? c.text : "")).join("")
    : ""

/** A `tool_use` seen in the run, until (and after) its result. */
interface OpenUse {
  readonly use: {
    readonly id: string
    readonly name: string
    isError: boolean | undefined
    transportError?: string | undefined
  }
  /** `bridge`: the caller's tool (ToolCall events); `agent`: the runtime's (AgentTool events); `internal`: none. */
  readonly kind: "bridge" | "agent" | "internal"
  /** The name its events carry: without the bridge's prefix for the caller's tools. */
  readonly name: string
  /** Whether its end event is still due: a call ends once, at its first result. */
  pending: boolean
}

/**
 * Reads one run's stream-json output, line by line (the CLI) or message by message (the Agent
 * SDK), in a single pass: each message gives its chat events as they happen (text and thinking
 * deltas with `--include-partial-messages`; the bridge's tools as ToolCallStart / ToolCallEnd;
 * every other tool — built-in ones, application MCP servers — as AgentToolStart / AgentToolEnd),
 * and `done` gives what the provider reads afterwards (init and result lines, last text, every
 * tool use with its error flag for the turn span, the agent's activity). One instance per run.
 */
export const makeRunReader = (toolPrefix: string) => {
  let init: InitLine | undefined
  let result: ResultLine | undefined
  let lastText: string | undefined
  const garbage: Array<string> = []
  const uses: Array<OpenUse["use"]> = []
  const byId = new Map<string, OpenUse>()
  const activity: Array<AgentToolStart | AgentToolEnd> = []
  let attempt: { id: string; input: unknown; rejection?: string } | undefined
  // Tool calls printed without their result yet: a run is not silent while one runs.
  let running = 0

  const toolEvents = (type: unknown, content: ReadonlyArray<Block>) => {
    const out: Array<TranslatedEvent> = []
    for (const block of content) {
      if (type === "assistant" && block.type === "tool_use" && typeof block.name === "string") {
        const id = String(block.id)
        const bridged = block.name.startsWith(toolPrefix)
        const kind = bridged ? "bridge" : InternalTools.has(block.name) ? "internal" : "agent"
        const open: OpenUse = {
          use: { id, name: block.name, isError: undefined },
          kind,
          name: bridged ? block.name.slice(toolPrefix.length) : block.name,
          pending: kind !== "internal"
        }
        uses.push(open.use)
        if (block.name === "StructuredOutput") attempt = { id, input: block.input }
        if (byId.get(id)?.pending === true) running--
        if (open.pending) running++
        byId.set(id, open)
        if (kind === "bridge") out.push({ _tag: "ToolCallStart", id, name: open.name, arguments: block.input ?? {} })
        else if (kind === "agent") {
          const event = { _tag: "AgentToolStart", id, name: open.name, input: block.input ?? {} } as const
          activity.push(new AgentToolStart(event))
          out.push(event)
        }
      } else if (type === "user" && block.type === "tool_result") {
        const id = String(block.tool_use_id)
        const open = byId.get(id)
        if (open === undefined) continue
        const isError = block.is_error === true
        open.use.isError = isError
        if (isError && attempt?.id === id) attempt.rejection = resultText(block.content)
        if (!open.pending) continue
        open.pending = false
        running--
        const text = resultText(block.content)
        if (open.kind === "bridge" && isError && isTransportFailure(text)) open.use.transportError = text
        const end = { id, name: open.name, result: text, isError }
        if (open.kind === "bridge") out.push({ _tag: "ToolCallEnd", ...end })
        else {
          const event = { _tag: "AgentToolEnd", ...end } as const
          activity.push(new AgentToolEnd(event))
          out.push(event)
        }
      }
    }
    return out
  }

  /** One parsed message: its chat events; the init, result and text are kept for `done`. */
  const message = (json: unknown): ReadonlyArray<TranslatedEvent> => {
    if (typeof json !== "object" || json === null) return []
    const msg = json as {
      type?: unknown
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
    const events = msg.type === "assistant" || msg.type === "user"
      ? toolEvents(
        msg.type,
        Array.isArray(msg.message?.content) ? (msg.message.content as Array<Block>) : []
      )
      : []
    if (init === undefined && msg.type === "system") {
      const i = decodeInit(json)
      if (Result.isSuccess(i)) {
        init = i.success
        return events
      }
    }
    lastText = assistantText(json) ?? lastText
    if (msg.type === "result") {
      const r = decodeResult(json)
      if (Result.isSuccess(r)) result = r.success
    }
    return events
  }

  /** One stdout line; a line that is not JSON is kept as garbage. */
  const line = (text: string): ReadonlyArray<TranslatedEvent> => {
    const trimmed = text.trim()
    if (trimmed === "") return []
    let json: unknown
    try {
      json = JSON.parse(trimmed)
    } catch {
      garbage.push(trimmed)
      return []
    }
    return message(json)
  }

  return {
    line,
    message,
    /** The init line read so far (the first one). */
    init: (): InitLine | undefined => init,
    /** The result line read so far (the last one). */
    result: (): ResultLine | undefined => result,
    /** How many tool calls were printed and have no result yet (the library's own tools not counted). */
    openTools: (): number => running,
    done: (): ParsedRun => ({
      init,
      result,
      garbage,
      lastText,
      toolUses: uses,
      activity,
      structuredAttempt: attempt === undefined ? undefined : { input: attempt.input, rejection: attempt.rejection }
    })
  }
}

/** Reads a whole run's stdout (see {@link makeRunReader}). */
export const parseRun = (stdout: string, toolPrefix: string): ParsedRun => {
  const reader = makeRunReader(toolPrefix)
  for (const line of stdout.split("\n")) reader.line(line)
  return reader.done()
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
