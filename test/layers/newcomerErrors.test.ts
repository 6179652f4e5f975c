/**
 * The errors a newcomer meets first, each naming what to do: OpenAI without a key, a base URL
 * where nothing listens (the refused connection keeps its cause).
 */
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as Gemini from "../../src/layers/Gemini.ts"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import { HttpLive, SecretKey } from "./httpProviderSupport.ts"

/** A loopback port nothing listens on: bound, then released. */
const closedPort = Effect.callback<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

const withEnv = (env: Record<string, string>) =>
  Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))

describe("errors a newcomer meets", () => {
  it.effect("AI_PROVIDER=openai without OPENAI_API_KEY: a config error naming OPENAI_API_KEY and OPENAI_BASE_URL", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(OpenAi.layerFromEnv()).pipe(withEnv({})))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "openai",
        reason: { _tag: "ConfigurationError" },
        isRetryable: false
      })
      expect(error.message).toContain("set OPENAI_API_KEY")
      expect(error.message).toContain("OPENAI_BASE_URL")
      // A local compatible server needs no key.
      yield* Layer.build(OpenAi.layerFromEnv()).pipe(withEnv({ OPENAI_BASE_URL: "http://127.0.0.1:9/v1" }))
    }).pipe(Effect.provide(HttpLive)))

  it.effect("a missing key names the library's options and variables, never this repository's examples", () =>
    Effect.gen(function*() {
      const cases = [
        ["ANTHROPIC_API_KEY", "https://console.anthropic.com/settings/keys", ClaudeApi.layerFromEnv()],
        ["GEMINI_API_KEY", "https://aistudio.google.com/apikey", Gemini.layerFromEnv()]
      ] as const
      for (const [variable, keysPage, layer] of cases) {
        const error = yield* Effect.flip(Layer.build(layer).pipe(withEnv({})))
        expect(error).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "ConfigurationError" },
          isRetryable: false
        })
        expect(error.message).toBe(
          `${variable} is not set: get a key at ${keysPage} and set ${variable} (or pass apiKey). Without a key, ` +
            "ClaudeLocal.layerFromEnv() runs on a logged-in claude CLI, and Scripted.layer answers offline (for tests)"
        )
        expect(error.message).not.toMatch(/AI_PROVIDER|example|npm /)
      }
    }).pipe(Effect.provide(HttpLive)))

  it.live("a refused connection keeps its cause (ECONNREFUSED host:port) and names the base URL variable", () =>
    Effect.gen(function*() {
      const port = yield* closedPort
      const baseUrl = `http://127.0.0.1:${port}`
      const clients = [
        ["OPENAI_BASE_URL", yield* OpenAi.make({ model: "m", baseUrl: `${baseUrl}/v1`, maxRetries: 0 })],
        [
          "ANTHROPIC_BASE_URL",
          yield* ClaudeApi.make({ model: "m", baseUrl, apiKey: Redacted.make(SecretKey), maxRetries: 0 })
        ],
        [
          "GEMINI_BASE_URL",
          yield* Gemini.make({ model: "m", baseUrl, apiKey: Redacted.make(SecretKey), maxRetries: 0 })
        ]
      ] as const
      for (const [variable, chat] of clients) {
        const error = yield* Effect.flip(chat.chat("hi"))
        expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "NetworkError" }, isRetryable: true })
        expect(error.message).toContain(`ECONNREFUSED 127.0.0.1:${port}`)
        expect(error.message).toContain(variable)
        expect(error.message).not.toContain(SecretKey)
      }
    }).pipe(Effect.provide(HttpLive)))
})
