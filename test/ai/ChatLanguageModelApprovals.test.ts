/**
 * `needsApproval` through `ChatLanguageModel` (issue 47), with the real `effect/ai` `Chat` and
 * `LanguageModel`: a turn that parks a call (`ApprovalRequired`) yields effect/ai's
 * `tool-approval-request`, and the next call's `tool-approval-response` runs (or refuses) the
 * call through effect/ai's own resolution — the handler once — before the model continues.
 * The client is `Scripted` with approvals attached, standing in for a Claude Code client whose
 * CLI parked the call (the real binary's parking is covered by `ClaudeApprovals.e2e`).
 */
import { describe, expect, it } from "@effect/vitest"
import * as AiChat from "effect/ai/Chat"
import * as AiLanguageModel from "effect/ai/LanguageModel"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ChatLanguageModel from "../../src/ai/ChatLanguageModel.ts"
import { Approvals } from "../../src/internal/claude/conversation.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ApprovalRequired, ProviderError, Usage } from "../../src/services/ChatClient.ts"
import { Complete, TextDelta, ToolCallStart, UsageEvent } from "../../src/services/ChatEvent.ts"
import type { ClaudeApprovalsService } from "../../src/services/ClaudeApprovals.ts"

const Send = AiTool.make("send", {
  description: "Sends money",
  parameters: Schema.Struct({ amount: Schema.Number }),
  success: Schema.String,
  needsApproval: true
})
const Read = AiTool.make("read", { description: "Reads the balance", success: Schema.Number })
const Bank = Toolkit.make(Send, Read)

const parked = new ProviderError({
  provider: "claude-code",
  reason: new ApprovalRequired({
    message: "The call of send waits for an approval (ap-1)",
    approvalId: "ap-1",
    sessionId: "session-1",
    tool: "send",
    input: { amount: 5 }
  })
})

/**
 * A LanguageModel whose first call parks `send` (the CLI showed the call, then the turn ended on
 * it) and whose later calls answer from the transcript they get; each call's prompt is recorded.
 */
const parkingModel = () => {
  const prompts: Array<string> = []
  const layer = ChatLanguageModel.layer(() =>
    Effect.map(Scripted.make({ respond: () => Effect.succeed(Scripted.text("unused")) }), (client) =>
      Object.assign({
        ...client,
        usage: Effect.succeed(Usage.of({ inputTokens: 3, outputTokens: 1 })),
        chatStream: (prompt: unknown) => {
          const text = String(prompt)
          prompts.push(text)
          if (prompts.length === 1) {
            return Stream.make(
              new TextDelta({ text: "Sending." }),
              new ToolCallStart({ id: "toolu_1", name: "send", arguments: { amount: 5 } })
            ).pipe(Stream.concat(Stream.fail(parked)))
          }
          const answer = text.includes("execution-denied") ? "Not sent: too much" : "Sent 5"
          return Stream.make(
            new TextDelta({ text: answer }),
            new UsageEvent({ usage: Usage.of({ inputTokens: 2, outputTokens: 2 }) }),
            new Complete({ text: answer })
          )
        }
      }, { [Approvals]: {} as ClaudeApprovalsService }))
  )
  return { layer, prompts }
}

const handlersOf = () => {
  const calls = { send: 0, read: 0 }
  const layer = Bank.toLayer({
    send: ({ amount }) => Effect.sync(() => (calls.send += 1, `sent ${amount}`)),
    read: () => Effect.sync(() => (calls.read += 1, 10))
  })
  return { calls, layer }
}

describe("ChatLanguageModel approvals", () => {
  it.effect("a parked call is effect/ai's tool-approval-request; approving runs the handler once", () => {
    const model = parkingModel()
    const handlers = handlersOf()
    return Effect.gen(function*() {
      const chat = yield* AiChat.empty
      const first = yield* chat.generateText({ prompt: "Send 5", toolkit: Bank })
      expect(first.text).toBe("Sending.")
      expect(first.finishReason).toBe("tool-calls")
      expect(first.toolCalls).toMatchObject([{ id: "toolu_1", name: "send", params: { amount: 5 } }])
      expect(first.toolCalls[0]!.providerExecuted).not.toBe(true)
      const request = first.content.find((part) => part.type === "tool-approval-request")
      expect(request).toMatchObject({ toolCallId: "toolu_1" })
      const finish = first.content.find((part) => part.type === "finish")!
      expect(finish.metadata[ChatLanguageModel.MetadataKey]).toMatchObject({
        approval: { approvalId: "ap-1", sessionId: "session-1" }
      })
      expect(handlers.calls.send).toBe(0)

      const second = yield* chat.generateText({
        prompt: [{
          role: "tool",
          content: [{ type: "tool-approval-response", approvalId: request!.approvalId, approved: true }]
        }],
        toolkit: Bank
      })
      expect(handlers.calls.send).toBe(1)
      expect(second.text).toBe("Sent 5")
      // The model continued from the call and its result, in the transcript.
      expect(model.prompts[1]).toContain(`Assistant called tool send with {"amount":5}`)
      expect(model.prompts[1]).toContain(`Tool send returned "sent 5"`)

      // The answered approval is not asked about or run again.
      yield* chat.generateText({ prompt: "Thanks", toolkit: Bank })
      expect(handlers.calls.send).toBe(1)
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("denying: the handler never runs and the model reads the denial", () => {
    const model = parkingModel()
    const handlers = handlersOf()
    return Effect.gen(function*() {
      const chat = yield* AiChat.empty
      const first = yield* chat.generateText({ prompt: "Send 5", toolkit: Bank })
      const request = first.content.find((part) => part.type === "tool-approval-request")!
      const second = yield* chat.generateText({
        prompt: [{
          role: "tool",
          content: [{
            type: "tool-approval-response",
            approvalId: request.approvalId,
            approved: false,
            reason: "too much"
          }]
        }],
        toolkit: Bank
      })
      expect(second.text).toBe("Not sent: too much")
      expect(model.prompts[1]).toContain("too much")
      expect(handlers.calls.send).toBe(0)
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("streamText: the parked call ends the stream with a tool-call and finish reason tool-calls", () => {
    const model = parkingModel()
    const handlers = handlersOf()
    return Effect.gen(function*() {
      const parts = yield* Stream.runCollect(AiLanguageModel.streamText({ prompt: "Send 5", toolkit: Bank }))
      const types = parts.map((part) => part.type)
      expect(types).toContain("tool-approval-request")
      expect(types.filter((type) => type === "tool-call")).toHaveLength(1)
      expect(parts.find((part) => part.type === "finish")).toMatchObject({ reason: "tool-calls" })
      expect(handlers.calls.send).toBe(0)
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("a client without approvals still refuses needsApproval before any run", () => {
    const handlers = handlersOf()
    const layer = ChatLanguageModel.layer(() => Scripted.make({ respond: () => Effect.succeed(Scripted.text("x")) }))
    return Effect.gen(function*() {
      const error = yield* Effect.flip(AiLanguageModel.generateText({ prompt: "Send 5", toolkit: Bank }))
      expect(error.message).toContain("needsApproval cannot be honoured (send)")
    }).pipe(Effect.provide(handlers.layer), Effect.provide(layer))
  })
})
