import type Anthropic from "@anthropic-ai/sdk"
import { describe, expect, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Wire from "../../src/internal/http/anthropicWire.ts"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import { ToolCall, ToolResult } from "../../src/services/Tool.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { add, broken, concurrencyProbe, HttpLive, SecretKey, Weather, withCapturedLogs } from "./httpProviderSupport.ts"

// Compile-time: every body we can build is a valid `MessageCreateParamsNonStreaming`.
const typed = (request: TurnRequest): Anthropic.MessageCreateParamsNonStreaming =>
  Wire.requestBody({ model: "m", maxTokens: 10, system: "s" }, request).body

const fakeWith = (respond: (req: Fake.FakeRequest, index: number) => Fake.FakeReply) => Fake.make(respond)

const client = (api: Fake.FakeMessagesApi, options: Partial<ClaudeApi.Options> = {}) =>
  ClaudeApi.make({
    apiKey: Redacted.make(SecretKey),
    model: "claude-test",
    baseUrl: api.url,
    retryBaseDelay: "5 millis",
    ...options
  })

const bodies = (api: Fake.FakeMessagesApi) => api.messageRequests().map((r) => r.body)

describe("ClaudeApi", () => {
  it("builds request bodies the SDK's types accept, with tool results and is_error", () => {
    const body = typed({
      history: [
        { role: "user", content: "hi" },
        { role: "assistant", text: "", toolCalls: [new ToolCall({ id: "t1", name: "add", arguments: "{\"a\":1}" })] },
        { role: "tool", results: [new ToolResult({ callId: "t1", name: "add", content: "boom", isError: true })] }
      ],
      tools: [add],
      responseFormat: { name: "answer", schema: { type: "object", properties: {} } }
    })
    expect(body.messages[1]!.content).toEqual([{ type: "tool_use", id: "t1", name: "add", input: { a: 1 } }])
    expect(body.messages[2]!.content).toEqual([{
      type: "tool_result",
      tool_use_id: "t1",
      content: "boom",
      is_error: true
    }])
    expect(body.tool_choice).toEqual({ type: "any" })
    expect(body.system).toBe("s")
  })

  it.live("plain chat: sends the key, version, model and prompt; returns the text", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ text: "Hello there" }))
      const chat = yield* client(api, { system: "be brief", maxTokens: 123 })
      expect(yield* chat.chat("hi")).toBe("Hello there")
      const [req] = api.messageRequests()
      expect(req!.headers["x-api-key"]).toBe(SecretKey)
      expect(req!.headers["anthropic-version"]).toBe("2023-06-01")
      expect(req!.body).toEqual({
        model: "claude-test",
        max_tokens: 123,
        system: "be brief",
        messages: [{ role: "user", content: "hi" }]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("runs a ReAct loop over two tool-calling steps", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 0
          ? { toolUses: [{ id: "tu_1", name: "add", input: { a: 1, b: 2 } }] }
          : i === 1
          ? { text: "adding more", toolUses: [{ id: "tu_2", name: "add", input: { a: 3, b: 4 } }] }
          : { text: "3 then 7" }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add])
      expect(yield* chat.chat("add things")).toBe("3 then 7")
      const reqs = api.messageRequests()
      expect(reqs).toHaveLength(3)
      expect(Fake.toolResults(reqs[1]!)).toEqual([{ tool_use_id: "tu_1", content: "3", is_error: false }])
      expect(Fake.toolResults(reqs[2]!)).toEqual([{ tool_use_id: "tu_2", content: "7", is_error: false }])
      expect(reqs[2]!.body.messages![3]).toEqual({
        role: "assistant",
        content: [{ type: "text", text: "adding more" }, {
          type: "tool_use",
          id: "tu_2",
          name: "add",
          input: { a: 3, b: 4 }
        }]
      })
      expect(reqs[0]!.body.tools!.map((t) => t.name)).toEqual(["add"])
      expect(reqs[0]!.body.tool_choice).toBeUndefined()
    }).pipe(Effect.provide(HttpLive)))

  it.live("dispatches two tool calls of one turn together and answers them in order", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 0
          ? {
            toolUses: [
              { id: "tu_a", name: "echo", input: { text: "first" } },
              { id: "tu_b", name: "echo", input: { text: "second" } }
            ]
          }
          : { text: "done" }
      )
      const chat = yield* client(api, { toolConcurrency: 2 })
      const probe = concurrencyProbe()
      yield* chat.setTools([probe.tool])
      expect(yield* chat.chat("echo twice")).toBe("done")
      expect(Fake.toolResults(api.messageRequests()[1]!)).toEqual([
        { tool_use_id: "tu_a", content: "first", is_error: false },
        { tool_use_id: "tu_b", content: "second", is_error: false }
      ])
      expect(probe.peak()).toBe(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("reports a failing tool with is_error: true", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 0 ? { toolUses: [{ id: "tu_x", name: "broken", input: {} }] } : { text: "it failed" }
      )
      const chat = yield* client(api)
      yield* chat.setTools([broken])
      expect(yield* chat.chat("try it")).toBe("it failed")
      expect(Fake.toolResults(api.messageRequests()[1]!)).toEqual([
        { tool_use_id: "tu_x", content: "Error: no route to host", is_error: true }
      ])
    }).pipe(Effect.provide(HttpLive)))

  it.live("fails with MaxStepsError when the model keeps calling tools", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ toolUses: [{ name: "add", input: { a: 1, b: 1 } }] }))
      const chat = yield* client(api, { maxSteps: 3 })
      yield* chat.setTools([add])
      const error = yield* Effect.flip(chat.chat("loop forever"))
      expect(error._tag).toBe("MaxStepsError")
      expect(api.messageRequests()).toHaveLength(3)
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask: a forced answer tool without user tools; decoded with the schema", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ toolUses: [{ name: "answer", input: { city: "Paris", celsius: 18 } }] }))
      const chat = yield* client(api)
      const weather = yield* chat.ask("weather in Paris?", Weather)
      expect(weather).toEqual({ city: "Paris", celsius: 18 })
      const [body] = bodies(api)
      expect(body!.tool_choice).toEqual({ type: "tool", name: "answer" })
      expect(body!.tools).toEqual([
        expect.objectContaining({
          name: "answer",
          input_schema: expect.objectContaining({ type: "object", required: ["city", "celsius"] })
        })
      ])
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask with tools: the model uses a tool, then answers through the answer tool", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 0
          ? { toolUses: [{ id: "tu_1", name: "add", input: { a: 10, b: 8 } }] }
          : { toolUses: [{ name: "answer", input: { city: "Paris", celsius: 18 } }] }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add])
      expect((yield* chat.ask("weather?", Weather)).celsius).toBe(18)
      const [first, second] = bodies(api)
      expect(first!.tool_choice).toEqual({ type: "any" })
      expect(first!.tools!.map((t) => t.name)).toEqual(["add", "answer"])
      expect(Fake.toolResults(api.messageRequests()[1]!)).toEqual([{
        tool_use_id: "tu_1",
        content: "18",
        is_error: false
      }])
      expect(second!.tool_choice).toEqual({ type: "any" })
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask: an answer that does not match the schema is a StructuredOutputError", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ toolUses: [{ name: "answer", input: { city: "Paris", celsius: "warm" } }] }))
      const chat = yield* client(api)
      const error = yield* Effect.flip(chat.ask("weather?", Weather))
      expect(error._tag).toBe("StructuredOutputError")
      expect(error.message).toContain("celsius")
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask → chat → ask: the answer tool is sent per request only", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 1 ? { text: "just text" } : { toolUses: [{ name: "answer", input: { city: "Oslo", celsius: i } }] }
      )
      const chat = yield* client(api)
      expect((yield* chat.ask("one", Weather)).celsius).toBe(0)
      expect(yield* chat.chat("two")).toBe("just text")
      expect((yield* chat.ask("three", Weather)).celsius).toBe(2)
      const [a, b, c] = bodies(api)
      expect(a!.tool_choice).toEqual({ type: "tool", name: "answer" })
      expect(b!.tool_choice).toBeUndefined()
      expect(b!.tools).toBeUndefined()
      expect(c!.tool_choice).toEqual({ type: "tool", name: "answer" })
      // The first answer joined the history as JSON text.
      expect(c!.messages![1]).toEqual({
        role: "assistant",
        content: [{ type: "text", text: "{\"city\":\"Oslo\",\"celsius\":0}" }]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("sums usage across steps (cache reads count as input and as cached)", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 0
          ? { toolUses: [{ name: "add", input: { a: 1, b: 1 } }], usage: { input_tokens: 100, output_tokens: 20 } }
          : {
            text: "2",
            usage: { input_tokens: 50, output_tokens: 5, cache_read_input_tokens: 30 } as {
              input_tokens: number
              output_tokens: number
            }
          }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add])
      yield* chat.chat("1 + 1")
      expect(yield* chat.usage).toMatchObject({
        inputTokens: 180,
        outputTokens: 25,
        totalTokens: 205,
        cachedTokens: 30,
        known: true
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("retries a 429 after its retry-after, then succeeds", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 0 ? { status: 429, headers: { "retry-after": "0.3" } } : { text: "finally" }
      )
      const chat = yield* client(api, { retryBaseDelay: "1 millis" })
      const started = Date.now()
      expect(yield* chat.chat("hi")).toBe("finally")
      expect(Date.now() - started).toBeGreaterThanOrEqual(280)
      expect(api.messageRequests()).toHaveLength(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("retries Anthropic's 529 (overloaded) too, and gives up after maxRetries", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ status: 529 }))
      const chat = yield* client(api, { maxRetries: 2 })
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "anthropic",
        reason: { _tag: "InternalProviderError" },
        status: 529,
        isRetryable: true
      })
      expect(api.messageRequests()).toHaveLength(3)
    }).pipe(Effect.provide(HttpLive)))

  it.live("a 401 is not retried and is a typed, non-retryable auth error naming the key variable", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({
        status: 401,
        body: { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }
      }))
      const chat = yield* client(api)
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "anthropic",
        reason: { _tag: "AuthenticationError" },
        status: 401,
        isRetryable: false
      })
      expect(error.message).toContain("check ANTHROPIC_API_KEY")
      expect(error.message).toContain("invalid x-api-key")
      expect(api.messageRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("a slow answer is a typed timeout, and the prompt is kept for the next call", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) => (i === 0 ? { text: "late", delayMs: 2_000 } : { text: "on time" }))
      const chat = yield* client(api, { requestTimeout: "200 millis" })
      yield* chat.add("context")
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "TimeoutError" }, isRetryable: true })
      expect(yield* chat.chat("again")).toBe("on time")
      expect(Fake.lastUserText(api.messageRequests()[1]!)).toBe("context\n\nagain")
    }).pipe(Effect.provide(HttpLive)))

  it.live("never logs the API key, even when the server echoes it; logs the host only", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith((_, i) =>
        i === 0
          ? { status: 503, headers: { "retry-after": "0.01" } }
          : { status: 401, body: { error: { type: "authentication_error", message: `bad key ${SecretKey}` } } }
      )
      const chat = yield* client(api)
      const { exit, lines } = yield* withCapturedLogs(
        chat.chat("hi").pipe(Effect.tapError((e) => Effect.logError("chat failed", e)))
      )
      expect(Exit.isFailure(exit)).toBe(true)
      expect(lines.length).toBeGreaterThanOrEqual(3)
      expect(lines.some((l) => l.includes("retrying") && l.includes(`127.0.0.1:${api.port}`))).toBe(true)
      expect(lines.some((l) => l.includes("[redacted]"))).toBe(true)
      for (const line of lines) {
        expect(line).not.toContain(SecretKey)
        expect(line).not.toContain("/v1/messages")
      }
    }).pipe(Effect.provide(HttpLive)))

  it.live("layerFromEnv reads ANTHROPIC_* and refuses a bad base URL with a config error", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ text: "configured" }))
      const env = (map: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(map))
      const good = ClaudeApi.layerFromEnv().pipe(
        Layer.provide(
          env({
            ANTHROPIC_API_KEY: SecretKey,
            ANTHROPIC_BASE_URL: api.url,
            ANTHROPIC_MODEL: "claude-env",
            ANTHROPIC_MAX_TOKENS: "77"
          })
        )
      )
      const answer = yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(good))
      expect(answer).toBe("configured")
      expect(api.messageRequests()[0]!.body).toMatchObject({ model: "claude-env", max_tokens: 77 })
      const bad = ClaudeApi.layerFromEnv().pipe(
        Layer.provide(env({ ANTHROPIC_API_KEY: SecretKey, ANTHROPIC_BASE_URL: `http://user:${SecretKey}@example.com` }))
      )
      const error = yield* Effect.flip(Effect.provide(ChatClient, bad))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" }, isRetryable: false })
      expect(String(error.message)).not.toContain(SecretKey)
    }).pipe(Effect.provide(HttpLive)))

  it.live("layerFromEnv without ANTHROPIC_API_KEY: a config ProviderError naming the variable, where to get a key, what works offline", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ text: "with the override" }))
      const env = (map: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(map))
      const error = yield* Effect.flip(
        Effect.provide(ChatClient, ClaudeApi.layerFromEnv().pipe(Layer.provide(env({ ANTHROPIC_BASE_URL: api.url }))))
      )
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "anthropic",
        reason: { _tag: "ConfigurationError" },
        isRetryable: false
      })
      expect(error.message).toContain("ANTHROPIC_API_KEY is not set")
      expect(error.message).toContain("https://console.anthropic.com/settings/keys")
      expect(error.message).toContain("ClaudeLocal.layerFromEnv()")
      const overridden = ClaudeApi.layerFromEnv({ apiKey: Redacted.make(SecretKey) }).pipe(
        Layer.provide(env({ ANTHROPIC_BASE_URL: api.url }))
      )
      expect(yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(overridden))).toBe(
        "with the override"
      )
    }).pipe(Effect.provide(HttpLive)))

  it.live("layerConfig takes the caller's Config values: its own names, no environment variable read", () =>
    Effect.gen(function*() {
      const api = yield* fakeWith(() => ({ text: "from settings" }))
      const settings = ConfigProvider.layer(
        ConfigProvider.fromUnknown({ anthropic: { key: SecretKey, url: api.url }, model: "claude-settings" })
      )
      const live = ClaudeApi.layerConfig({
        apiKey: Config.Redacted("key").pipe(Config.nested("anthropic")),
        baseUrl: Config.String("url").pipe(Config.nested("anthropic")),
        model: Config.String("model"),
        maxTokens: Config.succeed(55)
      }).pipe(Layer.provide(settings))
      expect(yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(live))).toBe("from settings")
      expect(api.messageRequests()[0]!.body).toMatchObject({ model: "claude-settings", max_tokens: 55 })
      // The variables layerFromEnv reads mean nothing here: a missing value names the caller's key.
      const missing = ClaudeApi.layerConfig({ apiKey: Config.Redacted("MY_KEY"), model: Config.String("model") }).pipe(
        Layer.provide(
          ConfigProvider.layer(ConfigProvider.fromUnknown({ ANTHROPIC_API_KEY: SecretKey, model: "claude-settings" }))
        )
      )
      const error = yield* Effect.flip(Effect.provide(ChatClient, missing))
      expect(error._tag).toBe("ConfigError")
      expect(String(error)).toContain("at [\"MY_KEY\"]")
    }).pipe(Effect.provide(HttpLive)))

  it.live("layerFromEnv: a malformed variable is a ConfigError naming it; configFromEnv composes as a Config", () =>
    Effect.gen(function*() {
      const env = (map: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(map))
      const malformed = ClaudeApi.layerFromEnv().pipe(
        Layer.provide(env({ ANTHROPIC_API_KEY: SecretKey, ANTHROPIC_MAX_TOKENS: "lots" }))
      )
      const error = yield* Effect.flip(Effect.provide(ChatClient, malformed))
      expect(error._tag).toBe("ConfigError")
      expect(String(error)).toContain("at [\"ANTHROPIC_MAX_TOKENS\"]")
      const options = yield* ClaudeApi.configFromEnv({ maxRetries: 0 }).pipe(
        Effect.provide(env({ ANTHROPIC_API_KEY: SecretKey, ANTHROPIC_MODEL: "claude-env", ANTHROPIC_MAX_RETRIES: "3" }))
      )
      expect(Redacted.value(options.apiKey)).toBe(SecretKey)
      expect(options).toMatchObject({ model: "claude-env", maxRetries: 0, allowInsecureHttp: false })
    }).pipe(Effect.provide(HttpLive)))
})
