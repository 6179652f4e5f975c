import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as HttpClient from "effect/http/HttpClient"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as Fallback from "../../src/layers/Fallback.ts"
import * as Gemini from "../../src/layers/Gemini.ts"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import { ChatClient, type ChatClientService } from "../../src/services/ChatClient.ts"
import * as Tool from "../../src/services/Tool.ts"
import * as FakeMessages from "../support/FakeMessagesApi.ts"
import * as FakeOpenAi from "../support/FakeOpenAi.ts"
import { withCapturedLogs } from "./httpProviderSupport.ts"

// Fallback over the real HTTP providers and their fakes: the statuses and network errors come
// from real responses and real sockets, not from scripted errors.
const anthropicAt = (url: string) =>
  ClaudeApi.layer({ apiKey: Redacted.make("sk-ant"), model: "claude-test", baseUrl: url, maxRetries: 0 })
const openAiAt = (url: string) =>
  OpenAi.layer({ apiKey: Redacted.make("sk-oai"), model: "gpt-test", baseUrl: url, maxRetries: 0 })

const chain = (first: Layer.Layer<ChatClient, unknown, never>, second: Layer.Layer<ChatClient, unknown, never>) =>
  Fallback.layer([{ name: "anthropic", layer: first }, { name: "openai", layer: second }])

const add = Tool.make("add", {
  description: "Adds",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

const withHttp = <A, E>(
  layer: Layer.Layer<ChatClient, unknown, never>,
  body: (chat: ChatClientService) => Effect.Effect<A, E>
) => Effect.flatMap(ChatClient, body).pipe(Effect.provide(layer))

describe("Fallback over the HTTP providers", () => {
  it.live("a 529 from Anthropic moves to OpenAI, which gets the tools and the transcript", () =>
    Effect.gen(function*() {
      let calls = 0
      const anthropic = yield* FakeMessages.make(() => (calls++ === 0 ? { text: "Paris" } : { status: 529 }))
      const openai = yield* FakeOpenAi.make((req) =>
        FakeOpenAi.toolMessages(req).length === 0
          ? { toolCalls: [{ name: "add", arguments: "{\"a\":1,\"b\":2}" }] }
          : { text: `3 (${FakeOpenAi.toolMessages(req)[0]!.content})` }
      )
      const layer = chain(
        anthropicAt(anthropic.url).pipe(Layer.provide(NodeHttpClient.layerUndici)),
        openAiAt(openai.url).pipe(Layer.provide(NodeHttpClient.layerUndici))
      )
      const answers = yield* withHttp(layer, (chat) =>
        Effect.gen(function*() {
          yield* chat.setTools([add])
          return [yield* chat.chat("Capital of France?"), yield* chat.chat("1 + 2?")]
        }))
      expect(answers).toEqual(["Paris", "3 (3)"])
      const first = openai.completionRequests()[0]!
      expect(JSON.stringify(first.body.messages)).toContain("User: Capital of France?\\n\\nAssistant: Paris")
      expect((first.body.tools ?? []).map((t) => t.function.name)).toEqual(["add"])
    }))

  it.live("a refused connection (network error) moves on; a 401 does not", () =>
    Effect.gen(function*() {
      const openai = yield* FakeOpenAi.make(() => ({ text: "from openai" }))
      const closedPort = yield* Effect.acquireRelease(FakeMessages.make(() => ({ text: "never" })), () => Effect.void)
        .pipe(
          Effect.scoped,
          Effect.map((api) => api.url)
        )
      const viaNetworkError = chain(
        anthropicAt(closedPort).pipe(Layer.provide(NodeHttpClient.layerUndici)),
        openAiAt(openai.url).pipe(Layer.provide(NodeHttpClient.layerUndici))
      )
      expect(yield* withHttp(viaNetworkError, (chat) => chat.chat("hi"))).toBe("from openai")

      const unauthorized = yield* FakeMessages.make(() => ({ status: 401 }))
      const via401 = chain(
        anthropicAt(unauthorized.url).pipe(Layer.provide(NodeHttpClient.layerUndici)),
        openAiAt(openai.url).pipe(Layer.provide(NodeHttpClient.layerUndici))
      )
      const before = openai.completionRequests().length
      const error = yield* Effect.flip(withHttp(via401, (chat) => chat.chat("hi")))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "anthropic",
        reason: { _tag: "AuthenticationError" },
        status: 401,
        isRetryable: false
      })
      expect(openai.completionRequests().length).toBe(before)
    }))

  it.live("a member that cannot be built (no key) is left out with a warning; with none left, a FallbackError", () =>
    Effect.gen(function*() {
      const openai = yield* FakeOpenAi.make(() => ({ text: "from openai" }))
      const env = ConfigProvider.layer(ConfigProvider.fromUnknown({ OPENAI_BASE_URL: openai.url }))
      const anthropic = ClaudeApi.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici))
      const chain = Fallback.layer([
        { name: "anthropic", layer: anthropic },
        { name: "openai", layer: OpenAi.layerFromEnv().pipe(Layer.provide(NodeHttpClient.layerUndici)) }
      ]).pipe(Layer.provide(env))
      const { exit, lines } = yield* withCapturedLogs(
        Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(chain))
      )
      expect(exit).toEqual(Exit.succeed("from openai"))
      expect(lines.some((l) => l.includes("provider anthropic could not be built") && l.includes("ANTHROPIC_API_KEY")))
        .toBe(true)
      const none = Fallback.layer([{ name: "anthropic", layer: anthropic }]).pipe(Layer.provide(env))
      const error = yield* Effect.flip(Effect.provide(ChatClient, none))
      expect(error).toMatchObject({ _tag: "FallbackError", reason: { _tag: "NoneBuilt" } })
      expect(error.message).toContain("anthropic: ANTHROPIC_API_KEY is not set")
    }))

  it.live("a chain where no member can be built says so and gives each member's reason", () =>
    Effect.gen(function*() {
      const http = (layer: Layer.Layer<ChatClient, unknown, HttpClient.HttpClient>) =>
        layer.pipe(Layer.provide(NodeHttpClient.layerUndici))
      const chain = Fallback.layer([
        { name: "anthropic", layer: http(ClaudeApi.layerFromEnv()) },
        { name: "gemini", layer: http(Gemini.layerFromEnv()) },
        { name: "typo", layer: Layer.effect(ChatClient, Effect.fail(new Error("model name missing"))) }
      ]).pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({}))))
      const error = yield* Effect.flip(Effect.provide(ChatClient, chain))
      expect(error._tag).toBe("FallbackError")
      expect(error.reason._tag).toBe("NoneBuilt")
      expect(error.message).toMatch(
        /^No provider of the fallback chain could be built: anthropic: ANTHROPIC_API_KEY is not set: .*; gemini: GEMINI_API_KEY is not set: .*; typo: model name missing$/
      )
      // The members' typed errors travel with it; the plain Error is only in the message.
      expect(error.errors.map((e) => e._tag)).toEqual(["ProviderError", "ProviderError"])
      expect(error.errors.map((e) => (e._tag === "ProviderError" ? e.provider : ""))).toEqual(["anthropic", "gemini"])
    }))
})
