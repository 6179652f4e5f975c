import { describe, expect, it } from "@effect/vitest"
import { makeEventTranslator, parseRun, toChatEvent } from "../../src/internal/claudeStreamJson.js"
import { TextDelta, ToolCallEnd, ToolCallStart } from "../../src/services/ChatEvent.js"

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
    const run = parseRun(stdout)
    expect(run.init).toMatchObject({ session_id: "s1", mcp_servers: [{ name: "gtb", status: "connected" }] })
    expect(run.result).toMatchObject({ result: "last", total_cost_usd: 0.1, is_error: false, permission_denials: [] })
    expect(run.garbage).toEqual(["Warning: something odd", "{not json"])
  })

  it("a result line of the wrong shape is not a result; an init without servers has none", () => {
    const run = parseRun([
      line({ type: "system", subtype: "init" }),
      line({ type: "result", is_error: "yes" })
    ].join("\n"))
    expect(run.init?.mcp_servers).toEqual([])
    expect(run.result).toBeUndefined()
    expect(run.garbage).toEqual([])
  })
})

describe("claudeStreamJson.makeEventTranslator", () => {
  it("ignores lines that are not JSON objects", () => {
    const translate = makeEventTranslator("mcp__gtb__")
    for (const l of ["not json", "42", "null", "\"text\"", "[1,2]"]) expect(translate(l)).toEqual([])
  })

  it("text deltas only from non-empty content_block_delta text deltas", () => {
    const translate = makeEventTranslator("mcp__gtb__")
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
    const translate = makeEventTranslator("mcp__gtb__")
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
    const translate = makeEventTranslator("mcp__gtb__")
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
    const run = parseRun([
      line({ type: "assistant", message: { content: [{ type: "text", text: "first" }] } }),
      line({ type: "assistant", message: { content: [{ type: "tool_use", id: "x", name: "Bash" }] } }),
      line({ type: "assistant", message: { content: [{ type: "text", text: "so " }, { type: "text", text: "far" }] } }),
      line({ type: "result", subtype: "error_max_turns", is_error: true })
    ].join("\n"))
    expect(run.lastText).toBe("so far")
    expect(run.result?.subtype).toBe("error_max_turns")
  })

  it("results end only started calls, once; content as text, as text blocks, or anything else as empty", () => {
    const translate = makeEventTranslator("mcp__gtb__")
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
    const translate = makeEventTranslator("mcp__gtb__")
    expect(translate(line({ type: "assistant", message: { content: "text" } }))).toEqual([])
    expect(translate(line({ type: "user" }))).toEqual([])
    expect(translate(line({ type: "result", message: { content: [{ type: "tool_use", name: "mcp__gtb__a" }] } })))
      .toEqual([])
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
