/**
 * The parts of `claude -p --output-format stream-json --verbose` output the library reads: the
 * `system/init` line (MCP server status), the final `result` line, the assistant's text and the
 * tool calls (`tool_use` / `tool_result` blocks, with the subagent call they run in), tool
 * arguments as they stream, tasks, hooks and plan rate-limit windows, read in one pass by
 * `makeRunReader`. Unknown fields and message types are ignored (newer CLIs add them).
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import {
  AgentToolEnd,
  AgentToolStart,
  type ChatEvent,
  HookFinished,
  HookStarted,
  McpServerStatus,
  RateLimit,
  ReasoningDelta,
  TaskEnded,
  TaskProgress,
  TaskStarted,
  TextDelta,
  ToolCallEnd,
  ToolCallStart,
  ToolInputDelta
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
  /** With `terminal_reason: "tool_deferred"`: the call a `defer` hook parked. */
  deferred_tool_use: Schema.optional(Schema.Struct({ id: Schema.String, name: Schema.String, input: Schema.Unknown })),
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
  /** Every plan rate-limit window the run reported, in order (a window may come more than once). */
  readonly rateLimits?: ReadonlyArray<RateLimitWindow> | undefined
  /** The last window the run reported spent (`rejected`): why its API calls were refused. */
  readonly spentWindow?: RateLimitWindow | undefined
}

/** A plan rate-limit window, as a `rate_limit_event` reports it (see `RateLimit`). */
export type RateLimitWindow = ConstructorParameters<typeof RateLimit>[0]

/** A string field, or undefined when missing or of another type. */
const str = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** A finite number field, or undefined. */
const num = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined

/** `{ [key]: value }` when the value is defined, else nothing: optional fields stay absent. */
const opt = <K extends string, V>(key: K, value: V | undefined): { readonly [P in K]?: V } =>
  (value === undefined ? {} : { [key]: value }) as { readonly [P in K]?: V }

/** Epoch seconds (as the CLI gives `resetsAt`) as a UTC date-time. */
const epochSeconds = (value: unknown): DateTime.Utc | undefined => {
  const seconds = num(value)
  return seconds === undefined ? undefined : DateTime.makeUnsafe(seconds * 1000)
}

/** The fields of a wire object the reader looks at, each of any type (or missing). */
type WireField =
  | "type"
  | "subtype"
  | "event"
  | "index"
  | "content_block"
  | "delta"
  | "id"
  | "name"
  | "text"
  | "thinking"
  | "partial_json"
  | "message"
  | "content"
  | "mcp_servers"
  | "parent_tool_use_id"
  | "rate_limit_info"
  | "api_error_params"
  | "rateLimitType"
  | "status"
  | "unifiedWindows"
  | "utilization"
  | "resetsAt"
  | "task_id"
  | "tool_use_id"
  | "task_type"
  | "subagent_type"
  | "description"
  | "last_tool_name"
  | "summary"
  | "usage"
  | "total_tokens"
  | "tool_uses"
  | "duration_ms"
  | "hook_id"
  | "hook_name"
  | "hook_event"
  | "outcome"
  | "exit_code"
  | "output"
type Wire = { readonly [K in WireField]?: unknown }

/** An object (not an array), or undefined. */
const record = (value: unknown): Wire | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Wire : undefined

/**
 * The windows of a `rate_limit_info`: each of `unifiedWindows` (five-hour, seven-day, …) with its
 * own status and utilisation, plus the representative window (`rateLimitType`) when it is not one
 * of them. The representative window's `rejected` status wins over its own entry's: it is why the
 * request was refused.
 */
