import { describe, expect, it } from "@effect/vitest"
import type * as GenAI from "@google/genai"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as ToolJsonSchema from "../../src/internal/core/toolJsonSchema.ts"
import * as Wire from "../../src/internal/http/geminiWire.ts"
import * as Gemini from "../../src/layers/Gemini.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import { type JsonSchemaObject, ToolCall, ToolResult } from "../../src/services/Tool.ts"
import * as Fake from "../support/FakeGemini.ts"
import { add, broken, concurrencyProbe, HttpLive, SecretKey, Weather, withCapturedLogs } from "./httpProviderSupport.ts"

// The SDK types `Schema.type` as a string enum; on the wire it is its string value.
type OnTheWire<T> = T extends GenAI.Type ? `${T}`
  : T extends ReadonlyArray<infer U> ? Array<OnTheWire<U>>
  : T extends object ? { [K in keyof T]: OnTheWire<T[K]> }
  : T
/** The REST body of `models.generateContent`, from the SDK's published types. */
type GenerateContentBody = OnTheWire<{
  contents: Array<GenAI.Content>
  systemInstruction?: GenAI.Content
  tools?: Array<GenAI.Tool>
  generationConfig?: GenAI.GenerationConfig
}>

// Compile-time: every body we can build is a valid generateContent body.
const typed = (request: TurnRequest): GenerateContentBody =>
  Wire.requestBody({ system: "s", maxTokens: 10 }, request, new Map())

const client = (api: Fake.FakeGemini, options: Partial<Gemini.Options> = {}) =>
  Gemini.make({
    apiKey: Redacted.make(SecretKey),
    model: "gemini-test",
    baseUrl: api.url,
    retryBaseDelay: "5 millis",
    ...options
  })

const bodies = (api: Fake.FakeGemini) => api.generateRequests().map((r) => r.body)
const json = (schema: Schema.Top) => ToolJsonSchema.fromSchema(schema) as unknown as JsonSchemaObject

