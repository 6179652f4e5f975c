/**
 * Edges of the HTTP providers that the fakes do not reach: the default endpoints (checked with an
 * in-memory HttpClient, so no request leaves the machine) and streams that end without a finish
 * (served raw by a server on 127.0.0.1).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as Gemini from "../../src/layers/Gemini.ts"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import { HttpLive, SecretKey } from "./httpProviderSupport.ts"
import { deltas, runRecording } from "./streamSupport.ts"

interface Seen {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

/** An HttpClient that records each request and answers it with `reply` (JSON, status 200). */
const recordingClient = (reply: unknown) => {
  const seen: Array<Seen> = []
  const client = HttpClient.make((request, url) =>
    Effect.sync(() => {
      const body = request.body._tag === "Uint8Array" ? JSON.parse(new TextDecoder().decode(request.body.body)) : null
      seen.push({ url: url.toString(), headers: request.headers, body })
      return HttpClientResponse.fromWeb(
        request,
        new Response(JSON.stringify(reply), { status: 200, headers: { "content-type": "application/json" } })
      )
    })
  )
  return { seen, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

describe("HTTP providers: default endpoints", () => {
  it.effect("OpenAI goes to api.openai.com/v1 with its key; a compatible server without a key gets no authorization", () => {
    const { layer, seen } = recordingClient({ choices: [{ message: { content: "hi" } }] })
    return Effect.gen(function*() {
      const chat = yield* OpenAi.make({ model: "gpt-test", apiKey: Redacted.make(SecretKey) })
      expect(yield* chat.chat("hello")).toBe("hi")
      expect(seen).toHaveLength(1)
      expect(seen[0]!.url).toBe("https://api.openai.com/v1/chat/completions")
      expect(seen[0]!.headers["authorization"]).toBe(`Bearer ${SecretKey}`)
      expect(seen[0]!.body).toMatchObject({ model: "gpt-test", messages: [{ role: "user", content: "hello" }] })
      const local = yield* OpenAi.make({ model: "gpt-test", baseUrl: "http://127.0.0.1:9/v1" })
      expect(yield* local.chat("hello")).toBe("hi")
      expect(seen[1]!.url).toBe("http://127.0.0.1:9/v1/chat/completions")
      expect(seen[1]!.headers["authorization"]).toBeUndefined()
    }).pipe(Effect.provide(layer))
  })

  it.effect("Claude goes to api.anthropic.com/v1/messages with the default version and max_tokens", () => {
    const { layer, seen } = recordingClient({ content: [{ type: "text", text: "hi" }] })
    return Effect.gen(function*() {
      const chat = yield* ClaudeApi.make({ model: "claude-test", apiKey: Redacted.make(SecretKey) })
      expect(yield* chat.chat("hello")).toBe("hi")
      expect(seen[0]!.url).toBe("https://api.anthropic.com/v1/messages")
      expect(seen[0]!.headers["anthropic-version"]).toBe(ClaudeApi.DefaultApiVersion)
      expect(seen[0]!.headers["x-api-key"]).toBe(SecretKey)
      expect(seen[0]!.body).toMatchObject({ max_tokens: ClaudeApi.DefaultMaxTokens })
    }).pipe(Effect.provide(layer))
  })

  it.effect("Gemini goes to generativelanguage.googleapis.com/v1beta, the model name escaped in the path", () => {
    const { layer, seen } = recordingClient({ candidates: [{ content: { parts: [{ text: "hi" }] } }] })
    return Effect.gen(function*() {
      const chat = yield* Gemini.make({ model: "models/tuned/x y", apiKey: Redacted.make(SecretKey) })
      expect(yield* chat.chat("hello")).toBe("hi")
      expect(seen[0]!.url).toBe(
        "https://generativelanguage.googleapis.com/v1beta/models/tuned%2Fx%20y:generateContent"
      )
    }).pipe(Effect.provide(layer))
  })
})

/** A server on 127.0.0.1 that answers every POST with `body` as an event stream, then ends it. */
const rawSse = (body: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ url: string; close: () => Promise<void> }>((resume) => {
      const server = createServer((req, res) => {
        req.resume()
        req.on("end", () => {
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.end(body)
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: `http://127.0.0.1:${port}`,
          close: () =>
            new Promise<void>((done) => {
              server.closeAllConnections()
              server.close(() => done())
            })
        }))
      })
    }),
    ({ close }) => Effect.promise(close)
  ).pipe(Effect.map(({ url }) => url))

const data = (json: unknown) => `data: ${JSON.stringify(json)}\n\n`

describe("HTTP providers: a stream that ends before its finish", () => {
  it.live("OpenAI: deltas but no finish_reason is a retryable network error after the deltas", () =>
    Effect.gen(function*() {
      const url = yield* rawSse(
        data({ choices: [{ index: 0, delta: { content: "Hel" } }] }) +
          data({ choices: [{ index: 0, delta: { content: "lo" } }] }) + "data: [DONE]\n\n"
      )
      const chat = yield* OpenAi.make({ model: "m", baseUrl: `${url}/v1`, apiKey: Redacted.make(SecretKey) })
      const { error, seen } = yield* runRecording(chat.chatStream("go"))
      expect(deltas(seen)).toBe("Hello")
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "openai",
        reason: { _tag: "NetworkError" },
        isRetryable: true,
        message: "openai stream ended before the message was complete"
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("Gemini: chunks without a finishReason (or block reason) are a truncated stream", () =>
    Effect.gen(function*() {
      const url = yield* rawSse(
        data({ candidates: [{ content: { parts: [{ text: "Par" }] } }] }) +
          data({ candidates: [{ content: { parts: [{ text: "tial" }] } }], usageMetadata: { promptTokenCount: 2 } })
      )
      const chat = yield* Gemini.make({ model: "g", baseUrl: url, apiKey: Redacted.make(SecretKey) })
      const { error, seen } = yield* runRecording(chat.chatStream("go"))
      expect(deltas(seen)).toBe("Partial")
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "gemini",
        reason: { _tag: "NetworkError" },
        message: "gemini stream ended before the message was complete"
      })
      expect((yield* chat.usage).known).toBe(false)
    }).pipe(Effect.provide(HttpLive)))

  it.live("Gemini: a streamed block reason without candidates is the typed no-answer error", () =>
    Effect.gen(function*() {
      const url = yield* rawSse(data({ promptFeedback: { blockReason: "SAFETY" } }))
      const chat = yield* Gemini.make({ model: "g", baseUrl: url, apiKey: Redacted.make(SecretKey) })
      const { error, seen } = yield* runRecording(chat.chatStream("go"))
      expect(seen).toEqual([])
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "gemini",
        reason: { _tag: "UnknownError" },
        isRetryable: false
      })
      expect(error?.message).toContain("SAFETY")
    }).pipe(Effect.provide(HttpLive)))
})