export const rateLimitWindows = (info: unknown): ReadonlyArray<RateLimitWindow> => {
  const top = record(info)
  if (top === undefined) return []
  const representative = str(top.rateLimitType)
  const topStatus = str(top.status)
  const windows: Array<RateLimitWindow> = []
  for (const [window, value] of Object.entries(record(top.unifiedWindows) ?? {})) {
    const w = record(value)
    if (w === undefined) continue
    const own = str(w.status)
    const status = window === representative && (topStatus === "rejected" || own === undefined) ? topStatus : own
    windows.push({
      window,
      status: status ?? "allowed",
      ...opt("utilization", num(w.utilization)),
      ...opt("resetsAt", epochSeconds(w.resetsAt))
    })
  }
  if (topStatus !== undefined && !windows.some((w) => w.window === representative)) {
    windows.push({
      window: representative ?? "unknown",
      status: topStatus,
      ...opt("utilization", num(top.utilization)),
      ...opt("resetsAt", epochSeconds(top.resetsAt))
    })
  }
  return windows
}

/** The last window reported spent (`rejected`), if any. */
const lastSpent = (windows: ReadonlyArray<RateLimitWindow>): RateLimitWindow | undefined => {
  for (let i = windows.length - 1; i >= 0; i--) if (windows[i]!.status === "rejected") return windows[i]
  return undefined
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
  /** The subagent call it runs in (the message's `parent_tool_use_id`). */
  readonly parent: string | undefined
}

/** The `parent_tool_use_id` of a message, when it is inside a subagent. */
const parentOf = (msg: { readonly parent_tool_use_id?: unknown }): string | undefined => str(msg.parent_tool_use_id)

/**
 * The chat event of a task or hook system message (`task_started`, `task_progress`,
 * `task_notification`, `hook_started`, `hook_response`); none for other subtypes or when an id is
 * missing.
 */
const systemEvent = (msg: Wire): TranslatedEvent | undefined => {
  const taskId = str(msg.task_id)
  const task = taskId === undefined ? undefined : { taskId, ...opt("toolCallId", str(msg.tool_use_id)) }
  const hookId = str(msg.hook_id)
  const hookName = str(msg.hook_name)
  const hookEvent = str(msg.hook_event)
  const hook = hookId === undefined || hookName === undefined || hookEvent === undefined
    ? undefined
    : { hookId, hookName, hookEvent }
  switch (msg.subtype) {
    case "task_started":
      return task && {
        _tag: "TaskStarted",
        ...task,
        description: str(msg.description) ?? "",
        ...opt("taskType", str(msg.task_type)),
        ...opt("subagentType", str(msg.subagent_type))
      }
    case "task_progress": {
      const usage = record(msg.usage) ?? {}
      return task && {
        _tag: "TaskProgress",
        ...task,
        description: str(msg.description) ?? "",
        ...opt("lastToolName", str(msg.last_tool_name)),
        totalTokens: num(usage.total_tokens) ?? 0,
        toolUses: num(usage.tool_uses) ?? 0,
        durationMs: num(usage.duration_ms) ?? 0
      }
    }
    case "task_notification":
      return task && {
        _tag: "TaskEnded",
        ...task,
        status: str(msg.status) ?? "completed",
        summary: str(msg.summary) ?? ""
      }
    case "hook_started":
      return hook && { _tag: "HookStarted", ...hook }
    case "hook_response":
      return hook && {
        _tag: "HookFinished",
        ...hook,
        outcome: str(msg.outcome) ?? "success",
        ...opt("exitCode", num(msg.exit_code)),
        output: str(msg.output) ?? ""
      }
    default:
      return undefined
  }
}

/**
 * Reads one run's stream-json output, line by line (the CLI) or message by message (the Agent
 * SDK), in a single pass: each message gives its chat events as they happen (text and thinking
 * deltas with `--include-partial-messages`; the bridge's tools as ToolCallStart / ToolCallEnd;
 * every other tool — built-in ones, application MCP servers — as AgentToolStart / AgentToolEnd),
 * and `done` gives what the provider reads afterwards (init and result lines, last text, every
 * tool use with its error flag for the turn span, the agent's activity). One instance per run.
 */
