/**
 * `needsApproval` through `ChatLanguageModel` on the real `claude` binary (issue 47): the CLI
 * parks the toolkit's `send` call (the gate defers it), `effect/ai`'s `Chat` gets a
 * `tool-approval-request`, and the next call's `tool-approval-response` runs the handler once
 * (effect/ai's own resolution) before the model answers from its result.
 */
import { expect, it } from "@effect/vitest"
import * as AiChat from "effect/ai/Chat"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as ChatLanguageModel from "../../src/ai/ChatLanguageModel.ts"
import { claudeBinary, claudeProcessesIn, sandbox } from "../support/claudeCli.ts"
import { localServices } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const Send = AiTool.make("send", {
  description: "Sends money",
  parameters: Schema.Struct({ amount: Schema.Number }),
  success: Schema.String,
  needsApproval: true
})
const Bank = Toolkit.make(Send)

/** The model: asks for `send` until the transcript shows its result, then answers with it. */
const model = (req: Fake.FakeRequest): Fake.FakeReply =>
  Fake.lastUserText(req).includes("Tool send returned")
    ? { text: "Sent, as approved." }
    : { toolUses: [{ id: "toolu_send", name: "mcp__gtb__send", input: { amount: 5 } }] }

describeWithClaude("ChatLanguageModel approvals on the real claude binary", () => {
  it.live("ClaudeLocal: a parked call is a tool-approval-request; the approval runs the handler once", () => {
    let sent = 0
    const handlers = Bank.toLayer({ send: ({ amount }) => Effect.sync(() => (sent += 1, `sent ${amount}`)) })
    return Effect.gen(function*() {
      const api = yield* Fake.make(model)
      const box = yield* sandbox(api.url)
      const layer = ChatLanguageModel.layerClaudeLocal({
        binary: claudeBinary,
        cwd: box.cwd,
        env: box.env,
        requestTimeout: "60 seconds"
      }).pipe(Layer.provide(localServices(box)))
      yield* Effect.gen(function*() {
        const chat = yield* AiChat.empty
        const first = yield* chat.generateText({ prompt: "Send 5 to Ana", toolkit: Bank })
        expect(first.finishReason).toBe("tool-calls")
        expect(first.toolCalls).toMatchObject([{ id: "toolu_send", name: "send", params: { amount: 5 } }])
        const request = first.content.find((part) => part.type === "tool-approval-request")
        expect(request).toMatchObject({ toolCallId: "toolu_send" })
        expect(sent).toBe(0)
        expect(claudeProcessesIn(box.cwd)).toEqual([])

        const second = yield* chat.generateText({
          prompt: [{
            role: "tool",
            content: [{ type: "tool-approval-response", approvalId: request!.approvalId, approved: true }]
          }],
          toolkit: Bank
        })
        expect(sent).toBe(1)
        expect(second.text).toContain("Sent, as approved.")
        expect(Fake.lastUserText(api.messageRequests().at(-1)!)).toContain(`Tool send returned "sent 5"`)
      }).pipe(Effect.provide(layer))
    }).pipe(Effect.provide(handlers))
  }, 180_000)
})
