import { describe, expect, it } from "@effect/vitest"
import * as AiTool from "effect/ai/Tool"
import * as Schema from "effect/Schema"
import { MetadataKey } from "../../src/internal/effectAi/errors.ts"
import { collectParts, encodeUsage, makeTranslator } from "../../src/internal/effectAi/translate.ts"
import { ApprovalRequired, Usage } from "../../src/services/ChatClient.ts"
import { Complete, TextDelta, ToolCallEnd, ToolCallStart } from "../../src/services/ChatEvent.ts"
import { Interrupted, InterruptedTool } from "../../src/services/ClaudeLive.ts"
import { Lookup } from "./aiSupport.ts"

const Guarded = AiTool.make("delete_file", {
  parameters: Schema.Struct({ path: Schema.String }),
  success: Schema.String,
  needsApproval: true
})

describe("translate.encodeUsage", () => {
  it("counts that make no sense as a breakdown are left out, not negative", () => {
    // More cached than input tokens, more reasoning than output tokens: the differences are unknown.
    expect(encodeUsage(Usage.of({ inputTokens: 3, outputTokens: 1, cachedTokens: 5, reasoningTokens: 2 }))).toEqual({
      inputTokens: { total: 3, cacheRead: 5, uncached: undefined },
      outputTokens: { total: 1, reasoning: 2, text: undefined }
    })
  })
})

describe("translate.makeTranslator: stopped and parked turns", () => {
  it("an interrupted turn closes the text and reports the CLI's reason and the tools it ran", () => {
    const translate = makeTranslator([])
    const before = translate(new TextDelta({ text: "partial" }))
    expect(before.map((part) => part.type)).toEqual(["text-start", "text-delta"])
    const parts = translate.interrupted(
      new Interrupted({
        answer: "partial",
        terminalReason: "aborted_tools",
        tools: [
          new InterruptedTool({ id: "t1", name: "Bash", isError: true }),
          new InterruptedTool({ id: "t2", name: "Read" })
        ]
      }),
      Usage.of({ inputTokens: 4, outputTokens: 2 })
    )
    expect(parts).toEqual([
      { type: "text-end", id: "text-0" },
      {
        type: "finish",
        reason: "other",
        usage: encodeUsage(Usage.of({ inputTokens: 4, outputTokens: 2 })),
        metadata: {
          [MetadataKey]: {
            interrupted: {
              terminalReason: "aborted_tools",
              tools: [{ id: "t1", name: "Bash", isError: true }, { id: "t2", name: "Read" }]
            }
          }
        }
      }
    ])
  })

  it("an interruption without a reason has no terminalReason", () => {
    const [finish] = makeTranslator([]).interrupted(new Interrupted({ answer: "", tools: [] }), Usage.empty)
    expect(finish).toMatchObject({
      type: "finish",
      reason: "other",
      metadata: { [MetadataKey]: { interrupted: { tools: [] } } }
    })
    expect(JSON.stringify(finish)).not.toContain("terminalReason")
  })

  it("a parked call the stream never showed is told with the approval's id and input", () => {
    const translate = makeTranslator([Guarded])
    const parts = translate.parked(
      new ApprovalRequired({
        message: "needs approval",
        approvalId: "ap-1",
        sessionId: "s-1",
        tool: "delete_file",
        input: { path: "/tmp/x" },
        conversationId: "conv-9"
      }),
      Usage.empty
    )
    expect(parts).toEqual([
      { type: "tool-call", id: "ap-1", name: "delete_file", params: { path: "/tmp/x" }, providerExecuted: false },
      {
        type: "finish",
        reason: "tool-calls",
        usage: { inputTokens: {}, outputTokens: {} },
        metadata: { [MetadataKey]: { approval: { approvalId: "ap-1", sessionId: "s-1", conversationId: "conv-9" } } }
      }
    ])
  })

  it("a held call whose result comes back is told once, before its result; an unheld end gives the result only", () => {
    const translate = makeTranslator([Guarded, Lookup])
    expect(translate(new ToolCallStart({ id: "g", name: "delete_file", arguments: { path: "/a" } }))).toEqual([])
    expect(translate(new ToolCallEnd({ id: "g", name: "delete_file", result: "\"deleted\"", isError: false }))).toEqual(
      [
        { type: "tool-call", id: "g", name: "delete_file", params: { path: "/a" }, providerExecuted: true },
        {
          type: "tool-result",
          id: "g",
          name: "delete_file",
          result: "deleted",
          isFailure: false,
          providerExecuted: true
        }
      ]
    )
    // A second end for the same id: the call was told already.
    expect(translate(new ToolCallEnd({ id: "g", name: "delete_file", result: "\"deleted\"", isError: false }))).toEqual(
      [
        {
          type: "tool-result",
          id: "g",
          name: "delete_file",
          result: "deleted",
          isFailure: false,
          providerExecuted: true
        }
      ]
    )
    // A `failureMode: "return"` failure whose text is not the tool's JSON error is a tool error.
    translate(new ToolCallStart({ id: "l", name: "lookup", arguments: { city: "X" } }))
    expect(translate(new ToolCallEnd({ id: "l", name: "lookup", result: "Error: {not json", isError: true }))).toEqual(
      []
    )
    expect(translate(new Complete({ text: "" }))).toMatchObject([{
      type: "finish",
      metadata: { [MetadataKey]: { toolErrors: [{ id: "l", name: "lookup", message: "Error: {not json" }] } }
    }])
  })
})

describe("translate.collectParts", () => {
  it("keeps text blocks, tool parts and the finish; drops parts it does not fold", () => {
    const parts = collectParts([
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "hmm" },
      { type: "reasoning-end", id: "r" },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "Hel" },
      { type: "text-delta", id: "t", delta: "lo" },
      { type: "text-end", id: "t" },
      { type: "text-end", id: "never-started" },
      { type: "tool-params-start", id: "c", name: "lookup", providerExecuted: false },
      { type: "tool-call", id: "c", name: "lookup", params: { city: "X" }, providerExecuted: true }
    ])
    expect(parts).toEqual([
      { type: "text", text: "Hello" },
      { type: "text", text: "" },
      { type: "tool-call", id: "c", name: "lookup", params: { city: "X" }, providerExecuted: true }
    ])
  })
})
