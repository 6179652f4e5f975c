/**
 * `codex exec --json`'s event stream read into a turn, at its edges: lines that are not events,
 * events missing their fields, items of every kind (the bridge's calls, other MCP servers', shell
 * commands, kinds the reader ignores), failures with and without a message.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Events from "../../../src/internal/codexCli/events.ts"
import type { ChatEvent } from "../../../src/services/ChatEvent.ts"

/** Reads `lines` (objects are sent as JSON, strings as they are) with a recording reader. */
const read = (lines: ReadonlyArray<unknown>, serverName = "gtb") =>
  Effect.gen(function*() {
    const seen: Array<ChatEvent> = []
    const reader = Events.makeReader((event) => Effect.sync(() => void seen.push(event)), serverName)
    for (const line of lines) yield* reader.line(typeof line === "string" ? line : JSON.stringify(line))
    return { turn: reader.turn(), seen }
  })

describe("codexCli events", () => {
  it.effect("ignores lines that are not JSON objects, unknown events and items without an object", () =>
    Effect.gen(function*() {
      const { seen, turn } = yield* read([
        "42",
        "null",
        "\"thread.started\"",
        "{ cut",
        { type: "session.configured" },
        { type: "item.started", item: "not an item" },
        { type: "item.completed", item: null },
        { type: "item.completed", item: { id: "r1", type: "reasoning", text: "thinking" } },
        { type: "item.completed", item: { id: "f1", type: "file_change", changes: [] } },
        { type: "thread.started", thread_id: 17 }
      ])
      expect(seen).toEqual([])
      expect(turn).toEqual({
        threadId: undefined,
        text: "",
        activity: [],
        usage: undefined,
        failure: undefined,
        completed: false
      })
    }))

  it.effect("the last agent message is the answer; an empty one is not reported as text", () =>
    Effect.gen(function*() {
      const { seen, turn } = yield* read([
        { type: "item.started", item: { id: "a0", type: "agent_message" } },
        { type: "item.completed", item: { id: "a1", type: "agent_message", text: "first" } },
        { type: "item.completed", item: { id: "a2", type: "agent_message", text: 7 } },
        { type: "item.completed", item: { id: "a3", type: "agent_message", text: "" } }
      ])
      expect(seen.map((e) => (e._tag === "TextDelta" ? e.text : e._tag))).toEqual(["first"])
      expect(turn.text).toBe("")
    }))

  it.effect("the bridge's calls: ids, arguments and results defaulted when missing, errors and failures kept", () =>
    Effect.gen(function*() {
      const { seen, turn } = yield* read([
        { type: "item.started", item: { type: "mcp_tool_call", server: "gtb", tool: "add" } },
        {
          type: "item.completed",
          item: { type: "mcp_tool_call", server: "gtb", tool: "add", status: "completed", result: { content: "5" } }
        },
        {
          type: "item.completed",
          item: {
            id: "c2",
            type: "mcp_tool_call",
            server: "gtb",
            tool: "add",
            status: "completed",
            result: { content: [{ type: "image", data: "…" }, { type: "text", text: "a" }, "b", { text: "c" }] }
          }
        },
        {
          type: "item.completed",
          item: {
            id: "c3",
            type: "mcp_tool_call",
            server: "gtb",
            tool: "add",
            status: "failed",
            error: { message: "tool add timed out" }
          }
        },
        {
          type: "item.completed",
          item: { id: "c4", type: "mcp_tool_call", server: "gtb", tool: "add", status: "failed", error: {} }
        }
      ])
      expect(seen.map((e) => e._tag)).toEqual([
        "ToolCallStart",
        "ToolCallEnd",
        "ToolCallEnd",
        "ToolCallEnd",
        "ToolCallEnd"
      ])
      expect(seen[0]).toMatchObject({ id: "", name: "add", arguments: {} })
      expect(seen[1]).toMatchObject({ id: "", name: "add", result: "", isError: false })
      expect(seen[2]).toMatchObject({ id: "c2", result: "ac", isError: false })
      expect(seen[3]).toMatchObject({ id: "c3", result: "tool add timed out", isError: true })
      expect(seen[4]).toMatchObject({ id: "c4", result: "error", isError: true })
      // The bridge's calls are the application's tools, not agent activity.
      expect(turn.activity).toEqual([])
    }))

  it.effect("other MCP servers' calls and shell commands are agent activity, failed by status or exit code", () =>
    Effect.gen(function*() {
      const { seen, turn } = yield* read(
        [
          { type: "item.started", item: { type: "mcp_tool_call", server: "docs", tool: "search" } },
          {
            type: "item.completed",
            item: { id: "m1", type: "mcp_tool_call", server: "docs", tool: "search", status: "failed", error: null }
          },
          { type: "item.started", item: { id: "s1", type: "command_execution", command: "false" } },
          { type: "item.completed", item: { id: "s1", type: "command_execution", command: "false", exit_code: 1 } },
          {
            type: "item.completed",
            item: { id: "s2", type: "command_execution", status: "failed", aggregated_output: "denied" }
          },
          { type: "item.completed", item: { id: "s3", type: "command_execution", exit_code: "0?" } }
        ],
        "mine"
      )
      expect(turn.activity).toEqual(seen)
      expect(seen.map((e) => [e._tag, "name" in e ? e.name : undefined])).toEqual([
        ["AgentToolStart", "mcp__docs__search"],
        ["AgentToolEnd", "mcp__docs__search"],
        ["AgentToolStart", "shell"],
        ["AgentToolEnd", "shell"],
        ["AgentToolEnd", "shell"],
        ["AgentToolEnd", "shell"]
      ])
      expect(seen[0]).toMatchObject({ id: "", input: {} })
      expect(seen[1]).toMatchObject({ id: "m1", result: "", isError: true })
      expect(seen[2]).toMatchObject({ id: "s1", input: { command: "false" } })
      expect(seen[3]).toMatchObject({ result: "", isError: true })
      expect(seen[4]).toMatchObject({ result: "denied", isError: true })
      // A non-numeric exit code counts as 0.
      expect(seen[5]).toMatchObject({ id: "s3", isError: false })
    }))

  it.effect("usage fields that are missing or not numbers count 0; a turn without usage counts all 0", () =>
    Effect.gen(function*() {
      const partial = yield* read([{
        type: "turn.completed",
        usage: { input_tokens: 12, cached_input_tokens: "3", output_tokens: null }
      }])
      expect(partial.turn.usage).toEqual({ inputTokens: 12, cachedInputTokens: 0, outputTokens: 0 })
      const bare = yield* read([{ type: "turn.completed" }])
      expect(bare.turn).toMatchObject({
        completed: true,
        usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 }
      })
    }))

  it.effect("failures without a message get a generic one; an error before a completed turn is no failure", () =>
    Effect.gen(function*() {
      expect((yield* read([{ type: "turn.failed" }])).turn.failure).toBe("turn failed")
      expect((yield* read([{ type: "turn.failed", error: { code: 1 } }])).turn.failure).toBe("turn failed")
      expect((yield* read([{ type: "error" }])).turn.failure).toBe("error")
      const recovered = yield* read([
        { type: "error", message: "Reconnecting... 1/5" },
        { type: "turn.completed", usage: {} }
      ])
      expect(recovered.turn).toMatchObject({ completed: true, failure: undefined })
      // Without `emit` the reader still sums up.
      const quiet = Events.makeReader(undefined, "gtb")
      yield* quiet.line(JSON.stringify({ type: "item.completed", item: { type: "agent_message", text: "hi" } }))
      yield* quiet.line(JSON.stringify({ type: "item.completed", item: { type: "command_execution", exit_code: 0 } }))
      expect(quiet.turn()).toMatchObject({ text: "hi", activity: [{ _tag: "AgentToolEnd", name: "shell" }] })
    }))
})
