/**
 * The ACP client of a Gemini CLI turn (`internal/geminiCli/acp.ts`) against a scripted peer: a
 * real child process that speaks the Agent Client Protocol's JSON-RPC lines on stdio the way
 * `gemini --acp` does, including what a real peer may also send (noise, answers to ids never
 * asked, requests the client does not offer, permission requests, a replayed history).
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Acp from "../../../src/internal/geminiCli/acp.ts"
import * as NodeSubprocess from "../../../src/layers/NodeSubprocess.ts"
import type { ChatEvent } from "../../../src/services/ChatEvent.ts"

/**
 * The peer: answers `initialize`, `session/new` / `session/load` and `session/prompt` as the
 * scenario in `ACP_SCENARIO` says. What the client answered to the peer's own requests is echoed
 * back as answer text, so a test can read it from the turn's outcome.
 */
const peer = String.raw`
const scenario = process.env.ACP_SCENARIO
const out = (message) => process.stdout.write((typeof message === "string" ? message : JSON.stringify(message)) + "\n")
const update = (sessionId, u) => out({ jsonrpc: "2.0", method: "session/update", params: { sessionId, update: u } })
const echoes = []
let promptId
const finishPrompt = () => {
  for (const e of echoes) update("s-1", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: e } })
  out({ jsonrpc: "2.0", id: promptId, result: { stopReason: "end_turn", _meta: { quota: { token_count: { input_tokens: 11, output_tokens: 7 } } } } })
}
require("node:readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line)
  if (m.method === undefined) {
    echoes.push(JSON.stringify(m))
    if (echoes.length === 2) finishPrompt()
    return
  }
  if (m.method === "initialize") {
    out("not json at all")
    out("[1, 2]")
    out({ jsonrpc: "2.0", id: 999, result: {} })
    out({ jsonrpc: "2.0", method: "something/unknown", params: {} })
    return out({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1 } })
  }
  if (m.method === "session/new") {
    if (scenario === "new-fails") {
      return out({ jsonrpc: "2.0", id: m.id, error: { code: -32000, message: "no auth", data: { hint: "log in" } } })
    }
    if (scenario === "exits") process.exit(3)
    if (scenario === "quits") process.exit(0)
    return out({ jsonrpc: "2.0", id: m.id, result: { sessionId: "s-1" } })
  }
  if (m.method === "session/load") {
    out({ jsonrpc: "2.0", id: m.id, result: {} })
    // The history's replay, then the command list that ends it.
    update(m.params.sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "OLD HISTORY" } })
    return update(m.params.sessionId, { sessionUpdate: "available_commands_update", availableCommands: [] })
  }
  if (m.method === "session/prompt") {
    const sid = m.params.sessionId
    update(sid, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "got:" + m.params.prompt.map((b) => b.text).join("|") + ";" } })
    update(sid, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "" } })
    if (scenario === "load") return out({ jsonrpc: "2.0", id: m.id, result: {} })
    update(sid, { sessionUpdate: "tool_call", toolCallId: "t1", title: "ReadFile", rawInput: { path: "a" } })
    update(sid, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" })
    update(sid, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [{ type: "content", content: { type: "text", text: "file text" } }] })
    update(sid, { sessionUpdate: "tool_call_update", toolCallId: "t2", title: "Shell", status: "failed" })
    promptId = m.id
    out({ jsonrpc: "2.0", id: 50, method: "session/request_permission", params: { options: [{ kind: "allow_once", optionId: "yes" }, { kind: "reject_once", optionId: "no" }] } })
    return out({ jsonrpc: "2.0", id: 51, method: "fs/read_text_file", params: { path: "/etc/passwd" } })
  }
})
`

const runTurn = (scenario: string, sessionId: string | undefined, events: Array<ChatEvent> = []) =>
  Acp.runTurn(
    NodeSubprocess.make,
    { command: process.execPath, args: ["-e", peer], env: { ACP_SCENARIO: scenario } },
    {
      cwd: process.cwd(),
      mcpServers: [],
      sessionId,
      blocks: ["first @file", "/second"],
      emit: (event) => Effect.sync(() => events.push(event))
    },
    "10 millis"
  )

