import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { mcpContent } from "../../src/internal/agentCli/mediaMcp.ts"
import * as Media from "../../src/internal/chat/media.ts"
import { contentBlock } from "../../src/internal/http/anthropicWire.ts"
import { inlinePart } from "../../src/internal/http/geminiWire.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import * as Content from "../../src/services/Content.ts"
import * as Tool from "../../src/services/Tool.ts"
import { pngBase64, pngBytes } from "../support/media.ts"

describe("Content", () => {
  it("builds parts from bytes or base64, and the Schema decodes them (and refuses unknown parts)", () => {
    const parts = [
      Content.text("hi"),
      Content.image(pngBytes, "image/png"),
      Content.image(pngBase64, "image/png"),
      Content.imageUrl("https://example.com/a.png"),
      Content.document(pngBytes, { title: "t.pdf" }),
      Content.documentUrl("https://example.com/a.pdf", { title: "a.pdf" })
    ]
    expect(parts[1]).toEqual(parts[2])
    expect(parts[4]).toEqual({
      type: "document",
      source: { type: "base64", mediaType: "application/pdf", data: pngBase64 },
      title: "t.pdf"
    })
    expect(Schema.decodeUnknownSync(Content.Prompt)(parts)).toEqual(parts)
    expect(Schema.decodeUnknownSync(Content.Prompt)("plain")).toBe("plain")
    expect(() => Schema.decodeUnknownSync(Content.Prompt)([{ type: "audio", data: "" }])).toThrow()
    expect(Content.textOf(parts)).toBe("hi")
    expect(Content.hasMedia("x")).toBe(false)
    expect(Content.partsOf("x")).toEqual([Content.text("x")])
  })

  it("UnsupportedContentError carries the provider, the reason and the message", () => {
    const error = new Content.UnsupportedContentError({
      provider: "openai",
      reason: new Content.Document({ message: "no PDFs" })
    })
    expect(error).toMatchObject({ _tag: "UnsupportedContentError", provider: "openai", reason: { _tag: "Document" } })
    expect(error.message).toBe("no PDFs")
  })

  it("sizes base64 as decoded bytes", () => {
    expect(Media.decodedBytes(pngBase64)).toBe(pngBytes.length)
    expect(Media.decodedBytes("QQ==")).toBe(1)
    expect(Media.decodedBytes("QUI=")).toBe(2)
    expect(Media.decodedBytes("QUJD\nREVG")).toBe(6)
  })

  it.effect("a text-only model refuses images and documents; an empty prompt is EmptyPromptError", () =>
    Effect.gen(function*() {
      const text = Media.textOnly("custom")
      const image = yield* Effect.flip(Media.checkPrompt(text, [Content.image(pngBytes, "image/png")]))
      expect(image).toMatchObject({ reason: { _tag: "MediaType" }, provider: "custom" })
      const doc = yield* Effect.flip(
        Media.checkPrompt(Media.gemini, [Content.document(pngBytes)]).pipe(
          Effect.andThen(Media.checkPrompt(text, [Content.document(pngBytes)]))
        )
      )
      expect(doc).toMatchObject({ reason: { _tag: "Document" } })
      const empty = yield* Effect.flip(Media.requirePrompt("prompt", [], Media.anthropic))
      expect(empty._tag).toBe("EmptyPromptError")
      // Media alone is a prompt.
      yield* Media.requirePrompt("prompt", [Content.image(pngBytes, "image/png")], Media.anthropic)
    }))

  it("wire edge cases: empty text dropped (Anthropic), a URL part as text (Gemini), image-only MCP results", () => {
    expect(contentBlock(Content.text(""))).toEqual([])
    expect(contentBlock(Content.documentUrl("https://x.test/a.pdf", { title: "a" }))).toEqual([
      { type: "document", source: { type: "url", url: "https://x.test/a.pdf" }, title: "a" }
    ])
    expect(inlinePart(Content.imageUrl("https://x.test/a.png"))).toEqual({ text: "https://x.test/a.png" })
    const result = new Tool.ToolResult({
      callId: "c",
      name: "t",
      content: "",
      isError: false,
      images: [Content.image(pngBase64, "image/png")]
    })
    expect(mcpContent(result)).toEqual([{ type: "image", data: pngBase64, mimeType: "image/png" }])
    expect(mcpContent(new Tool.ToolResult({ callId: "c", name: "t", content: "", isError: false }))).toEqual([
      { type: "text", text: "" }
    ])
    expect(Media.omittedImagesNote([Content.imageUrl("https://x.test/a.png")])).toContain("https://x.test/a.png")
  })

  it.effect("a tool returns ToolContent (make and dynamic): the text is the result, images ride along", () =>
    Effect.gen(function*() {
      const shot = Content.toolContent([Content.text("a"), Content.image(pngBytes, "image/png"), Content.text("b")])
      const made = Tool.make("shot", {
        description: "d",
        parameters: {},
        success: Schema.Number,
        handler: () => Effect.succeed(shot as unknown as number)
      })
      const dyn = Tool.dynamic("dyn", {
        description: "d",
        inputSchema: { type: "object" },
        handler: () => Effect.succeed(shot)
      })
      const set = yield* Tool.validate([made, dyn])
      for (const name of ["shot", "dyn"]) {
        const r = yield* Tool.executeTool(set, new Tool.ToolCall({ id: "1", name, arguments: {} }))
        expect(r).toMatchObject({ content: "a\n\nb", isError: false, images: [Content.image(pngBytes, "image/png")] })
      }
    }))

  it.effect("Scripted takes any media and streams; its model sees the parts", () =>
    Effect.gen(function*() {
      const chat = yield* ChatClient
      const events = yield* Stream.runCollect(chat.chatStream([Content.imageUrl("https://x.test/a.png")]))
      expect([...events].at(-1)).toMatchObject({ _tag: "Complete", text: "seen" })
    }).pipe(Effect.provide(Scripted.layer({
      respond: ({ history }) =>
        Effect.succeed(Scripted.text(history[0]!.role === "user" && history[0]!.parts !== undefined ? "seen" : "?"))
    }))))
})
