/**
 * `codex exec --json`'s JSONL events, read into a turn: `thread.started` (the thread id, for
 * resume), `item.started`/`item.completed` (`agent_message`, `mcp_tool_call`,
 * `command_execution`, non-fatal `error` items), `turn.completed` (usage, cumulative over the
 * thread), `turn.failed` and top-level `error` (what went wrong).
 */
import * as Effect from "effect/Effect"
import {
  AgentToolEnd,
  AgentToolStart,
  type ChatEvent,
  TextDelta,
  ToolCallEnd,
  ToolCallStart
} from "../../services/ChatEvent.ts"
import type { Emit } from "../chat/loopClient.ts"

/** Token counts as `turn.completed` reports them: totals over the whole thread so far. */
export interface ThreadUsage {
  readonly inputTokens: number
  readonly cachedInputTokens: number
  readonly outputTokens: number
}

/** What a run's events said. */
export interface Turn {
  readonly threadId: string | undefined
  /** The last agent message: the answer. */
  readonly text: string
  readonly activity: ReadonlyArray<AgentToolStart | AgentToolEnd>
  readonly usage: ThreadUsage | undefined
  /** `turn.failed`'s message (or the last top-level `error`'s when the run ended without a turn). */
  readonly failure: string | undefined
  readonly completed: boolean
}

export type Json = Record<string, unknown>

export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null

export const parse = (line: string): Json | undefined => {
  try {
    const value: unknown = JSON.parse(line)
    return isObject(value) ? value : undefined
  } catch {
    return undefined // Not an event or message (the CLI prints only those on stdout).
  }
}

const count = (value: unknown): number => (typeof value === "number" ? value : 0)

/** An MCP tool result's text parts, joined. */
const resultText = (item: Json): string => {
  if (isObject(item["error"])) return String(item["error"]["message"] ?? "error")
  const result = item["result"]
  const content = isObject(result) && Array.isArray(result["content"]) ? result["content"] : []
  return content.map((part) => (isObject(part) && typeof part["text"] === "string" ? part["text"] : "")).join("")
}

/**
 * A call of one of your tools (on the bridge's server) as `ToolCallStart`/`ToolCallEnd` with its
 * own name, as the other providers report them; `undefined` for any other item.
 */
export const bridgeEvent = (item: Json, done: boolean, serverName: string): ToolCallStart | ToolCallEnd | undefined => {
  if (item["type"] !== "mcp_tool_call" || item["server"] !== serverName) return undefined
  const id = String(item["id"] ?? "")
  const name = String(item["tool"])
  return done
    ? new ToolCallEnd({ id, name, result: resultText(item), isError: item["status"] === "failed" })
    : new ToolCallStart({ id, name, arguments: item["arguments"] ?? {} })
}

/** The CLI's own tools (shell, other MCP servers) as agent activity, named `mcp__<server>__<tool>`. */
export const agentEvent = (item: Json, done: boolean): AgentToolStart | AgentToolEnd | undefined => {
  const id = String(item["id"] ?? "")
  if (item["type"] === "mcp_tool_call") {
    const name = `mcp__${String(item["server"])}__${String(item["tool"])}`
    return done
      ? new AgentToolEnd({ id, name, result: resultText(item), isError: item["status"] === "failed" })
      : new AgentToolStart({ id, name, input: item["arguments"] ?? {} })
  }
  if (item["type"] === "command_execution") {
    return done
      ? new AgentToolEnd({
        id,
        name: "shell",
        result: String(item["aggregated_output"] ?? ""),
        isError: item["status"] === "failed" || count(item["exit_code"]) !== 0
      })
      : new AgentToolStart({ id, name: "shell", input: { command: item["command"] } })
  }
  return undefined
}

/**
 * Reads a run's lines; `line` reports each event as it comes (for `chatStream`), `turn` sums up.
 * `serverName` is the bridge's: calls of its tools are your tools' calls, not agent activity.
 */
export const makeReader = (emit: Emit | undefined, serverName: string) => {
  let threadId: string | undefined
  let text = ""
  let usage: ThreadUsage | undefined
  let failure: string | undefined
  let lastError: string | undefined
  let completed = false
  const activity: Array<AgentToolStart | AgentToolEnd> = []
  const report = (event: ChatEvent) => (emit === undefined ? Effect.void : emit(event))

  const onItem = (item: Json, done: boolean): Effect.Effect<void> => {
    if (done && item["type"] === "agent_message" && typeof item["text"] === "string") {
      text = item["text"]
      return text === "" ? Effect.void : report(new TextDelta({ text }))
    }
    const bridged = bridgeEvent(item, done, serverName)
    if (bridged !== undefined) return report(bridged)
    const event = agentEvent(item, done)
    if (event === undefined) return Effect.void
    activity.push(event)
    return report(event)
  }

  const line = (raw: string): Effect.Effect<void> => {
    const event = parse(raw)
    if (event === undefined) return Effect.void
    switch (event["type"]) {
      case "thread.started":
        if (typeof event["thread_id"] === "string") threadId = event["thread_id"]
        return Effect.void
      case "item.started":
      case "item.completed":
        return isObject(event["item"]) ? onItem(event["item"], event["type"] === "item.completed") : Effect.void
      case "turn.completed": {
        completed = true
        const u = isObject(event["usage"]) ? event["usage"] : {}
        usage = {
          inputTokens: count(u["input_tokens"]),
          cachedInputTokens: count(u["cached_input_tokens"]),
          outputTokens: count(u["output_tokens"])
        }
        return Effect.void
      }
      case "turn.failed":
        failure = isObject(event["error"]) ? String(event["error"]["message"] ?? "turn failed") : "turn failed"
        return Effect.void
      case "error":
        lastError = String(event["message"] ?? "error")
        return Effect.void
      default:
        return Effect.void
    }
  }

  const turn = (): Turn => ({
    threadId,
    text,
    activity,
    usage,
    failure: failure ?? (completed ? undefined : lastError),
    completed
  })

  return { line, turn }
}
