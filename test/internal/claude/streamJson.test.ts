import { describe, expect, it } from "@effect/vitest"
import { makeRunReader, parseRun, toChatEvent } from "../../../src/internal/claude/streamJson.ts"
import { TextDelta, ToolCallEnd, ToolCallStart } from "../../../src/services/ChatEvent.ts"

const line = (u: unknown) => JSON.stringify(u)

describe("claudeStreamJson.parseRun", () => {
  it("reads the first init line and the last result line; non-JSON lines are garbage; other JSON is skipped", () => {
    const stdout = [
      "Warning: something odd",
      line({ type: "system", subtype: "init", session_id: "s1", mcp_servers: [{ name: "gtb", status: "connected" }] }),
      line({ type: "system", subtype: "init", session_id: "s2" }),
      "",
      line({ type: "assistant", message: { content: [] } }),
      line({ type: "result", subtype: "success", result: "first" }),
      line({ type: "result", subtype: "success", result: "last", total_cost_usd: 0.1 }),
      "   {not json   "
    ].join("\n")
    const run = parseRun(stdout, "mcp__gtb__")
    expect(run.init).toMatchObject({ session_id: "s1", mcp_servers: [{ name: "gtb", status: "connected" }] })
    expect(run.result).toMatchObject({ result: "last", total_cost_usd: 0.1, is_error: false, permission_denials: [] })
    expect(run.garbage).toEqual(["Warning: something odd", "{not json"])
  })

  it("a result line of the wrong shape is not a result; an init without servers has none", () => {
    const run = parseRun(
      [
        line({ type: "system", subtype: "init" }),
        line({ type: "result", is_error: "yes" })
      ].join("\n"),
      "mcp__gtb__"
    )
    expect(run.init?.mcp_servers).toEqual([])
    expect(run.result).toBeUndefined()
    expect(run.garbage).toEqual([])
  })
})

