import { describe, expect, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type OpenAI from "openai"
import * as ToolJsonSchema from "../../src/internal/core/toolJsonSchema.ts"
import * as Wire from "../../src/internal/http/openAiWire.ts"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import { ToolCall, ToolResult } from "../../src/services/Tool.ts"
import * as Fake from "../support/FakeOpenAi.ts"
import { add, broken, concurrencyProbe, HttpLive, SecretKey, Weather, withCapturedLogs } from "./httpProviderSupport.ts"

// Compile-time: every body we can build is a valid `ChatCompletionCreateParamsNonStreaming`.
const typed = (request: TurnRequest): OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming =>
  Wire.requestBody({ model: "m", system: "s", maxTokens: 10, maxTokensField: "max_completion_tokens" }, request)

const client = (api: Fake.FakeOpenAi, options: Partial<OpenAi.Options> = {}) =>
  OpenAi.make({
    apiKey: Redacted.make(SecretKey),
    model: "gpt-test",
    baseUrl: api.url,
    retryBaseDelay: "5 millis",
    ...options
  })

const bodies = (api: Fake.FakeOpenAi) => api.completionRequests().map((r) => r.body)

describe("OpenAi", () => {
  it("builds request bodies the SDK's types accept; a failed tool is {\"error\": …}", () => {
    const body = typed({
      history: [
        { role: "user", content: "hi" },
        { role: "assistant", text: "", toolCalls: [new ToolCall({ id: "c1", name: "add", arguments: { a: 1 } })] },
        { role: "tool", results: [new ToolResult({ callId: "c1", name: "add", content: "boom", isError: true })] }
      ],
      tools: [add],
      responseFormat: {
        name: "answer",
        schema: { type: "object", properties: {}, required: [], additionalProperties: false }
      }
    })
    expect(body.messages).toEqual([
      { role: "system", content: "s" },
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: "{\"a\":1}" } }]
      },
      { role: "tool", tool_call_id: "c1", content: "{\"error\":\"boom\"}" }
    ])
    expect(body.max_completion_tokens).toBe(10)
    expect(body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "answer", strict: true } })
  })

  it("sends schemas with optional fields non-strict (strict mode needs every property required)", () => {
    const json = (schema: Schema.Top) => ToolJsonSchema.fromSchema(schema) as unknown
    expect(Wire.strictCompatible(json(Schema.Struct({ a: Schema.String, n: Schema.Struct({ b: Schema.Number }) }))))
      .toBe(true)
    expect(Wire.strictCompatible(json(Schema.Struct({ a: Schema.String, b: Schema.optional(Schema.Number) })))).toBe(
      false
    )
    expect(Wire.strictCompatible({ type: "object", properties: { a: {} }, required: ["a"] })).toBe(false)
  })

  it.live("plain chat: bearer key, model, system prompt; returns the text", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "Hello there" }))
      const chat = yield* client(api, { system: "be brief", maxTokens: 99 })
      expect(yield* chat.chat("hi")).toBe("Hello there")
      const [req] = api.completionRequests()
      expect(req!.headers.authorization).toBe(`Bearer ${SecretKey}`)
      expect(req!.body).toEqual({
        model: "gpt-test",
        max_completion_tokens: 99,
        messages: [{ role: "system", content: "be brief" }, { role: "user", content: "hi" }]
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("an OpenAI-compatible server without a key, using max_tokens", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "local" }))
      const chat = yield* OpenAi.make({
        model: "llama",
        baseUrl: api.url,
        name: "ollama",
        maxTokens: 5,
        maxTokensField: "max_tokens"
      })
      expect(yield* chat.chat("hi")).toBe("local")
      const [req] = api.completionRequests()
      expect(req!.headers.authorization).toBeUndefined()
      expect(req!.body["max_tokens"]).toBe(5)
    }).pipe(Effect.provide(HttpLive)))

  it.live("runs a ReAct loop over two tool-calling steps", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? { toolCalls: [{ id: "call_1", name: "add", arguments: { a: 1, b: 2 } }] }
          : i === 1
          ? { text: "more", toolCalls: [{ id: "call_2", name: "add", arguments: { a: 3, b: 4 } }] }
          : { text: "3 then 7" }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add])
      expect(yield* chat.chat("add things")).toBe("3 then 7")
      const reqs = api.completionRequests()
      expect(reqs).toHaveLength(3)
      expect(Fake.toolMessages(reqs[1]!)).toEqual([{ tool_call_id: "call_1", content: "3" }])
      expect(Fake.toolMessages(reqs[2]!)).toEqual([{ tool_call_id: "call_2", content: "7" }])
      expect(reqs[2]!.body.messages![3]).toEqual({
        role: "assistant",
        content: "more",
        tool_calls: [{ id: "call_2", type: "function", function: { name: "add", arguments: "{\"a\":3,\"b\":4}" } }]
      })
      expect(reqs[0]!.body.tools).toEqual([{
        type: "function",
        function: { name: "add", description: "Adds two numbers", parameters: add.inputSchema }
      }])
      expect(reqs[0]!.body.response_format).toBeUndefined()
    }).pipe(Effect.provide(HttpLive)))

  it.live("dispatches two tool calls of one turn together and answers them in order", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? {
            toolCalls: [
              { id: "call_a", name: "echo", arguments: { text: "first" } },
              { id: "call_b", name: "echo", arguments: { text: "second" } }
            ]
          }
          : { text: "done" }
      )
      const chat = yield* client(api, { toolConcurrency: 2 })
      const probe = concurrencyProbe()
      yield* chat.setTools([probe.tool])
      expect(yield* chat.chat("echo twice")).toBe("done")
      expect(Fake.toolMessages(api.completionRequests()[1]!)).toEqual([
        { tool_call_id: "call_a", content: "first" },
        { tool_call_id: "call_b", content: "second" }
      ])
      expect(probe.peak()).toBe(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("reports a failing tool as {\"error\": …} content", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? {
            toolCalls: [{ id: "call_x", name: "broken", arguments: {} }, {
              id: "call_y",
              name: "add",
              arguments: "{not json"
            }]
          }
          : { text: "it failed" }
      )
      const chat = yield* client(api)
      yield* chat.setTools([broken, add])
      expect(yield* chat.chat("try it")).toBe("it failed")
      const [x, y] = Fake.toolMessages(api.completionRequests()[1]!)
      expect(JSON.parse(x!.content)).toEqual({ error: "Error: no route to host" })
      expect(JSON.parse(y!.content).error).toContain("not JSON")
    }).pipe(Effect.provide(HttpLive)))

  it.live("fails with MaxStepsError when the model keeps calling tools", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ toolCalls: [{ name: "add", arguments: { a: 1, b: 1 } }] }))
      const chat = yield* client(api, { maxSteps: 2 })
      yield* chat.setTools([add])
      const error = yield* Effect.flip(chat.chat("loop forever"))
      expect(error).toMatchObject({ _tag: "MaxStepsError", maxSteps: 2 })
      expect(api.completionRequests()).toHaveLength(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask: json_schema strict response format; the answer is decoded", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "{\"city\":\"Paris\",\"celsius\":18}" }))
      const chat = yield* client(api)
      expect(yield* chat.ask("weather in Paris?", Weather)).toEqual({ city: "Paris", celsius: 18 })
      expect(bodies(api)[0]!.response_format).toEqual({
        type: "json_schema",
        json_schema: {
          name: "answer",
          strict: true,
          schema: expect.objectContaining({
            type: "object",
            required: ["city", "celsius"],
            additionalProperties: false
          })
        }
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask: a wrong answer or a refusal is a StructuredOutputError", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0 ? { text: "{\"city\":\"Paris\",\"celsius\":\"warm\"}" } : { refusal: "I can't help with that" }
      )
      const chat = yield* client(api)
      const wrong = yield* Effect.flip(chat.ask("weather?", Weather))
      expect(wrong._tag).toBe("StructuredOutputError")
      expect(wrong.message).toContain("celsius")
      const refused = yield* Effect.flip(chat.ask("weather?", Weather))
      expect(refused).toMatchObject({ _tag: "StructuredOutputError", answer: "I can't help with that" })
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask → chat → ask: the response format is set per request only", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 1 ? { text: "just text" } : { text: `{"city":"Oslo","celsius":${i}}` }))
      const chat = yield* client(api)
      expect((yield* chat.ask("one", Weather)).celsius).toBe(0)
      expect(yield* chat.chat("two")).toBe("just text")
      expect((yield* chat.ask("three", Weather)).celsius).toBe(2)
      const [a, b, c] = bodies(api)
      expect(a!.response_format).toMatchObject({ type: "json_schema" })
      expect(b!.response_format).toBeUndefined()
      expect(c!.response_format).toEqual(a!.response_format)
    }).pipe(Effect.provide(HttpLive)))

  it.live("sums usage across steps, with cached and reasoning tokens", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? {
            toolCalls: [{ name: "add", arguments: { a: 1, b: 1 } }],
            usage: { prompt_tokens: 100, completion_tokens: 20 }
          }
          : {
            text: "2",
            usage: {
              prompt_tokens: 150,
              completion_tokens: 30,
              prompt_tokens_details: { cached_tokens: 90 },
              completion_tokens_details: { reasoning_tokens: 12 }
            }
          }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add])
      yield* chat.chat("1 + 1")
      expect(yield* chat.usage).toMatchObject({
        inputTokens: 250,
        outputTokens: 50,
        totalTokens: 300,
        cachedTokens: 90,
        reasoningTokens: 12,
        known: true
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("retries a 429 after its retry-after, then succeeds", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { status: 429, headers: { "retry-after": "0.3" } } : { text: "finally" }))
      const chat = yield* client(api, { retryBaseDelay: "1 millis" })
      const started = Date.now()
      expect(yield* chat.chat("hi")).toBe("finally")
      expect(Date.now() - started).toBeGreaterThanOrEqual(280)
      expect(api.completionRequests()).toHaveLength(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("a 401 is not retried and is a typed, non-retryable auth error naming the key variable", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({
        status: 401,
        body: {
          error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" }
        }
      }))
      const chat = yield* client(api)
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "openai",
        reason: { _tag: "AuthenticationError" },
        status: 401,
        isRetryable: false
      })
      expect(error.message).toContain("check OPENAI_API_KEY")
      expect(error.message).toContain("Incorrect API key provided")
      expect(api.completionRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("a slow answer is a typed timeout", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "late", delayMs: 2_000 }))
      const chat = yield* client(api, { requestTimeout: "200 millis" })
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "openai",
        reason: { _tag: "TimeoutError" },
        isRetryable: true
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("never logs the API key, even when the server echoes it; logs the host only", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? { status: 500, headers: { "retry-after-ms": "10" } }
          : { status: 401, body: { error: { message: `Incorrect API key provided: ${SecretKey}` } } }
      )
      const chat = yield* client(api)
      const { exit, lines } = yield* withCapturedLogs(
        chat.chat("hi").pipe(Effect.tapError((e) => Effect.logError("chat failed", e)))
      )
      expect(Exit.isFailure(exit)).toBe(true)
      expect(lines.some((l) => l.includes("retrying") && l.includes(`127.0.0.1:${api.port}`))).toBe(true)
      expect(lines.some((l) => l.includes("[redacted]"))).toBe(true)
      for (const line of lines) {
        expect(line).not.toContain(SecretKey)
        expect(line).not.toContain("/chat/completions")
      }
    }).pipe(Effect.provide(HttpLive)))

  it.live("layerFromEnv reads OPENAI_* and refuses plain http to a remote host", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "configured" }))
      const env = (map: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(map))
      const good = OpenAi.layerFromEnv().pipe(
        Layer.provide(env({ OPENAI_API_KEY: SecretKey, OPENAI_BASE_URL: api.url, OPENAI_MODEL: "gpt-env" }))
      )
      expect(yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(good))).toBe("configured")
      expect(api.completionRequests()[0]!.body.model).toBe("gpt-env")
      const bad = OpenAi.layerFromEnv().pipe(Layer.provide(env({ OPENAI_BASE_URL: "http://llm.example.com/v1" })))
      const error = yield* Effect.flip(Effect.provide(ChatClient, bad))
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
    }).pipe(Effect.provide(HttpLive)))
  it.live("layerConfig takes the caller's Config values (a whole settings object); no key needed off api.openai.com", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "from settings" }))
      const settings = ConfigProvider.fromUnknown({ llm: { url: api.url, model: "local-model" } })
      const live = OpenAi.layerConfig(
        Config.all({ baseUrl: Config.String("url"), model: Config.String("model") }).pipe(Config.nested("llm"))
      ).pipe(Layer.provide(ConfigProvider.layer(settings)))
      expect(yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(live))).toBe("from settings")
      expect(api.completionRequests()[0]!.body.model).toBe("local-model")
      expect(api.completionRequests()[0]!.headers["authorization"]).toBeUndefined()
    }).pipe(Effect.provide(HttpLive)))
})
