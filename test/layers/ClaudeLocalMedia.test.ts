/** ClaudeLocal with media over a scripted subprocess: the argv and the stream-json stdin of each turn. */
import { describe, expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as TestSubprocess from "../../src/layers/TestSubprocess.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import * as Content from "../../src/services/Content.ts"
import { pdfBase64, pdfBytes, pngBase64, pngBytes } from "../support/media.ts"

const init = JSON.stringify({ type: "system", subtype: "init", session_id: "s", mcp_servers: [] })
const result = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({ type: "result", subtype: "success", is_error: false, result: "ok", session_id: "s", ...fields })
const ok = (fields: Record<string, unknown> = {}): TestSubprocess.Scripted => ({
  stdout: `${init}\n${result(fields)}\n`
})

const withClient = <A, E>(
  script: ReadonlyArray<TestSubprocess.Scripted>,
  cliVersion: string,
  body: (chat: ChatClient["Service"], test: TestSubprocess.TestSubprocess["Service"]) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const ctx = yield* Layer.build(
      ClaudeLocal.layer({ cliVersion }).pipe(
        Layer.provideMerge(Layer.merge(TestSubprocess.layer(script), NodeSecretFile.layer()))
      )
    )
    return yield* body(Context.get(ctx, ChatClient), Context.get(ctx, TestSubprocess.TestSubprocess))
  }).pipe(Effect.scoped)

describe("ClaudeLocal media (scripted subprocess)", () => {
  it.live("every turn, with media or not, reads one stream-json user message marked verbatim", () =>
    withClient([ok(), ok()], "2.1.332", (chat, test) =>
      Effect.gen(function*() {
        yield* chat.add("Some context.")
        expect(yield* chat.chat([Content.image(pngBytes, "image/png"), Content.document(pdfBytes)])).toBe("ok")
        expect(yield* chat.chat("plain")).toBe("ok")
        const [media, plain] = yield* test.calls
        expect(media!.args.slice(-2)).toEqual(["--input-format", "stream-json"])
        expect(media!.stdin!.endsWith("\n")).toBe(true)
        expect(media!.stdin!.trimEnd().split("\n")).toHaveLength(1)
        expect(JSON.parse(media!.stdin!)).toEqual({
          type: "user",
          message: {
            role: "user",
            content: [
              { type: "text", text: "Some context." },
              { type: "image", source: { type: "base64", media_type: "image/png", data: pngBase64 } },
              { type: "document", source: { type: "base64", media_type: "application/pdf", data: pdfBase64 } }
            ]
          },
          parent_tool_use_id: null,
          client_composed: true
        })
        expect(plain!.args.slice(-2)).toEqual(["--input-format", "stream-json"])
        expect(JSON.parse(plain!.stdin!)).toEqual({
          type: "user",
          message: { role: "user", content: "plain" },
          parent_tool_use_id: null,
          client_composed: true
        })
        expect(plain!.args).toContain("--resume")
      })))

  it.live("ask with media on a CLI without --json-schema: the schema goes in a last text block", () =>
    withClient([ok({ result: "{\"n\":1}" })], "2.0.0", (chat, test) =>
      Effect.gen(function*() {
        const answer = yield* chat.ask(
          [Content.text("Count"), Content.image(pngBytes, "image/gif")],
          Schema.Struct({
            n: Schema.Number
          })
        )
        expect(answer).toEqual({ n: 1 })
        const [call] = yield* test.calls
        expect(call!.args).not.toContain("--json-schema")
        const content = JSON.parse(call!.stdin!).message.content as ReadonlyArray<{ type: string; text?: string }>
        expect(content.map((b) => b.type)).toEqual(["text", "image", "text"])
        expect(content[2]!.text).toMatch(/^Answer with only a JSON object/)
      })))

  it.live("a document URL is refused before the CLI runs", () =>
    withClient([], "2.1.332", (chat, test) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(chat.chat([Content.documentUrl("https://example.com/a.pdf")]))
        expect(error).toMatchObject({
          _tag: "UnsupportedContentError",
          reason: { _tag: "Url" },
          provider: "claude-local"
        })
        expect(yield* test.calls).toEqual([])
      })))
})