describe("Gemini CLI ACP turn", () => {
  it.live("a new session: the answer's chunks and tool calls, the peer's noise ignored, its requests answered", () =>
    Effect.gen(function*() {
      const events: Array<ChatEvent> = []
      const outcome = yield* runTurn("new", undefined, events)
      assert(outcome !== undefined)
      expect(outcome.sessionId).toBe("s-1")
      expect(outcome.stopReason).toBe("end_turn")
      expect([outcome.inputTokens, outcome.outputTokens]).toEqual([11, 7])
      // The blocks reach the peer verbatim, one text block each.
      expect(outcome.text.startsWith("got:first @file|/second;")).toBe(true)
      // A permission request is refused with the peer's own reject option; a method the client does
      // not offer is a JSON-RPC "method not found" error, never served.
      expect(outcome.text).toContain(
        `{"jsonrpc":"2.0","id":50,"result":{"outcome":{"outcome":"selected","optionId":"no"}}}`
      )
      expect(outcome.text).toContain(
        `"id":51,"error":{"code":-32601,"message":"fs/read_text_file is not offered by this client"}`
      )
      expect(outcome.activity.map((a) => [a._tag, a.id, a.name])).toEqual([
        ["AgentToolStart", "t1", "ReadFile"],
        ["AgentToolEnd", "t1", "ReadFile"],
        ["AgentToolEnd", "t2", "Shell"]
      ])
      const ends = outcome.activity.filter((a) => a._tag === "AgentToolEnd")
      expect(ends.map((e) => [e.result, e.isError])).toEqual([["file text", false], ["", true]])
      // Every text delta and tool event reached `emit` as it came; the empty chunk did not.
      expect(events.filter((e) => e._tag === "TextDelta").map((e) => e.text).join("")).toBe(outcome.text)
      expect(events.some((e) => e._tag === "TextDelta" && e.text === "")).toBe(false)
      expect(events.filter((e) => e._tag !== "TextDelta")).toEqual(outcome.activity)
    }))

  it.live("a loaded session prompts only after the history's replay, which is not part of the answer", () =>
    Effect.gen(function*() {
      const outcome = yield* runTurn("load", "s-old")
      assert(outcome !== undefined)
      expect(outcome.sessionId).toBe("s-old")
      expect(outcome.text).toBe("got:first @file|/second;")
      expect(outcome.stopReason).toBeUndefined()
      expect([outcome.inputTokens, outcome.outputTokens]).toEqual([undefined, undefined])
    }))

  it.live("an error answer fails the turn with the method, code and data", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(runTurn("new-fails", undefined))
      assert(Exit.isFailure(exit))
      const failure = exit.cause.reasons[0]
      assert(failure !== undefined && failure._tag === "Fail")
      expect(failure.error).toEqual({
        _tag: "AcpFailure",
        method: "session/new",
        code: -32000,
        message: `no auth: {"hint":"log in"}`
      })
    }))

  it.live("a CLI that ends without answering the prompt gives no outcome, or its exit's error", () =>
    Effect.gen(function*() {
      expect(yield* runTurn("quits", undefined)).toBeUndefined()
      const exit = yield* Effect.exit(runTurn("exits", undefined))
      assert(Exit.isFailure(exit))
      const failure = exit.cause.reasons[0]
      assert(failure !== undefined && failure._tag === "Fail")
      expect(failure.error).toMatchObject({ _tag: "SubprocessError", reason: { _tag: "Exited", exitCode: 3 } })
    }))
})

describe("Gemini CLI ACP messages", () => {
  it("a permission request without a reject option is cancelled", () => {
    expect(Acp.refusal({ options: [{ kind: "allow_always", optionId: "a" }] })).toEqual({
      outcome: { outcome: "cancelled" }
    })
    expect(Acp.refusal(undefined)).toEqual({ outcome: { outcome: "cancelled" } })
    expect(Acp.refusal({ options: ["reject", { kind: "reject_always", optionId: "r" }] })).toEqual({
      outcome: { outcome: "selected", optionId: "r" }
    })
  })

  it("an error answer's message: default text, string data kept, other data left out", () => {
    expect(Acp.failureOf("session/prompt", {})).toEqual({
      _tag: "AcpFailure",
      method: "session/prompt",
      code: undefined,
      message: "error"
    })
    expect(Acp.failureOf("initialize", { code: 1, message: "bad", data: "why" }).message).toBe(`bad: "why"`)
    expect(Acp.failureOf("initialize", { message: "bad", data: 42 }).message).toBe("bad")
  })

  it("lines that are not a JSON object are not messages", () => {
    expect(Acp.parse("{")).toBeUndefined()
    expect(Acp.parse("null")).toBeUndefined()
    expect(Acp.parse("3")).toBeUndefined()
    expect(Acp.parse(`{"a":1}`)).toEqual({ a: 1 })
  })

  it("an update reader without emit still collects the answer; unknown kinds change nothing", () => {
    const reader = Acp.makeUpdateReader(undefined)
    Effect.runSync(reader.onUpdate({ sessionUpdate: "agent_message_chunk", content: { type: "text" } }))
    Effect.runSync(reader.onUpdate({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } }))
    Effect.runSync(reader.onUpdate({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } }))
    Effect.runSync(reader.onUpdate({ sessionUpdate: "tool_call" }))
    Effect.runSync(reader.onUpdate({ sessionUpdate: "tool_call_update", status: "completed", content: "not a list" }))
    const outcome = reader.outcome("s", { stopReason: 3, _meta: { quota: { token_count: { input_tokens: "x" } } } })
    expect(outcome.text).toBe("hi")
    expect(outcome.stopReason).toBeUndefined()
    expect(outcome.inputTokens).toBeUndefined()
    expect(outcome.activity.map((a) => [a._tag, a.id, a.name])).toEqual([
      ["AgentToolStart", "", "tool"],
      ["AgentToolEnd", "", "tool"]
    ])
    expect(outcome.activity[0]).toMatchObject({ input: {} })
    expect(outcome.activity[1]).toMatchObject({ result: "" })
  })
})