describe("Gemini", () => {
  it("builds request bodies the SDK's types accept; a failed tool is { error }", () => {
    const body = typed({
      history: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          text: "",
          toolCalls: [new ToolCall({ id: "gemini_local_1", name: "add", arguments: { a: 1 } })]
        },
        {
          role: "tool",
          results: [new ToolResult({ callId: "gemini_local_1", name: "add", content: "boom", isError: true })]
        }
      ],
      tools: [add, broken],
      responseFormat: { name: "answer", schema: json(Weather) }
    })
    expect(body.contents[1]).toEqual({ role: "model", parts: [{ functionCall: { name: "add", args: { a: 1 } } }] })
    expect(body.contents[2]).toEqual({
      role: "user",
      parts: [{ functionResponse: { name: "add", response: { error: "boom" } } }]
    })
    expect(body.tools![0]!.functionDeclarations!.map((f) => [f.name, f.parameters?.type])).toEqual([["add", "OBJECT"], [
      "broken",
      undefined
    ]])
    expect(body.generationConfig).toMatchObject({ maxOutputTokens: 10, responseMimeType: "application/json" })
    expect(body.systemInstruction).toEqual({ parts: [{ text: "s" }] })
  })

  it("converts JSON Schema to Gemini's dialect: refs inlined, nullable, enums, no additionalProperties", () => {
    class Point extends Schema.Class<Point>("Point")({ x: Schema.Number }) {}
    const schema = Schema.Struct({
      name: Schema.String.annotate({ description: "who" }),
      kind: Schema.Literals(["a", "b"]),
      count: Schema.Int,
      note: Schema.NullOr(Schema.String),
      tags: Schema.Array(Schema.String).check(Schema.isMinLength(1)),
      at: Point
    })
    expect(Wire.toGeminiSchema(json(schema))).toEqual({
      type: "OBJECT",
      properties: {
        name: { type: "STRING", description: "who" },
        kind: { type: "STRING", enum: ["a", "b"] },
        // Effect 4 generates no titles or descriptions for `Int` and checks (README, decision 1).
        count: { type: "INTEGER" },
        note: { type: "STRING", nullable: true },
        tags: { type: "ARRAY", items: { type: "STRING" }, minItems: "1" },
        at: { type: "OBJECT", properties: { x: { type: "NUMBER" } }, propertyOrdering: ["x"], required: ["x"] }
      },
      propertyOrdering: ["name", "kind", "count", "note", "tags", "at"],
      required: ["name", "kind", "count", "note", "tags", "at"]
    })
  })

  it.live("plain chat: key in a header (not the URL), model in the path; thoughts are not the answer", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ thought: "thinking…", text: "Hello there" }))
      const chat = yield* client(api, { system: "be brief", model: "models/gemini-test" })
      expect(yield* chat.chat("hi")).toBe("Hello there")
      const [req] = api.generateRequests()
      expect(req!.path).toBe("/v1beta/models/gemini-test:generateContent")
      expect(req!.headers["x-goog-api-key"]).toBe(SecretKey)
      expect(req!.body).toEqual({
        contents: [{ role: "user", parts: [{ text: "hi" }] }],
        systemInstruction: { parts: [{ text: "be brief" }] }
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("runs a ReAct loop over two tool-calling steps, sending thought signatures back", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? { functionCalls: [{ name: "add", args: { a: 1, b: 2 }, thoughtSignature: "sig-1" }] }
          : i === 1
          ? { text: "more", functionCalls: [{ id: "fc_2", name: "add", args: { a: 3, b: 4 } }] }
          : { text: "3 then 7" }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add])
      expect(yield* chat.chat("add things")).toBe("3 then 7")
      const reqs = api.generateRequests()
      expect(reqs).toHaveLength(3)
      expect(Fake.functionResponses(reqs[1]!)).toEqual([{ name: "add", response: { output: "3" } }])
      expect(reqs[1]!.body.contents![1]).toEqual({
        role: "model",
        parts: [{ functionCall: { name: "add", args: { a: 1, b: 2 } }, thoughtSignature: "sig-1" }]
      })
      // A call id Gemini did send goes back with the call and its response.
      expect(Fake.functionResponses(reqs[2]!)).toEqual([{ name: "add", id: "fc_2", response: { output: "7" } }])
      expect(reqs[2]!.body.contents![3]).toEqual({
        role: "model",
        parts: [{ text: "more" }, { functionCall: { name: "add", args: { a: 3, b: 4 }, id: "fc_2" } }]
      })
      expect(reqs[0]!.body.tools![0]!.functionDeclarations.map((f) => f.name)).toEqual(["add"])
    }).pipe(Effect.provide(HttpLive)))

  it.live("dispatches two function calls of one turn together and answers them in order", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? { functionCalls: [{ name: "echo", args: { text: "first" } }, { name: "echo", args: { text: "second" } }] }
          : { text: "done" }
      )
      const chat = yield* client(api, { toolConcurrency: 2 })
      const probe = concurrencyProbe()
      yield* chat.setTools([probe.tool])
      expect(yield* chat.chat("echo twice")).toBe("done")
      expect(Fake.functionResponses(api.generateRequests()[1]!)).toEqual([
        { name: "echo", response: { output: "first" } },
        { name: "echo", response: { output: "second" } }
      ])
      expect(probe.peak()).toBe(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("reports a failing tool as functionResponse { error }", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 0 ? { functionCalls: [{ name: "broken", args: {} }] } : { text: "it failed" }))
      const chat = yield* client(api)
      yield* chat.setTools([broken])
      expect(yield* chat.chat("try it")).toBe("it failed")
      expect(Fake.functionResponses(api.generateRequests()[1]!)).toEqual([
        { name: "broken", response: { error: "Error: no route to host" } }
      ])
    }).pipe(Effect.provide(HttpLive)))

  it.live("fails with MaxStepsError when the model keeps calling tools", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ functionCalls: [{ name: "add", args: { a: 1, b: 1 } }] }))
      const chat = yield* client(api, { maxSteps: 2 })
      yield* chat.setTools([add])
      expect(yield* Effect.flip(chat.chat("loop forever"))).toMatchObject({ _tag: "MaxStepsError", maxSteps: 2 })
      expect(api.generateRequests()).toHaveLength(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask: JSON mime type and a Gemini responseSchema; the answer is decoded", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "{\"city\":\"Paris\",\"celsius\":18}" }))
      const chat = yield* client(api)
      expect(yield* chat.ask("weather in Paris?", Weather)).toEqual({ city: "Paris", celsius: 18 })
      expect(bodies(api)[0]!.generationConfig).toEqual({
        responseMimeType: "application/json",
        responseSchema: {
          type: "OBJECT",
          properties: { city: { type: "STRING" }, celsius: { type: "NUMBER" } },
          propertyOrdering: ["city", "celsius"],
          required: ["city", "celsius"]
        }
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask: a wrong answer is a StructuredOutputError; a blocked prompt a ProviderError", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) => (i === 0 ? { text: "{\"city\":\"Paris\"}" } : { blockReason: "SAFETY" }))
      const chat = yield* client(api)
      const wrong = yield* Effect.flip(chat.ask("weather?", Weather))
      expect(wrong._tag).toBe("StructuredOutputError")
      expect(wrong.message).toContain("celsius")
      const blocked = yield* Effect.flip(chat.ask("weather?", Weather))
      expect(blocked).toMatchObject({ _tag: "ProviderError", provider: "gemini", isRetryable: false })
      expect(blocked.message).toContain("SAFETY")
    }).pipe(Effect.provide(HttpLive)))

  it.live("ask → chat → ask: the response schema is set per request only", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((
        _,
        i
      ) => (i === 1 ? { text: "just text" } : { text: `{"city":"Oslo","celsius":${i}}` }))
      const chat = yield* client(api, { maxTokens: 64 })
      expect((yield* chat.ask("one", Weather)).celsius).toBe(0)
      expect(yield* chat.chat("two")).toBe("just text")
      expect((yield* chat.ask("three", Weather)).celsius).toBe(2)
      const [a, b, c] = bodies(api)
      expect(a!.generationConfig).toMatchObject({ responseMimeType: "application/json", maxOutputTokens: 64 })
      expect(b!.generationConfig).toEqual({ maxOutputTokens: 64 })
      expect(c!.generationConfig).toEqual(a!.generationConfig)
    }).pipe(Effect.provide(HttpLive)))

  it.live("sums usage across steps, with cached and thinking tokens", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? {
            functionCalls: [{ name: "add", args: { a: 1, b: 1 } }],
            usage: { promptTokenCount: 100, candidatesTokenCount: 20 }
          }
          : {
            text: "2",
            usage: {
              promptTokenCount: 150,
              candidatesTokenCount: 10,
              thoughtsTokenCount: 40,
              cachedContentTokenCount: 64
            }
          }
      )
      const chat = yield* client(api)
      yield* chat.setTools([add])
      yield* chat.chat("1 + 1")
      expect(yield* chat.usage).toMatchObject({
        inputTokens: 250,
        outputTokens: 70,
        totalTokens: 320,
        cachedTokens: 64,
        reasoningTokens: 40,
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
      expect(api.generateRequests()).toHaveLength(2)
    }).pipe(Effect.provide(HttpLive)))

  it.live("a 401 is not retried and is a typed, non-retryable auth error naming the key variable", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({
        status: 401,
        body: { error: { code: 401, message: "API key not valid", status: "UNAUTHENTICATED" } }
      }))
      const chat = yield* client(api)
      const error = yield* Effect.flip(chat.chat("hi"))
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "gemini",
        reason: { _tag: "AuthenticationError" },
        status: 401,
        isRetryable: false
      })
      expect(error.message).toContain("check GEMINI_API_KEY")
      expect(error.message).toContain("API key not valid")
      expect(api.generateRequests()).toHaveLength(1)
    }).pipe(Effect.provide(HttpLive)))

  it.live("a slow answer is a typed timeout", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "late", delayMs: 2_000 }))
      const chat = yield* client(api, { requestTimeout: "200 millis" })
      expect(yield* Effect.flip(chat.chat("hi"))).toMatchObject({
        _tag: "ProviderError",
        provider: "gemini",
        reason: { _tag: "TimeoutError" }
      })
    }).pipe(Effect.provide(HttpLive)))

  it.live("never logs the API key, even when the server echoes it; logs the host only", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((_, i) =>
        i === 0
          ? { status: 503, headers: { "retry-after": "0.01" } }
          : { status: 400, body: { error: { code: 400, message: `API key ${SecretKey} expired` } } }
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
        expect(line).not.toContain(":generateContent")
      }
    }).pipe(Effect.provide(HttpLive)))

  it.live("layerFromEnv reads GEMINI_* and requires the key", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "configured" }))
      const env = (map: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(map))
      const good = Gemini.layerFromEnv().pipe(
        Layer.provide(env({ GEMINI_API_KEY: SecretKey, GEMINI_BASE_URL: api.url, GEMINI_MODEL: "gemini-env" }))
      )
      expect(yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(good))).toBe("configured")
      expect(api.generateRequests()[0]!.path).toBe("/v1beta/models/gemini-env:generateContent")
      const missing = Gemini.layerFromEnv().pipe(Layer.provide(env({ GEMINI_BASE_URL: api.url })))
      const error = yield* Effect.flip(Effect.provide(ChatClient, missing))
      expect(String(error)).toContain("GEMINI_API_KEY")
    }).pipe(Effect.provide(HttpLive)))

  it.live("layerFromEnv without GEMINI_API_KEY: a config ProviderError naming the variable, where to get a key, what works offline", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(() => ({ text: "with the override" }))
      const env = (map: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(map))
      const error = yield* Effect.flip(
        Effect.provide(ChatClient, Gemini.layerFromEnv().pipe(Layer.provide(env({ GEMINI_BASE_URL: api.url }))))
      )
      expect(error).toMatchObject({
        _tag: "ProviderError",
        provider: "gemini",
        reason: { _tag: "ConfigurationError" },
        isRetryable: false
      })
      expect(error.message).toContain("GEMINI_API_KEY is not set")
      expect(error.message).toContain("https://aistudio.google.com/apikey")
      expect(error.message).toContain("ClaudeLocal.layerFromEnv()")
      // An apiKey given as an override needs no variable.
      const overridden = Gemini.layerFromEnv({ apiKey: Redacted.make(SecretKey) }).pipe(
        Layer.provide(env({ GEMINI_BASE_URL: api.url }))
      )
      expect(yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(Effect.provide(overridden))).toBe(
        "with the override"
      )
    }).pipe(Effect.provide(HttpLive)))
})
