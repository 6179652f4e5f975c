/**
 * Images and documents on the HTTP providers: the exact wire shape each API gets (inline and URL,
 * prompts and tool results), and the typed errors raised before any request.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as Gemini from "../../src/layers/Gemini.ts"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import * as Content from "../../src/services/Content.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as FakeGemini from "../support/FakeGemini.ts"
import * as FakeAnthropic from "../support/FakeMessagesApi.ts"
import * as FakeOpenAi from "../support/FakeOpenAi.ts"
import { pdfBase64, pdfBytes, pngBase64, pngBytes } from "../support/media.ts"
import { HttpLive, SecretKey } from "./httpProviderSupport.ts"

const settings = { apiKey: Redacted.make(SecretKey), model: "m", retryBaseDelay: "5 millis" } as const

const prompt: ReadonlyArray<Content.Part> = [
  Content.text("Describe both."),
  Content.image(pngBytes, "image/png"),
  Content.document(pdfBytes, { title: "report.pdf" })
]

const screenshot = Tool.make("screenshot", {
  description: "Takes a screenshot",
  parameters: {},
  handler: () =>
    Effect.succeed(Content.toolContent([Content.text("the screen"), Content.image(pngBase64, "image/png")]))
})

const MB = 1024 * 1024

describe("ClaudeApi media", () => {
  it.live("image and document blocks, inline and by URL; a tool's image inside its tool_result", () =>
    Effect.gen(function*() {
      let n = 0
      const api = yield* FakeAnthropic.make(() =>
        n++ === 1 ? { toolUses: [{ id: "t1", name: "screenshot", input: {} }] } : { text: "ok" }
      )
      const chat = yield* ClaudeApi.make({ ...settings, baseUrl: api.url })
      yield* chat.setTools([screenshot])
      expect(yield* chat.chat(prompt)).toBe("ok")
      const [first] = api.messageRequests()
      expect(first!.body.messages).toEqual([{
        role: "user",
        content: [
          { type: "text", text: "Describe both." },
          { type: "image", source: { type: "base64", media_type: "image/png", data: pngBase64 } },
          {
            type: "document",
            source: { type: "base64", media_type: "application/pdf", data: pdfBase64 },
            title: "report.pdf"
          }
        ]
      }])

      yield* chat.add([Content.imageUrl("https://example.com/cat.png")])
      expect(yield* chat.chat([Content.documentUrl("https://example.com/a.pdf")])).toBe("ok")
      const third = api.messageRequests()[2]!
      const messages = third.body.messages!
      // The URL prompt (add + chat, one message), then the tool turn: text and image in the tool_result.
      expect(messages[messages.length - 1]).toEqual({
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "t1",
          is_error: false,
          content: [
            { type: "text", text: "the screen" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: pngBase64 } }
          ]
        }]
      })
      expect(messages[messages.length - 3]).toEqual({
        role: "user",
        content: [
          { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
          { type: "document", source: { type: "url", url: "https://example.com/a.pdf" } }
        ]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("refuses before any request: an image over 5 MB, an unsupported type, bad base64, an empty prompt", () =>
    Effect.gen(function*() {
      const api = yield* FakeAnthropic.make(() => ({ text: "never" }))
      const chat = yield* ClaudeApi.make({ ...settings, baseUrl: api.url })
      const big = yield* Effect.flip(chat.chat([Content.image(new Uint8Array(5 * MB + 1), "image/png")]))
      expect(big).toMatchObject({
        _tag: "UnsupportedContentError",
        reason: { _tag: "TooLarge" },
        provider: "anthropic"
      })
      expect(big.message).toContain("5.0 MB")
      const bmp = yield* Effect.flip(chat.chat([Content.image(pngBytes, "image/bmp")]))
      expect(bmp).toMatchObject({ reason: { _tag: "MediaType" } })
      expect(bmp.message).toContain("image/png, image/jpeg, image/gif, image/webp")
      const word = yield* Effect.flip(chat.chat([Content.document(pdfBytes, { mediaType: "application/msword" })]))
      expect(word).toMatchObject({ reason: { _tag: "MediaType" } })
      const garbage = yield* Effect.flip(chat.add([Content.image("not base64!", "image/png")]))
      expect(garbage).toMatchObject({ reason: { _tag: "InvalidData" } })
      const ftp = yield* Effect.flip(chat.chat([Content.imageUrl("ftp://example.com/a.png")]))
      expect(ftp).toMatchObject({ reason: { _tag: "Url" } })
      const empty = yield* Effect.flip(chat.chat([Content.text("  ")]))
      expect(empty._tag).toBe("EmptyPromptError")
      expect(api.requests).toEqual([])
      // Just under the limit passes the check (and is sent).
      expect(yield* chat.chat([Content.image(new Uint8Array(5 * MB), "image/png")])).toBe("never")
    }).pipe(Effect.provide(HttpLive)))
})

describe("OpenAi media", () => {
  it.live("image_url data URLs and URLs, PDFs as file parts; a tool's image becomes a note", () =>
    Effect.gen(function*() {
      let n = 0
      const api = yield* FakeOpenAi.make(() =>
        n++ === 0 ? { toolCalls: [{ id: "c1", name: "screenshot", arguments: "{}" }] } : { text: "ok" }
      )
      const chat = yield* OpenAi.make({ ...settings, baseUrl: api.url })
      yield* chat.setTools([screenshot])
      expect(yield* chat.chat([...prompt, Content.imageUrl("https://example.com/cat.png")])).toBe("ok")
      const [first, second] = api.completionRequests()
      expect(first!.body.messages).toEqual([{
        role: "user",
        content: [
          { type: "text", text: "Describe both." },
          { type: "image_url", image_url: { url: `data:image/png;base64,${pngBase64}` } },
          { type: "file", file: { file_data: `data:application/pdf;base64,${pdfBase64}`, filename: "report.pdf" } },
          { type: "image_url", image_url: { url: "https://example.com/cat.png" } }
        ]
      }])
      expect(FakeOpenAi.toolMessages(second!)).toEqual([{
        tool_call_id: "c1",
        content:
          "the screen\n\n[The tool also returned 1 image(s) (image/png) that this provider cannot show in a tool result.]"
      }])
    }).pipe(Effect.provide(HttpLive)))

  it.live("refuses before any request: a PDF URL, an image over 20 MB; a text prompt is unchanged", () =>
    Effect.gen(function*() {
      const api = yield* FakeOpenAi.make(() => ({ text: "ok" }))
      const chat = yield* OpenAi.make({ ...settings, baseUrl: api.url })
      const url = yield* Effect.flip(
        chat.chat([Content.text("read"), Content.documentUrl("https://example.com/a.pdf")])
      )
      expect(url).toMatchObject({ _tag: "UnsupportedContentError", reason: { _tag: "Url" }, provider: "openai" })
      expect(url.message).toContain("Content.document")
      const big = yield* Effect.flip(chat.chat([Content.image(new Uint8Array(20 * MB + 1), "image/jpeg")]))
      expect(big).toMatchObject({ reason: { _tag: "TooLarge" } })
      expect(api.requests).toEqual([])
      expect(yield* chat.chat("hi")).toBe("ok")
      expect(api.completionRequests()[0]!.body.messages).toEqual([{ role: "user", content: "hi" }])
    }).pipe(Effect.provide(HttpLive)))
})

describe("Gemini media", () => {
  it.live("inlineData for images and PDFs (also streamed); a tool's image becomes a note", () =>
    Effect.gen(function*() {
      let n = 0
      const api = yield* FakeGemini.make(() =>
        n++ === 0 ? { functionCalls: [{ id: "f1", name: "screenshot", args: {} }] } : { text: "ok" }
      )
      const chat = yield* Gemini.make({ ...settings, baseUrl: api.url })
      yield* chat.setTools([screenshot])
      expect(yield* chat.chat(prompt)).toBe("ok")
      const [first, second] = api.generateRequests()
      expect(first!.body.contents).toEqual([{
        role: "user",
        parts: [
          { text: "Describe both." },
          { inlineData: { mimeType: "image/png", data: pngBase64 } },
          { inlineData: { mimeType: "application/pdf", data: pdfBase64 } }
        ]
      }])
      expect(FakeGemini.functionResponses(second!)).toEqual([{
        name: "screenshot",
        id: "f1",
        response: {
          output:
            "the screen\n\n[The tool also returned 1 image(s) (image/png) that this provider cannot show in a tool result.]"
        }
      }])
      const events = yield* Stream.runCollect(chat.chatStream([Content.image(pngBytes, "image/webp")]))
      expect([...events].at(-1)).toMatchObject({ _tag: "Complete", text: "ok" })
      expect(api.generateRequests()[2]!.body.contents!.at(-1)).toEqual({
        role: "user",
        parts: [{ inlineData: { mimeType: "image/webp", data: pngBase64 } }]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("refuses before any request: any URL, an image over 20 MB", () =>
    Effect.gen(function*() {
      const api = yield* FakeGemini.make(() => ({ text: "ok" }))
      const chat = yield* Gemini.make({ ...settings, baseUrl: api.url })
      const url = yield* Effect.flip(chat.chat([Content.imageUrl("https://example.com/cat.png")]))
      expect(url).toMatchObject({ _tag: "UnsupportedContentError", reason: { _tag: "Url" }, provider: "gemini" })
      const stream = yield* Effect.flip(Stream.runDrain(chat.chatStream([Content.documentUrl("https://x.test/a.pdf")])))
      expect(stream).toMatchObject({ reason: { _tag: "Url" } })
      const big = yield* Effect.flip(chat.ask([Content.image(new Uint8Array(21 * MB), "image/gif")], Tool.ToolFailure))
      expect(big).toMatchObject({ reason: { _tag: "TooLarge" } })
      expect(api.requests).toEqual([])
    }).pipe(Effect.provide(HttpLive)))
})
