/**
 * `codex app-server`'s notifications about one turn, read into the turn: the agent message's text
 * deltas (`item/agentMessage/delta`), its items (`item/started`/`item/completed`: the agent's
 * messages, MCP tool calls, shell commands), the thread's token totals
 * (`thread/tokenUsage/updated`), errors (`error`) and the end (`turn/completed`). Items are the
 * `exec --json` ones in camelCase: they are mapped onto those and reported as the exec path does.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import {
  type AgentToolEnd,
  type AgentToolStart,
  type ChatEvent,
  TextDelta,
  type ToolCallEnd,
  type ToolCallStart
} from "../../services/ChatEvent.ts"
import type { Emit } from "../chat/loopClient.ts"
import { agentEvent, bridgeEvent, isObject, type Json, type ThreadUsage } from "./events.ts"

/** How a turn ended, as `turn/completed` (and the notifications before it) told. */
export interface TurnOutcome {
  readonly turnId: string
  /** `completed`, `interrupted` or `failed`. */
  readonly status: string
  /** The last agent message: the answer. */
  readonly text: string
  /** The failure's message, and the HTTP status when the model API answered one. */
  readonly failure: { readonly message: string; readonly httpStatus: number | undefined } | undefined
  /** The thread's totals after the turn (Codex reports usage summed over the thread). */
  readonly usage: ThreadUsage | undefined
  readonly activity: ReadonlyArray<AgentToolStart | AgentToolEnd>
  /** Whether one of the bridge's tools was called. */
  readonly bridgeCalled: boolean
}

/** An app-server item in the shape `exec --json` prints it (what `events.ts` reads). */
export const execItem = (item: Json): Json => {
  if (item["type"] === "mcpToolCall") return { ...item, type: "mcp_tool_call" }
  if (item["type"] === "commandExecution") {
    return {
      id: item["id"],
      type: "command_execution",
      command: item["command"],
      aggregated_output: item["aggregatedOutput"] ?? "",
      exit_code: item["exitCode"],
      // A command the approval policy declined did not run: a failure, as `exec` reports it.
      status: item["status"] === "declined" ? "failed" : item["status"]
    }
  }
  return item
}

const count = (value: unknown): number => (typeof value === "number" ? value : 0)

/** `codexErrorInfo`'s HTTP status, wherever its variant carries one (`{ httpConnectionFailed: { httpStatusCode } }`). */
export const httpStatusOf = (info: unknown): number | undefined => {
  if (!isObject(info)) return undefined
  for (const variant of Object.values(info)) {
    if (isObject(variant) && typeof variant["httpStatusCode"] === "number") return variant["httpStatusCode"]
  }
  return undefined
}

const failureOf = (error: unknown): TurnOutcome["failure"] =>
  isObject(error)
    ? { message: String(error["message"] ?? "turn failed"), httpStatus: httpStatusOf(error["codexErrorInfo"]) }
    : undefined

/**
 * Reads one turn of `threadId`. `onNotification` is the connection's listener; `finished` holds
 * the turn `turn/completed` reported; `mute` stops reporting to `emit` (the turn's caller left,
 * while its interruption is still being waited for).
 */
export const makeTurnReader = (threadId: string, serverName: string, emit: Emit | undefined) => {
  const finished = Deferred.makeUnsafe<Json>()
  let text = ""
  let usage: ThreadUsage | undefined
  let lastError: unknown
  let bridgeCalled = false
  let muted = false
  const streamed = new Set<string>()
  const activity: Array<AgentToolStart | AgentToolEnd> = []
  const report = (event: ChatEvent) => (emit === undefined || muted ? Effect.void : emit(event))

  const onItem = (item: Json, done: boolean): Effect.Effect<void> => {
    if (item["type"] === "agentMessage") {
      if (!done || typeof item["text"] !== "string") return Effect.void
      text = item["text"]
      // A message that came without deltas is reported whole.
      return streamed.has(String(item["id"])) || text === "" ? Effect.void : report(new TextDelta({ text }))
    }
    const shaped = execItem(item)
    const bridged: ToolCallStart | ToolCallEnd | undefined = bridgeEvent(shaped, done, serverName)
    if (bridged !== undefined) {
      bridgeCalled = true
      return report(bridged)
    }
    const event = agentEvent(shaped, done)
    if (event === undefined) return Effect.void
    activity.push(event)
    return report(event)
  }

  const onNotification = (method: string, params: Json): Effect.Effect<void> => {
    if (params["threadId"] !== threadId) return Effect.void
    switch (method) {
      case "item/agentMessage/delta": {
        const delta = typeof params["delta"] === "string" ? params["delta"] : ""
        streamed.add(String(params["itemId"]))
        return delta === "" ? Effect.void : report(new TextDelta({ text: delta }))
      }
      case "item/started":
      case "item/completed":
        return isObject(params["item"]) ? onItem(params["item"], method === "item/completed") : Effect.void
      case "thread/tokenUsage/updated": {
        const total = isObject(params["tokenUsage"]) ? params["tokenUsage"]["total"] : undefined
        if (isObject(total)) {
          usage = {
            inputTokens: count(total["inputTokens"]),
            cachedInputTokens: count(total["cachedInputTokens"]),
            outputTokens: count(total["outputTokens"])
          }
        }
        return Effect.void
      }
      case "error":
        if (params["willRetry"] !== true) lastError = params["error"]
        return Effect.void
      case "turn/completed":
        return Effect.asVoid(Deferred.succeed(finished, isObject(params["turn"]) ? params["turn"] : {}))
      default:
        return Effect.void
    }
  }

  const outcome = (turn: Json): TurnOutcome => {
    const status = String(turn["status"] ?? "completed")
    return {
      turnId: String(turn["id"] ?? ""),
      status,
      text,
      failure: status === "failed" ? failureOf(turn["error"] ?? lastError) ?? failureOf({}) : undefined,
      usage,
      activity,
      bridgeCalled
    }
  }

  return { onNotification, finished, outcome, mute: () => (muted = true) }
}