describe("claudeStreamJson.makeRunReader events", () => {
  it("ignores lines that are not JSON objects", () => {
    const translate = makeRunReader("mcp__gtb__").line
    for (const l of ["not json", "42", "null", "\"text\"", "[1,2]"]) expect(translate(l)).toEqual([])
  })

  it("text deltas only from non-empty content_block_delta text deltas", () => {
    const translate = makeRunReader("mcp__gtb__").line
    const ev = (event: unknown) => translate(line({ type: "stream_event", event }))
    expect(ev({ type: "content_block_delta", delta: { type: "text_delta", text: "Hi" } })).toEqual([
      { _tag: "TextDelta", text: "Hi" }
    ])
    expect(ev({ type: "content_block_delta", delta: { type: "text_delta", text: "" } })).toEqual([])
    expect(ev({ type: "content_block_delta", delta: { type: "input_json_delta", partial_json: "{" } })).toEqual([])
    expect(ev({ type: "content_block_start", delta: { type: "text_delta", text: "x" } })).toEqual([])
    expect(translate(line({ type: "stream_event" }))).toEqual([])
  })

  it("the bridge's tools (prefix removed) are ToolCall events, every other tool an AgentTool event; no input is {}", () => {
    const translate = makeRunReader("mcp__gtb__").line
    const out = translate(line({
      type: "assistant",
      message: {
        content: [
          { type: "text", text: "calling" },
          { type: "tool_use", id: "t1", name: "mcp__gtb__add", input: { a: 1 } },
          { type: "tool_use", id: "t2", name: "Bash", input: { command: "ls" } },
          { type: "tool_use", id: "t3", name: "mcp__gtb__ping" },
          { type: "tool_use", id: "t4", name: 7 },
          { type: "tool_use", id: "t5", name: "StructuredOutput", input: { answer: 1 } },
          { type: "tool_use", id: "t6", name: "mcp__app__search" }
        ]
      }
    }))
    expect(out).toEqual([
      { _tag: "ToolCallStart", id: "t1", name: "add", arguments: { a: 1 } },
      { _tag: "AgentToolStart", id: "t2", name: "Bash", input: { command: "ls" } },
      { _tag: "ToolCallStart", id: "t3", name: "ping", arguments: {} },
      { _tag: "AgentToolStart", id: "t6", name: "mcp__app__search", input: {} }
    ])
    const ends = translate(line({
      type: "user",
      message: {
        content: [
          { type: "tool_result", tool_use_id: "t2", content: "file.txt", is_error: false },
          { type: "tool_result", tool_use_id: "t6", content: "denied", is_error: true },
          { type: "tool_result", tool_use_id: "t2", content: "again" }
        ]
      }
    }))
    expect(ends).toEqual([
      { _tag: "AgentToolEnd", id: "t2", name: "Bash", result: "file.txt", isError: false },
      { _tag: "AgentToolEnd", id: "t6", name: "mcp__app__search", result: "denied", isError: true }
    ])
    expect(ends.map(toChatEvent).map((e) => e._tag)).toEqual(["AgentToolEnd", "AgentToolEnd"])
  })

  it("thinking deltas are ReasoningDelta events, apart from the text", () => {
    const translate = makeRunReader("mcp__gtb__").line
    const delta = (d: Record<string, unknown>) =>
      translate(line({ type: "stream_event", event: { type: "content_block_delta", index: 0, delta: d } }))
    expect(delta({ type: "thinking_delta", thinking: "Let me think" })).toEqual([
      { _tag: "ReasoningDelta", text: "Let me think" }
    ])
    expect(delta({ type: "thinking_delta", thinking: "" })).toEqual([])
    expect(delta({ type: "signature_delta", signature: "sig" })).toEqual([])
    expect(toChatEvent({ _tag: "ReasoningDelta", text: "x" })._tag).toBe("ReasoningDelta")
    expect(toChatEvent({ _tag: "AgentToolStart", id: "i", name: "Read", input: {} })._tag).toBe("AgentToolStart")
  })

  it("parseRun keeps the last assistant text, for a run stopped at a bound", () => {
    const run = parseRun(
      [
        line({ type: "assistant", message: { content: [{ type: "text", text: "first" }] } }),
        line({ type: "assistant", message: { content: [{ type: "tool_use", id: "x", name: "Bash" }] } }),
        line({
          type: "assistant",
          message: { content: [{ type: "text", text: "so " }, { type: "text", text: "far" }] }
        }),
        line({ type: "result", subtype: "error_max_turns", is_error: true })
      ].join("\n"),
      "mcp__gtb__"
    )
    expect(run.lastText).toBe("so far")
    expect(run.result?.subtype).toBe("error_max_turns")
  })

  it("results end only started calls, once; content as text, as text blocks, or anything else as empty", () => {
    const translate = makeRunReader("mcp__gtb__").line
    translate(line({
      type: "assistant",
      message: {
        content: ["a", "b", "c"].map((id) => ({ type: "tool_use", id, name: `mcp__gtb__${id}`, input: {} }))
      }
    }))
    const results = line({
      type: "user",
      message: {
        content: [
          { type: "text", text: "not a result" },
          { type: "tool_result", tool_use_id: "a", content: "plain", is_error: true },
          {
            type: "tool_result",
            tool_use_id: "b",
            content: [{ type: "text", text: "x" }, { type: "image" }, { text: "y" }]
          },
          { type: "tool_result", tool_use_id: "c", content: { odd: true } },
          { type: "tool_result", tool_use_id: "builtin", content: "not ours" }
        ]
      }
    })
    expect(translate(results)).toEqual([
      { _tag: "ToolCallEnd", id: "a", name: "a", result: "plain", isError: true },
      { _tag: "ToolCallEnd", id: "b", name: "b", result: "xy", isError: false },
      { _tag: "ToolCallEnd", id: "c", name: "c", result: "", isError: false }
    ])
    // Each call ends once: the same results again report nothing.
    expect(translate(results)).toEqual([])
  })

  it("messages without a content array, and other message types, translate to nothing", () => {
    const translate = makeRunReader("mcp__gtb__").line
    expect(translate(line({ type: "assistant", message: { content: "text" } }))).toEqual([])
    expect(translate(line({ type: "user" }))).toEqual([])
    expect(translate(line({ type: "result", message: { content: [{ type: "tool_use", name: "mcp__gtb__a" }] } })))
      .toEqual([])
  })
})