export const makeRunReader = (toolPrefix: string, observe?: (json: unknown) => void) => {
  let init: InitLine | undefined
  let result: ResultLine | undefined
  let lastText: string | undefined
  const garbage: Array<string> = []
  const uses: Array<OpenUse["use"]> = []
  const byId = new Map<string, OpenUse>()
  const activity: Array<AgentToolStart | AgentToolEnd> = []
  let attempt: { id: string; input: unknown; rejection?: string } | undefined
  const rateLimits: Array<RateLimitWindow> = []
  let spentWindow: RateLimitWindow | undefined
  // MCP server statuses reported so far: an init line tells a status once, and again when it changes.
  const serverStatuses = new Map<string, string>()
  // The tool_use blocks of the message being streamed, by block index: their argument deltas.
  const streamingTools = new Map<number, { readonly id: string; readonly name: string }>()
  // Tool calls printed without their result yet: a run is not silent while one runs.
  let running = 0

  const toolEvents = (type: unknown, content: ReadonlyArray<Block>, parent: string | undefined) => {
    const out: Array<TranslatedEvent> = []
    const parented = opt("parentToolCallId", parent)
    for (const block of content) {
      if (type === "assistant" && block.type === "tool_use" && typeof block.name === "string") {
        const id = String(block.id)
        const bridged = block.name.startsWith(toolPrefix)
        const kind = bridged ? "bridge" : InternalTools.has(block.name) ? "internal" : "agent"
        const open: OpenUse = {
          use: { id, name: block.name, isError: undefined },
          kind,
          name: bridged ? block.name.slice(toolPrefix.length) : block.name,
          pending: kind !== "internal",
          parent
        }
        uses.push(open.use)
        if (block.name === "StructuredOutput") attempt = { id, input: block.input }
        if (byId.get(id)?.pending === true) running--
        if (open.pending) running++
        byId.set(id, open)
        if (kind === "bridge") {
          out.push({ _tag: "ToolCallStart", id, name: open.name, arguments: block.input ?? {}, ...parented })
        } else if (kind === "agent") {
          const event = { _tag: "AgentToolStart", id, name: open.name, input: block.input ?? {}, ...parented } as const
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
        const end = { id, name: open.name, result: text, isError, ...opt("parentToolCallId", open.parent) }
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

  /** A partial message's chat events: text, thinking, and tool arguments as they stream. */
  const streamEvent = (
    event: Wire,
    parent: string | undefined
  ): ReadonlyArray<TranslatedEvent> => {
    const index = num(event.index) ?? -1
    if (event.type === "message_start") streamingTools.clear()
    if (event.type === "content_block_start") {
      const block = record(event.content_block)
      const id = str(block?.id)
      const name = str(block?.name)
      if (block?.type === "tool_use" && id !== undefined && name !== undefined && !InternalTools.has(name)) {
        streamingTools.set(index, { id, name: name.startsWith(toolPrefix) ? name.slice(toolPrefix.length) : name })
      }
      return []
    }
    const delta = event.type === "content_block_delta" ? record(event.delta) : undefined
    if (delta === undefined) return []
    const text = str(delta.text) ?? str(delta.thinking) ?? str(delta.partial_json) ?? ""
    if (text === "") return []
    if (delta.type === "thinking_delta") return [{ _tag: "ReasoningDelta", text }]
    if (delta.type === "text_delta") return [{ _tag: "TextDelta", text }]
    const tool = delta.type === "input_json_delta" ? streamingTools.get(index) : undefined
    return tool === undefined
      ? []
      : [{ _tag: "ToolInputDelta", id: tool.id, name: tool.name, delta: text, ...opt("parentToolCallId", parent) }]
  }

  /** An init line's MCP servers whose status is new or changed. */
  const serverEvents = (servers: unknown): ReadonlyArray<TranslatedEvent> => {
    const out: Array<TranslatedEvent> = []
    for (const server of Array.isArray(servers) ? servers : []) {
      const name = str(record(server)?.name)
      const status = str(record(server)?.status)
      if (name === undefined || status === undefined || serverStatuses.get(name) === status) continue
      serverStatuses.set(name, status)
      out.push({ _tag: "McpServerStatus", name, status })
    }
    return out
  }

  /** A `rate_limit_event`'s windows, kept for the run's metrics and its error. */
  const rateLimitEvents = (info: unknown): ReadonlyArray<TranslatedEvent> => {
    const windows = rateLimitWindows(info)
    rateLimits.push(...windows)
    spentWindow = lastSpent(windows) ?? spentWindow
    return windows.map((w) => ({ _tag: "RateLimit", ...w }))
  }

  /** One parsed message: its chat events; the init, result and text are kept for `done`. */
  const message = (json: unknown): ReadonlyArray<TranslatedEvent> => {
    const msg = record(json)
    if (msg === undefined) return []
    observe?.(json)
    const parent = parentOf(msg)
    if (msg.type === "stream_event") return streamEvent(record(msg.event) ?? {}, parent)
    if (msg.type === "rate_limit_event") return rateLimitEvents(msg.rate_limit_info)
    if (msg.type === "system") {
      const event = systemEvent(msg)
      if (event !== undefined) return [event]
    }
    const content = record(msg.message)?.content
    const events = msg.type === "assistant" || msg.type === "user"
      ? toolEvents(msg.type, Array.isArray(content) ? (content as Array<Block>) : [], parent)
      : msg.type === "system" && msg.subtype === "init"
      ? serverEvents(msg.mcp_servers)
      : []
    if (msg.type === "assistant" && spentWindow === undefined) {
      // The CLI's API-error message names the refused window too (in case no event preceded it).
      spentWindow = lastSpent(rateLimitWindows(record(msg.api_error_params)?.rate_limit_info))
    }
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
      structuredAttempt: attempt === undefined ? undefined : { input: attempt.input, rejection: attempt.rejection },
      rateLimits,
      spentWindow
    })
  }
}

/** Reads a whole run's stdout (see {@link makeRunReader}). */
export const parseRun = (stdout: string, toolPrefix: string): ParsedRun => {
  const reader = makeRunReader(toolPrefix)
  for (const line of stdout.split("\n")) reader.line(line)
  return reader.done()
}

/** A chat event as the reader gives it: its fields and tag, made into a class only when emitted. */
type Plain<Tag extends string, C extends new(fields: never) => unknown> =
  & { readonly _tag: Tag }
  & ConstructorParameters<C>[0]

export type TranslatedEvent =
  | Plain<"TextDelta", typeof TextDelta>
  | Plain<"ReasoningDelta", typeof ReasoningDelta>
  | Plain<"AgentToolStart", typeof AgentToolStart>
  | Plain<"AgentToolEnd", typeof AgentToolEnd>
  | Plain<"ToolCallStart", typeof ToolCallStart>
  | Plain<"ToolCallEnd", typeof ToolCallEnd>
  | Plain<"ToolInputDelta", typeof ToolInputDelta>
  | Plain<"TaskStarted", typeof TaskStarted>
  | Plain<"TaskProgress", typeof TaskProgress>
  | Plain<"TaskEnded", typeof TaskEnded>
  | Plain<"HookStarted", typeof HookStarted>
  | Plain<"HookFinished", typeof HookFinished>
  | Plain<"McpServerStatus", typeof McpServerStatus>
  | Plain<"RateLimit", typeof RateLimit>

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
    case "ToolInputDelta":
      return new ToolInputDelta(event)
    case "TaskStarted":
      return new TaskStarted(event)
    case "TaskProgress":
      return new TaskProgress(event)
    case "TaskEnded":
      return new TaskEnded(event)
    case "HookStarted":
      return new HookStarted(event)
    case "HookFinished":
      return new HookFinished(event)
    case "McpServerStatus":
      return new McpServerStatus(event)
    case "RateLimit":
      return new RateLimit(event)
  }
}
