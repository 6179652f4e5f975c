import { describe, expect, it } from "@effect/vitest"
import type * as AgUiSchema from "effect/ai/AgUiSchema"
import * as Events from "../../../src/internal/agUi/events.ts"
import { ApprovalRequired, ProviderError, RateLimitError } from "../../../src/services/ChatClient.ts"
import {
  AgentToolEnd,
  AgentToolStart,
  Complete,
  TextDelta,
  ToolCallEnd,
  ToolCallStart,
  ToolInputDelta,
  UsageEvent
} from "../../../src/services/ChatEvent.ts"
import { Usage } from "../../../src/services/Usage.ts"

const input = (messages: AgUiSchema.RunAgentInput["messages"], resume?: AgUiSchema.RunAgentInput["resume"]) =>
  ({
    threadId: "t",
    runId: "r",
    messages,
    tools: [],
    context: [],
    ...(resume === undefined ? {} : { resume })
  }) as AgUiSchema.RunAgentInput

describe("AG-UI event mapping", () => {
  it("text around a tool call is two messages; the call is start, args, end, then its result", () => {
    const map = Events.makeEventMapper("r")
    const events = [
      new TextDelta({ text: "Let me look." }),
      new TextDelta({ text: "" }),
      new ToolCallStart({ id: "c1", name: "lookup", arguments: { word: "x" } }),
      new ToolCallEnd({ id: "c1", name: "lookup", result: "found", isError: false }),
      new UsageEvent({ usage: Usage.empty }),
      new TextDelta({ text: "Done" }),
      new Complete({ text: "Done" })
    ].flatMap(map)
    expect(events).toEqual([
      { type: "TEXT_MESSAGE_START", messageId: "r-text-0", role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "r-text-0", delta: "Let me look." },
      { type: "TEXT_MESSAGE_END", messageId: "r-text-0" },
      { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "lookup" },
      { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: "{\"word\":\"x\"}" },
      { type: "TOOL_CALL_END", toolCallId: "c1" },
      { type: "TOOL_CALL_RESULT", messageId: "r-result-c1", toolCallId: "c1", content: "found", role: "tool" },
      { type: "TEXT_MESSAGE_START", messageId: "r-text-1", role: "assistant" },
      { type: "TEXT_MESSAGE_CONTENT", messageId: "r-text-1", delta: "Done" },
      { type: "TEXT_MESSAGE_END", messageId: "r-text-1" }
    ])
  })

  it("streamed arguments open the call; its start event only ends it; a failed result is marked", () => {
    const map = Events.makeEventMapper("r")
    const events = [
      new ToolInputDelta({ id: "c1", name: "Bash", delta: "{\"command\":" }),
      new ToolInputDelta({ id: "c1", name: "Bash", delta: "\"ls\"}" }),
      new AgentToolStart({ id: "c1", name: "Bash", input: { command: "ls" } }),
      new AgentToolEnd({ id: "c1", name: "Bash", result: "denied", isError: true })
    ].flatMap(map)
    expect(events).toEqual([
      { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "Bash" },
      { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: "{\"command\":" },
      { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: "\"ls\"}" },
      { type: "TOOL_CALL_END", toolCallId: "c1" },
      {
        type: "TOOL_CALL_RESULT",
        messageId: "r-result-c1",
        toolCallId: "c1",
        content: "denied",
        role: "tool",
        metadata: { "effect/ai": { isFailure: true } }
      }
    ])
  })

  it("a result whose call was never started is dropped; close ends an open text message", () => {
    const map = Events.makeEventMapper("r")
    expect(map(new ToolCallEnd({ id: "x", name: "lookup", result: "late", isError: false }))).toEqual([])
    map(new TextDelta({ text: "partial" }))
    expect(map.close()).toEqual([{ type: "TEXT_MESSAGE_END", messageId: "r-text-0" }])
    expect(map.close()).toEqual([])
  })

  it("a call opened from streamed arguments is ended by its result, or by close (AG-UI refuses RUN_FINISHED while it is open)", () => {
    const map = Events.makeEventMapper("r")
    const answered = [
      new ToolInputDelta({ id: "c1", name: "lookup", delta: "{}" }),
      new ToolCallEnd({ id: "c1", name: "lookup", result: "found", isError: false })
    ].flatMap(map)
    expect(answered.map((e) => e.type)).toEqual([
      "TOOL_CALL_START",
      "TOOL_CALL_ARGS",
      "TOOL_CALL_END",
      "TOOL_CALL_RESULT"
    ])
    map(new ToolInputDelta({ id: "c2", name: "lookup", delta: "{\"word\":" }))
    expect(map.close()).toEqual([{ type: "TOOL_CALL_END", toolCallId: "c2" }])
    expect(map.close()).toEqual([])
  })

  it("a failed turn is RUN_ERROR with the typed error's message and tag; a parked call is an interrupt", () => {
    const limited = new ProviderError({ provider: "claude-code", reason: new RateLimitError({ message: "slow down" }) })
    expect(Events.runError(limited)).toEqual({
      type: "RUN_ERROR",
      message: limited.message,
      code: "ProviderError/RateLimitError"
    })
    expect(Events.approvalRequired(limited)).toBeUndefined()
    const parked = new ApprovalRequired({
      message: "waits",
      approvalId: "a1",
      sessionId: "s1",
      tool: "transfer",
      input: { amount: 5 }
    })
    const error = new ProviderError({ provider: "claude-code", reason: parked })
    expect(Events.approvalRequired(error)).toBe(parked)
    const finished = Events.approvalInterrupt({ threadId: "t", runId: "r" }, parked, 0)
    expect(finished).toMatchObject({
      type: "RUN_FINISHED",
      threadId: "t",
      runId: "r",
      outcome: {
        type: "interrupt",
        interrupts: [{
          id: "a1",
          reason: "tool_approval",
          expiresAt: "1970-01-01T00:00:00.000Z",
          metadata: { "effect-chat-bridge": { tool: "transfer", input: { amount: 5 } } }
        }]
      }
    })
  })

  it("a turn stopped from elsewhere finishes the run as cancelled", () => {
    expect(Events.cancelled({ threadId: "t", runId: "r" })).toEqual({
      type: "RUN_FINISHED",
      threadId: "t",
      runId: "r",
      outcome: { type: "cancelled" }
    })
  })

  it("resume entries become decisions: resolved approves, cancelled or approved:false denies", () => {
    const decisions = Events.resumeDecisions(input([], [
      { interruptId: "a1", status: "resolved", payload: { approved: true, updatedInput: { amount: 6 } } },
      { interruptId: "a2", status: "resolved", payload: { approved: false, reason: "no" } },
      { interruptId: "a3", status: "cancelled" }
    ]))
    expect(decisions).toEqual([
      { _tag: "Approve", approvalId: "a1", updatedInput: { amount: 6 } },
      { _tag: "Deny", approvalId: "a2", reason: "no" },
      { _tag: "Deny", approvalId: "a3", reason: "The user denied this tool call" }
    ])
  })

  it("a run sends its trailing user messages only (the history lives with Claude Code)", () => {
    expect(Events.newUserText(input([
      { id: "1", role: "user", content: "old" },
      { id: "2", role: "assistant", content: "answer" },
      { id: "3", role: "user", content: "first" },
      { id: "4", role: "user", content: [{ type: "text", text: "second" }] }
    ]))).toBe("first\n\nsecond")
    expect(Events.newUserText(input([{ id: "1", role: "user", content: "hi" }, {
      id: "2",
      role: "assistant",
      content: "x"
    }]))).toBe("")
    expect(Events.newUserText(input([]))).toBe("")
  })
})