describe("claudeStreamJson.makeRunReader, one pass", () => {
  it("the events it reports, the tool uses for the span and the agent's activity come from the same walk", () => {
    const reader = makeRunReader("mcp__gtb__")
    const emitted = [
      line({ type: "system", subtype: "init", session_id: "s1", mcp_servers: [{ name: "gtb", status: "connected" }] }),
      line({
        type: "assistant",
        message: {
          content: [
            { type: "text", text: "looking" },
            { type: "tool_use", id: "b1", name: "mcp__gtb__add", input: { a: 1 } },
            { type: "tool_use", id: "g1", name: "Glob", input: { pattern: "*" } },
            { type: "tool_use", id: "s1", name: "StructuredOutput", input: { n: 1 } }
          ]
        }
      }),
      "not json",
      line({
        type: "user",
        message: {
          content: [
            { type: "tool_result", tool_use_id: "b1", content: "2" },
            { type: "tool_result", tool_use_id: "g1", content: "denied", is_error: true },
            { type: "tool_result", tool_use_id: "s1", content: "ok" }
          ]
        }
      }),
      line({ type: "result", subtype: "success", result: "done", session_id: "s1" })
    ].flatMap((l) => reader.line(l))
    expect(emitted.map((e) => [e._tag, "id" in e ? e.id : "name" in e ? e.name : ""])).toEqual([
      ["McpServerStatus", "gtb"],
      ["ToolCallStart", "b1"],
      ["AgentToolStart", "g1"],
      ["ToolCallEnd", "b1"],
      ["AgentToolEnd", "g1"]
    ])
    expect(reader.init()?.session_id).toBe("s1")
    expect(reader.result()?.result).toBe("done")
    const run = reader.done()
    // Every tool, the bridge's and the library's included, with the error flag of its result.
    expect(run.toolUses).toEqual([
      { id: "b1", name: "mcp__gtb__add", isError: false },
      { id: "g1", name: "Glob", isError: true },
      { id: "s1", name: "StructuredOutput", isError: false }
    ])
    // Only the agent runtime's own tools, as the chat events the stream reported.
    expect(run.activity.map((e) => e._tag)).toEqual(["AgentToolStart", "AgentToolEnd"])
    expect(run.activity[1]).toMatchObject({ id: "g1", name: "Glob", result: "denied", isError: true })
    expect(run.activity.map((e) => toChatEvent(e))).toEqual(
      emitted.filter((e) => "id" in e && e.id === "g1").map(toChatEvent)
    )
    expect(run.lastText).toBe("looking")
    expect(run.garbage).toEqual(["not json"])
  })

  it("the SDK's messages go in as objects, with the same reading as lines", () => {
    const messages = [
      { type: "assistant", message: { content: [{ type: "tool_use", id: "r", name: "Read", input: {} }] } },
      { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "r", content: [{ text: "x" }] }] } },
      { type: "result", subtype: "success", result: "ok" }
    ]
    const fromObjects = makeRunReader("mcp__gtb__")
    const fromLines = makeRunReader("mcp__gtb__")
    expect(messages.flatMap((m) => fromObjects.message(m))).toEqual(
      messages.flatMap((m) => fromLines.line(JSON.stringify(m)))
    )
    expect(fromObjects.done()).toEqual(fromLines.done())
    expect(fromObjects.done().toolUses).toEqual([{ id: "r", name: "Read", isError: false }])
  })
})

describe("claudeStreamJson.toChatEvent", () => {
  it("maps each translated event to its chat event class", () => {
    expect(toChatEvent({ _tag: "TextDelta", text: "t" })).toBeInstanceOf(TextDelta)
    expect(toChatEvent({ _tag: "ToolCallStart", id: "1", name: "a", arguments: {} })).toBeInstanceOf(ToolCallStart)
    const end = toChatEvent({ _tag: "ToolCallEnd", id: "1", name: "a", result: "r", isError: true })
    expect(end).toBeInstanceOf(ToolCallEnd)
    expect(end).toMatchObject({ result: "r", isError: true })
  })
})
