import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Content from "../../src/services/Content.ts"
import * as Tool from "../../src/services/Tool.ts"
import { sandbox } from "../support/claudeCli.ts"
import { agentClient } from "../support/claudeClients.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { pdfBytes, pngBase64, pngBytes } from "../support/media.ts"

const modelTurns = (api: Fake.FakeMessagesApi) => api.messageRequests().filter((r) => r.body["max_tokens"] !== 1)

const lastUserBlocks = (req: Fake.FakeRequest): ReadonlyArray<Record<string, unknown>> => {
  const user = [...(req.body.messages ?? [])].reverse().find((m) => m.role === "user")
  return Array.isArray(user?.content) ? (user.content as ReadonlyArray<Record<string, unknown>>) : []
}

describe("ClaudeAgent media with the SDK's real claude binary", () => {
  for (const keepAlive of [false, true]) {
    it.live(
      `an image and a PDF reach the Messages API as blocks (keepAlive: ${keepAlive})`,
      () =>
        Effect.gen(function*() {
          const api = yield* Fake.make(() => ({ text: "A red pixel." }))
          const box = yield* sandbox(api.url)
          const chat = yield* agentClient(box, { keepAlive })
          const answer = yield* chat.chat([
            Content.text("What is in this image?"),
            Content.image(pngBytes, "image/png"),
            Content.document(pdfBytes)
          ])
          expect(answer).toBe("A red pixel.")
          const blocks = lastUserBlocks(modelTurns(api)[0]!)
          expect(blocks).toContainEqual(
            expect.objectContaining({
              type: "image",
              source: { type: "base64", media_type: "image/png", data: pngBase64 }
            })
          )
          expect(blocks).toContainEqual(expect.objectContaining({ type: "document" }))
          expect(yield* chat.chat("And now?")).toBe("A red pixel.")
        }),
      { timeout: 120_000 }
    )
  }

  it.live("an image returned by a tool reaches the model in the tool_result", () =>
    Effect.gen(function*() {
      const screenshot = Tool.make("screenshot", {
        description: "Takes a screenshot",
        parameters: {},
        handler: () =>
          Effect.succeed(Content.toolContent([Content.text("the screen"), Content.image(pngBytes, "image/png")]))
      })
      const api = yield* Fake.make((req) =>
        lastUserBlocks(req).some((b) => b["type"] === "tool_result")
          ? { text: "I see it." }
          : { toolUses: [{ name: "mcp__gtb__screenshot", input: {} }] }
      )
      const box = yield* sandbox(api.url)
      const chat = yield* agentClient(box)
      yield* chat.setTools([screenshot])
      expect(yield* chat.chat("Take a screenshot")).toBe("I see it.")
      const result = lastUserBlocks(modelTurns(api)[1]!).find((b) => b["type"] === "tool_result")!
      expect(result["content"]).toEqual(expect.arrayContaining([
        expect.objectContaining({ type: "image", source: expect.objectContaining({ data: pngBase64 }) })
      ]))
    }), { timeout: 120_000 })
})
