import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Content from "../../src/services/Content.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeProcessesIn, claudeVersions, sandbox } from "../support/claudeCli.ts"
import { type ClientBox, localClient } from "../support/claudeClients.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { pdfBytes, pngBase64, pngBytes } from "../support/media.ts"

const modelTurns = (api: Fake.FakeMessagesApi) => api.messageRequests().filter((r) => r.body["max_tokens"] !== 1)

/** The last user message's content blocks of a request. */
/** A wire content block, as the fake API received it. */
interface Block {
  readonly type?: unknown
  readonly text?: unknown
  readonly content?: unknown
}

const lastUserBlocks = (req: Fake.FakeRequest): ReadonlyArray<Block> => {
  const user = [...(req.body.messages ?? [])].reverse().find((m) => m.role === "user")
  return Array.isArray(user?.content) ? (user.content as ReadonlyArray<Block>) : []
}

describe.each(claudeVersions)("ClaudeLocal media with the real claude $version", ({ binary }) => {
  const clientIn = (box: ClientBox) => localClient(box, { binary })
  it.live(
    "an image and a PDF in the prompt reach the Messages API as image and document blocks",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "A red pixel." }))
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box)
        const answer = yield* chat.chat([
          Content.text("What is in this image?"),
          Content.image(pngBytes, "image/png"),
          Content.document(pdfBytes, { title: "tiny.pdf" })
        ])
        expect(answer).toBe("A red pixel.")
        const blocks = lastUserBlocks(modelTurns(api)[0]!)
        expect(blocks).toContainEqual(
          expect.objectContaining({
            type: "image",
            source: { type: "base64", media_type: "image/png", data: pngBase64 }
          })
        )
        expect(blocks).toContainEqual(
          expect.objectContaining({
            type: "document",
            source: expect.objectContaining({ media_type: "application/pdf" })
          })
        )
        expect(blocks.some((b) => b.type === "text" && String(b.text).includes("What is in this image?"))).toBe(true)

        // The next, text-only turn runs as before (plain stdin) and resumes the same session.
        const again = yield* chat.chat("And now?")
        expect(again).toBe("A red pixel.")
        const turns = modelTurns(api)
        const history = JSON.stringify(turns[turns.length - 1]!.body.messages)
        expect(history).toContain(pngBase64)
        expect(history).toContain("And now?")
      }),
    { timeout: 120_000 }
  )

  it.live(
    "an image returned by a tool reaches the model as an image in the tool_result",
    () =>
      Effect.gen(function*() {
        const screenshot = Tool.make("screenshot", {
          description: "Takes a screenshot",
          parameters: {},
          handler: () =>
            Effect.succeed(Content.toolContent([Content.text("the screen"), Content.image(pngBytes, "image/png")]))
        })
        const api = yield* Fake.make((req) => {
          const last = lastUserBlocks(req)
          return last.some((b) => b.type === "tool_result")
            ? { text: "I see it." }
            : { toolUses: [{ name: "mcp__gtb__screenshot", input: {} }] }
        })
        const box = yield* sandbox(api.url)
        const chat = yield* clientIn(box)
        yield* chat.setTools([screenshot])
        expect(yield* chat.chat("Take a screenshot")).toBe("I see it.")
        const result = lastUserBlocks(modelTurns(api)[1]!).find((b) => b.type === "tool_result")!
        expect(result.content).toEqual(expect.arrayContaining([
          expect.objectContaining({ type: "text", text: "the screen" }),
          expect.objectContaining({
            type: "image",
            source: expect.objectContaining({ type: "base64", data: pngBase64 })
          })
        ]))
      }),
    { timeout: 120_000 }
  )

  it.effect("a URL or an oversized image is refused before the CLI runs", () =>
    Effect.gen(function*() {
      const chat = yield* clientIn({ cwd: "/nonexistent", env: {}, secrets: "/nonexistent" })
      const url = yield* Effect.flip(chat.chat([Content.text("hi"), Content.imageUrl("https://example.com/a.png")]))
      expect(url).toMatchObject({ _tag: "UnsupportedContentError", reason: { _tag: "Url" }, provider: "claude-local" })
      const big = yield* Effect.flip(chat.chat([Content.image(new Uint8Array(6 * 1024 * 1024), "image/png")]))
      expect(big).toMatchObject({ _tag: "UnsupportedContentError", reason: { _tag: "TooLarge" } })
    }).pipe(Effect.scoped))
})

describe("ClaudeLocal media on a kept-alive CLI (real claude binary)", () => {
  it.live(
    "an image turn and a text turn share one kept-alive process; the image reaches the API as an image block",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "A red pixel." }))
        const box = yield* sandbox(api.url)
        const chat = yield* localClient(box, { keepAlive: true })
        expect(yield* chat.chat("Hello")).toBe("A red pixel.")
        const first = claudeProcessesIn(box.cwd)
        expect(first).toHaveLength(1)
        const answer = yield* chat.chat([Content.text("What is in this image?"), Content.image(pngBytes, "image/png")])
        expect(answer).toBe("A red pixel.")
        const turns = modelTurns(api)
        expect(lastUserBlocks(turns[turns.length - 1]!)).toContainEqual(
          expect.objectContaining({
            type: "image",
            source: { type: "base64", media_type: "image/png", data: pngBase64 }
          })
        )
        // Still the same process: media did not cost a restart.
        expect(claudeProcessesIn(box.cwd)).toEqual(first)
      }),
    { timeout: 120_000 }
  )
})
