import { describe, expect, it } from "@effect/vitest"
import * as AiError from "effect/ai/AiError"
import * as AiChat from "effect/ai/Chat"
import * as AiLanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import * as AiTool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ChatLanguageModel from "../../src/ai/ChatLanguageModel.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ChatError, ProviderError, Usage } from "../../src/services/ChatClient.ts"
import {
  AgentToolStart,
  Complete,
  ReasoningDelta,
  TextDelta,
  ToolCallEnd,
  ToolCallStart,
  UsageEvent
} from "../../src/services/ChatEvent.ts"
import { ClaudeLiveError, Interrupted, InterruptedTool } from "../../src/services/ClaudeLive.ts"
import type { TurnRequest } from "../../src/services/ModelTurn.ts"
import { makeHandlers, TestToolkit } from "./aiSupport.ts"

/** A LanguageModel on Scripted: each call gets a fresh client playing `script`; requests are recorded. */
const scriptedModel = (script: ReadonlyArray<Scripted.ScriptedTurn>) => {
  const requests: Array<{ readonly systemPrompt: string | undefined; readonly request: TurnRequest }> = []
  const layer = ChatLanguageModel.layer((options) =>
    Effect.gen(function*() {
      const cursor = yield* Ref.make(0)
      return yield* Scripted.make({
        respond: (request) =>
          Effect.map(Ref.getAndUpdate(cursor, (n) => n + 1), (n) => {
            requests.push({ systemPrompt: options.systemPrompt, request })
            return script[Math.min(n, script.length - 1)]!
          })
      })
    })
  )
  return { layer, requests }
}

const userText = (request: TurnRequest): string => {
  const first = request.history[0]!
  return first.role === "user" ? first.content : ""
}

const WebSearch = AiTool.providerDefined({
  id: "anthropic.web_search_20250305",
  customName: "WebSearch",
  providerName: "web_search",
  args: Schema.Struct({})
})({})

describe("ChatLanguageModel on Scripted", () => {
  it.effect("generateText: the toolkit's calls come back provider-executed and run once", () => {
    const handlers = makeHandlers()
    const model = scriptedModel([
      Scripted.toolCalls({ id: "c1", name: "add", arguments: { a: 2, b: "40" } }, { id: "c2", name: "broken" }),
      Scripted.text("The sum is 42", Usage.of({ inputTokens: 7, outputTokens: 3, costUsd: 0.5 }))
    ])
    return Effect.gen(function*() {
      const response = yield* AiLanguageModel.generateText({ prompt: "Add 2 and 40", toolkit: TestToolkit })
      expect(response.text).toBe("The sum is 42")
      // Effect 4's default ("opaque") parameters mode: the params as the model sent them.
      expect(response.toolCalls).toMatchObject([
        { name: "add", id: "c1", params: { a: 2, b: "40" }, providerExecuted: true },
        { name: "broken", id: "c2", params: {}, providerExecuted: true }
      ])
      // A typed result for add; broken failed with failureMode "error": no typed result, the
      // error is in the finish metadata and the model's answer is kept.
      expect(response.toolResults).toMatchObject([
        { name: "add", id: "c1", result: 42, encodedResult: 42, isFailure: false, providerExecuted: true }
      ])
      expect(handlers.calls).toMatchObject({ add: 1, broken: 1 })
      expect(response.finishReason).toBe("stop")
      const finish = response.content.find((part) => part.type === "finish")!
      expect(finish.metadata[ChatLanguageModel.MetadataKey]).toMatchObject({
        costUsd: 0.5,
        toolErrors: [{ id: "c2", name: "broken", message: "Error: the database is on fire" }]
      })
      expect(response.usage.outputTokens.total).toBeGreaterThan(3)
      expect(response.usage.inputTokens.total).toBeGreaterThan(7)
      expect(model.requests[0]!.request.tools.map((t) => t.name)).toEqual(["add", "today", "lookup", "broken"])
      expect(userText(model.requests[0]!.request)).toBe("Add 2 and 40")
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("failureMode return: an isFailure result decoded with the failure schema", () => {
    const handlers = makeHandlers()
    const model = scriptedModel([
      Scripted.toolCalls({ id: "c1", name: "lookup", arguments: { city: "Atlantis" } }, {
        id: "c2",
        name: "today"
      }),
      Scripted.text("unknown")
    ])
    return Effect.gen(function*() {
      const response = yield* AiLanguageModel.generateText({ prompt: "Where is Atlantis?", toolkit: TestToolkit })
      expect(response.toolResults).toMatchObject([
        { name: "lookup", isFailure: true, result: { reason: "unknown city Atlantis" } },
        { name: "today", isFailure: false, encodedResult: { date: "2026-01-02T03:04:05.000Z" } }
      ])
      const today = response.toolResults[1]!
      expect(today.name === "today" && !today.isFailure && today.result.date instanceof Date).toBe(true)
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("toolChoice none and oneOf decide which tools the client gets", () => {
    const handlers = makeHandlers()
    const model = scriptedModel([Scripted.text("ok")])
    return Effect.gen(function*() {
      yield* AiLanguageModel.generateText({ prompt: "hi", toolkit: TestToolkit, toolChoice: "none" })
      yield* AiLanguageModel.generateText({ prompt: "hi", toolkit: TestToolkit, toolChoice: { oneOf: ["today"] } })
      yield* AiLanguageModel.generateText({ prompt: "hi" })
      expect(model.requests.map((r) => r.request.tools.map((t) => t.name))).toEqual([[], ["today"], []])
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("generateObject: the structured answer is decoded with the caller's schema", () => {
    const model = scriptedModel([Scripted.structured({ city: "Lisbon", founded: "1147-10-25T00:00:00.000Z" })])
    // Effect 4's Schema.Date: a Date on both sides; its JSON codec carries it as the ISO string.
    const City = Schema.Struct({ city: Schema.String, founded: Schema.Date })
    return Effect.gen(function*() {
      const response = yield* AiLanguageModel.generateObject({ prompt: "Capital of Portugal?", schema: City })
      expect(response.value.city).toBe("Lisbon")
      expect(response.value.founded).toBeInstanceOf(Date)
      expect(response.value.founded.getUTCFullYear()).toBe(1147)
      expect(response.text).toBe("{\"city\":\"Lisbon\",\"founded\":\"1147-10-25T00:00:00.000Z\"}")
      expect(model.requests[0]!.request.responseFormat?.schema).toMatchObject({ required: ["city", "founded"] })
    }).pipe(Effect.provide(model.layer))
  })

  it.effect("generateObject with a toolkit: the calls made on the way come back as provider-executed parts", () => {
    const handlers = makeHandlers()
    const model = scriptedModel([
      Scripted.toolCalls({ name: "add", arguments: "{\"a\":1,\"b\":\"2\"}" }, { name: "broken" }),
      Scripted.structured({ sum: 3 })
    ])
    return Effect.gen(function*() {
      const response = yield* AiLanguageModel.generateObject({
        prompt: "1 + 2 as an object",
        schema: Schema.Struct({ sum: Schema.Number }),
        toolkit: TestToolkit
      })
      expect(response.value).toEqual({ sum: 3 })
      expect(response.toolCalls).toMatchObject([
        { id: "add_1", name: "add", params: { a: 1, b: "2" }, providerExecuted: true },
        { id: "broken_1", name: "broken", providerExecuted: true }
      ])
      expect(response.toolResults).toMatchObject([{ id: "add_1", result: 3, providerExecuted: true }])
      const finish = response.content.find((part) => part.type === "finish")!
      expect(finish.metadata[ChatLanguageModel.MetadataKey]).toMatchObject({
        toolErrors: [{ id: "broken_1", message: "Error: the database is on fire" }]
      })
      expect(handlers.calls).toMatchObject({ add: 1, broken: 1 })
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("streamText: text deltas, tool parts as they happen, then finish", () => {
    const handlers = makeHandlers()
    const model = scriptedModel([
      Scripted.toolCalls({ id: "c1", name: "add", arguments: { a: 1, b: "1" } }),
      Scripted.text("two")
    ])
    return Effect.gen(function*() {
      const parts = yield* Stream.runCollect(AiLanguageModel.streamText({ prompt: "1 + 1?", toolkit: TestToolkit }))
      expect(parts.map((p) => p.type)).toEqual([
        "tool-call",
        "tool-result",
        "text-start",
        "text-delta",
        "text-end",
        "finish"
      ])
      expect(parts[1]).toMatchObject({ type: "tool-result", result: 2, providerExecuted: true })
      expect(parts[3]).toMatchObject({ type: "text-delta", delta: "two" })
      expect(handlers.calls.add).toBe(1)
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })

  it.effect("streamText of a turn stopped by ClaudeLive.interrupt: the text so far, then finish reason other", () => {
    const stopped = new ClaudeLiveError({
      provider: "claude-code",
      reason: new Interrupted({
        answer: "Once upon",
        tools: [new InterruptedTool({ id: "c9", name: "slow", isError: true })],
        terminalReason: "aborted_tools"
      })
    })
    // A client whose turn streams a little and is then stopped, as a kept-alive Claude client's is.
    const layer = ChatLanguageModel.layer(() =>
      Effect.map(Scripted.make({ respond: () => Effect.succeed(Scripted.text("unused")) }), (client) => ({
        ...client,
        usage: Effect.succeed(Usage.of({ inputTokens: 5, outputTokens: 2 })),
        chatStream: () =>
          Stream.make(new TextDelta({ text: "Once " }), new TextDelta({ text: "upon" })).pipe(
            Stream.concat(Stream.fail(stopped))
          )
      }))
    )
    return Effect.gen(function*() {
      const parts = yield* Stream.runCollect(AiLanguageModel.streamText({ prompt: "A story" }))
      expect(parts.map((p) => p.type)).toEqual(["text-start", "text-delta", "text-delta", "text-end", "finish"])
      const finish = parts.at(-1) as {
        reason: string
        usage: { outputTokens: { total?: number } }
        metadata: Record<string, unknown>
      }
      expect(finish.reason).toBe("other")
      expect(finish.usage.outputTokens.total).toBe(2)
      expect(finish.metadata[ChatLanguageModel.MetadataKey]).toEqual({
        interrupted: { terminalReason: "aborted_tools", tools: [{ id: "c9", name: "slow", isError: true }] }
      })
      // generateText folds the same stream: the partial text, no failure.
      const response = yield* AiLanguageModel.generateText({ prompt: "A story" })
      expect(response.text).toBe("Once upon")
      expect(response.finishReason).toBe("other")
    }).pipe(Effect.provide(layer))
  })

  it.effect("Chat: system messages become the system prompt; resent history becomes a transcript", () => {
    const model = scriptedModel([Scripted.text("Nice to meet you, Ana")])
    return Effect.gen(function*() {
      const chat = yield* AiChat.fromPrompt([{ role: "system", content: "Be terse." }])
      yield* chat.generateText({ prompt: "My name is Ana" })
      yield* chat.generateText({ prompt: "What is my name?" })
      expect(model.requests.map((r) => r.systemPrompt)).toEqual(["Be terse.", "Be terse."])
      expect(userText(model.requests[0]!.request)).toBe("My name is Ana")
      expect(userText(model.requests[1]!.request)).toBe(
        "<conversation_so_far>\nUser: My name is Ana\n\nAssistant: Nice to meet you, Ana\n</conversation_so_far>\n\n" +
          "What is my name?"
      )
    }).pipe(Effect.provide(model.layer))
  })

  it.effect("renders tool messages and ends without a user message as a continuation", () =>
    Effect.gen(function*() {
      const prompt = Prompt.make([
        { role: "user", content: "add" },
        {
          role: "assistant",
          content: [
            { type: "reasoning", text: "hidden" },
            { type: "tool-call", id: "1", name: "add", params: { a: 1 }, providerExecuted: true },
            { type: "tool-result", id: "1", name: "add", result: 2, isFailure: false, providerExecuted: true }
          ]
        },
        {
          role: "tool",
          content: [{ type: "tool-result", id: "2", name: "x", result: "no", isFailure: true, providerExecuted: false }]
        }
      ])
      const rendered = yield* ChatLanguageModel.renderPrompt(prompt, "generateText")
      expect(rendered.systemPrompt).toBeUndefined()
      expect(rendered.text).toBe(
        "<conversation_so_far>\nUser: add\n\nAssistant called tool add with {\"a\":1}\n\nTool add returned 2\n\n" +
          "Tool x failed with \"no\"\n</conversation_so_far>\n\nContinue the conversation."
      )
    }))

  it.effect("errors: ChatErrors map to AiErrors with the cause; file parts and missing handlers are MalformedInput", () => {
    const handlers = makeHandlers()
    const failing = scriptedModel([Scripted.fail(Scripted.httpError(500))])
    return Effect.gen(function*() {
      const http = yield* Effect.flip(
        AiLanguageModel.generateText({ prompt: "hi" }).pipe(Effect.provide(failing.layer))
      )
      // Effect 4: the kind of failure is the reason; the ChatError rides in its metadata.
      expect(http._tag).toBe("AiError")
      expect(http.reason._tag).toBe("InternalProviderError")
      expect(http.isRetryable).toBe(true)
      expect(Option.getOrThrow(ChatLanguageModel.chatErrorOf(http))).toBeInstanceOf(ProviderError)
      expect(http.message).toContain("HTTP 500")

      const ok = scriptedModel([Scripted.text("ok")])
      const empty = yield* Effect.flip(AiLanguageModel.generateText({ prompt: "  " }).pipe(Effect.provide(ok.layer)))
      expect(empty.reason._tag).toBe("InvalidRequestError")
      expect(Option.getOrThrow(ChatLanguageModel.chatErrorOf(empty))._tag).toBe("EmptyPromptError")

      const file = yield* Effect.flip(
        AiLanguageModel.generateText({
          prompt: Prompt.make([{
            role: "user",
            content: [{ type: "file", mediaType: "image/png", data: new Uint8Array([1]) }]
          }])
        }).pipe(Effect.provide(ok.layer))
      )
      expect(file.reason._tag).toBe("InvalidRequestError")
      expect(file.message).toContain("File parts (image/png) are not supported")

      // A toolkit resolved elsewhere, whose handlers are not in the calling context.
      const resolved = yield* TestToolkit.pipe(Effect.provide(handlers.layer))
      const missing = yield* Effect.flip(
        AiLanguageModel.generateText({ prompt: "hi", toolkit: resolved }).pipe(Effect.provide(ok.layer))
      )
      expect(missing).toMatchObject({
        reason: { _tag: "InvalidRequestError" },
        message: expect.stringContaining("No handler in context for tool(s) add, today, lookup, broken")
      })

      const vendor = yield* Effect.flip(
        AiLanguageModel.generateText({ prompt: "hi", toolkit: Toolkit.make(WebSearch) }).pipe(
          Effect.provide(Toolkit.make(WebSearch).toLayer({})),
          Effect.provide(ok.layer)
        )
      )
      expect(vendor.message).toContain("provider-defined tools cannot run in-process (WebSearch)")
      expect(ok.requests).toEqual([])
    })
  })

  it("maps every ChatError kind", () => {
    const map = ChatLanguageModel.toAiError("generateText")
    const decode = Schema.decodeUnknownSync(ChatError)
    const errors = [
      { _tag: "EmptyPromptError", message: "m" },
      { _tag: "StructuredOutputError", message: "m", answer: "a" },
      { _tag: "ProviderError", provider: "p", reason: { _tag: "InvalidResponseError", message: "m" } },
      { _tag: "ProviderError", provider: "p", reason: { _tag: "TimeoutError", message: "m" } },
      { _tag: "ProviderError", provider: "p", reason: { _tag: "RateLimitError", status: 429, message: "m" } },
      { _tag: "ProviderError", provider: "p", reason: { _tag: "InvalidRequestError", status: 400, message: "m" } },
      { _tag: "ProviderError", provider: "p", reason: { _tag: "AuthenticationError", status: 401, message: "m" } },
      { _tag: "InvalidToolsError", message: "m" },
      { _tag: "UnsupportedContentError", provider: "p", reason: { _tag: "Url", message: "m" } },
      { _tag: "MaxStepsError", maxSteps: 3, message: "m" },
      { _tag: "PermissionDeniedError", provider: "p", tools: ["Bash"], answer: "a", message: "m" },
      { _tag: "FallbackError", reason: { _tag: "NoProviders", message: "m" } },
      { _tag: "ProviderError", provider: "p", reason: { _tag: "StalledError", message: "m" } },
      {
        _tag: "SessionStoreError",
        operation: "append",
        sessionId: "s",
        reason: { _tag: "StoreUnavailable", message: "m" },
        answer: "a"
      },
      { _tag: "SessionStoreError", operation: "load", reason: { _tag: "SessionNotFound", message: "m" } }
    ].map((e) => decode(e))
    const mapped = errors.map(map)
    expect(mapped.map((e) => e.reason._tag)).toEqual([
      "InvalidRequestError",
      "StructuredOutputError",
      "InvalidResponseError",
      "InternalProviderError",
      "RateLimitError",
      "InvalidRequestError",
      "AuthenticationError",
      "InvalidRequestError",
      "InvalidRequestError",
      "UnknownError",
      "UnknownError",
      "UnknownError",
      "InternalProviderError",
      "InternalProviderError",
      "UnknownError"
    ])
    // A stalled run and a store that did not answer may succeed when tried again; a missing session not.
    expect(mapped.slice(12).map((e) => e.isRetryable)).toEqual([true, true, false])
    expect(mapped.every((e) => e.module === "ChatLanguageModel" && e.method === "generateText")).toBe(true)
    // A retry on `isRetryable` retries exactly what the provider called retryable.
    expect(mapped.slice(2, 7).map((e) => e.isRetryable)).toEqual([false, true, true, false, false])
    // The ChatError comes back from the reason's metadata, also after the AiError is serialised.
    const roundTrip = Schema.decodeUnknownSync(AiError.AiError)(Schema.encodeSync(AiError.AiError)(mapped[1]!))
    expect(Option.getOrThrow(ChatLanguageModel.chatErrorOf(roundTrip))).toEqual(errors[1])
    expect(mapped.map((e) => Option.getOrThrow(ChatLanguageModel.chatErrorOf(e)))).toEqual(errors)
    const foreign = AiError.make({ module: "X", method: "y", reason: new AiError.UnknownError({}) })
    expect(Option.isNone(ChatLanguageModel.chatErrorOf(foreign))).toBe(true)
  })

  it("the translator ignores unknown tools and undecodable arguments, and keeps usage", () => {
    const translate = ChatLanguageModel.makeTranslator(Object.values(TestToolkit.tools))
    const out = [
      new TextDelta({ text: "" }),
      new ToolCallStart({ id: "x", name: "Bash", arguments: {} }),
      new ToolCallEnd({ id: "x", name: "Bash", result: "ok", isError: false }),
      new ToolCallStart({ id: "y", name: "add", arguments: { a: "nope" } }),
      new ToolCallEnd({ id: "y", name: "add", result: "Invalid arguments", isError: true }),
      new UsageEvent({ usage: Usage.of({ inputTokens: 10, outputTokens: 5, cachedTokens: 4, reasoningTokens: 2 }) }),
      new UsageEvent({ usage: Usage.of({ inputTokens: 1, outputTokens: 2, costUsd: 0.25 }) }),
      new Complete({ text: "" })
    ].flatMap((event) => translate(event))
    expect(out).toEqual([{
      type: "finish",
      reason: "stop",
      usage: {
        inputTokens: { total: 11, cacheRead: 4, uncached: 7 },
        outputTokens: { total: 7, reasoning: 2, text: 5 }
      },
      metadata: {
        [ChatLanguageModel.MetadataKey]: {
          costUsd: 0.25,
          toolErrors: [{ id: "y", name: "add", message: "arguments did not decode" }]
        }
      }
    }])
    const nothing = ChatLanguageModel.makeTranslator([])
    expect(nothing(new Complete({ text: "" }))).toMatchObject([{ usage: { inputTokens: {}, outputTokens: {} } }])
  })

  it.effect("Tool.dynamic is passed through; needsApproval fails the call with a clear error before any run", () => {
    const seen: Array<unknown> = []
    const jsonSchema = { type: "object", properties: { query: { type: "string" } }, required: ["query"] } as const
    const Search = AiTool.dynamic("search", { description: "Searches", parameters: jsonSchema })
    const Dynamic = Toolkit.make(Search)
    const dynamicHandlers = Dynamic.toLayer({ search: (params) => Effect.sync(() => (seen.push(params), ["a", "b"])) })
    const model = scriptedModel([
      Scripted.toolCalls({ id: "s1", name: "search", arguments: { query: "effect", page: 2 } }),
      Scripted.text("found two")
    ])
    const Delete = AiTool.make("delete_all", { needsApproval: true })
    const Guarded = Toolkit.make(Delete)
    return Effect.gen(function*() {
      const response = yield* AiLanguageModel.generateText({ prompt: "search", toolkit: Dynamic })
      expect(model.requests[0]!.request.tools[0]!.inputSchema).toEqual(jsonSchema)
      expect(seen).toEqual([{ query: "effect", page: 2 }])
      expect(response.toolCalls).toMatchObject([{ name: "search", params: { query: "effect", page: 2 } }])
      expect(response.toolResults).toMatchObject([{ name: "search", result: ["a", "b"], providerExecuted: true }])
      expect(response.text).toBe("found two")

      const before = model.requests.length
      const refused = yield* Effect.flip(
        AiLanguageModel.generateText({ prompt: "delete everything", toolkit: Guarded }).pipe(
          Effect.provide(Guarded.toLayer({ delete_all: () => Effect.void }))
        )
      )
      expect(refused).toMatchObject({
        reason: { _tag: "InvalidRequestError" },
        message: expect.stringContaining("needsApproval cannot be honoured (delete_all)")
      })
      expect(model.requests.length).toBe(before)
    }).pipe(Effect.provide(dynamicHandlers), Effect.provide(model.layer))
  })

  it("the translator drops results that do not decode and events effect/ai has no part for", () => {
    const translate = ChatLanguageModel.makeTranslator(Object.values(TestToolkit.tools))
    const out = [
      new ReasoningDelta({ text: "thinking" }),
      new AgentToolStart({ id: "b", name: "Bash", input: {} }),
      new TextDelta({ text: "a" }),
      new ToolCallStart({ id: "1", name: "add", arguments: { a: 1, b: "1" } }),
      new ToolCallEnd({ id: "1", name: "add", result: "\"two\"", isError: false }),
      new ToolCallStart({ id: "2", name: "today", arguments: {} }),
      new ToolCallEnd({ id: "2", name: "today", result: "not json", isError: false }),
      new ToolCallStart({ id: "3", name: "lookup", arguments: { city: "X" } }),
      new ToolCallEnd({ id: "3", name: "lookup", result: "Invalid arguments for tool lookup: …", isError: true }),
      new ToolCallEnd({ id: "4", name: "add", result: "2", isError: false }),
      new TextDelta({ text: "b" }),
      new Complete({ text: "" })
    ].flatMap((event) => translate(event))
    expect(out.map((part) => part.type)).toEqual([
      "text-start",
      "text-delta",
      "text-end",
      "tool-call",
      "tool-call",
      "tool-call",
      "text-start",
      "text-delta",
      "text-end",
      "finish"
    ])
    expect(out.at(-1)).toMatchObject({
      metadata: {
        [ChatLanguageModel.MetadataKey]: {
          toolErrors: [
            { id: "1", name: "add", message: "\"two\"" },
            { id: "2", name: "today", message: "not json" },
            { id: "3", name: "lookup", message: "Invalid arguments for tool lookup: …" }
          ]
        }
      }
    })
  })

  it.effect("generateObject: a call the CLI could not run is reported, not returned", () => {
    const handlers = makeHandlers()
    const model = scriptedModel([
      Scripted.toolCalls({ name: "add", arguments: "{not json" }, { name: "today" }),
      Scripted.structured({ sum: 3 })
    ])
    return Effect.gen(function*() {
      const response = yield* AiLanguageModel.generateObject({
        prompt: "sum",
        schema: Schema.Struct({ sum: Schema.Number }),
        toolkit: TestToolkit
      })
      expect(response.value).toEqual({ sum: 3 })
      // Arguments that are not even JSON: the call is dropped (effect/ai would fail on it).
      expect(response.toolCalls.map((call) => call.name)).toEqual(["today"])
      expect(response.toolResults).toMatchObject([{
        name: "today",
        encodedResult: { date: "2026-01-02T03:04:05.000Z" }
      }])
      const finish = response.content.find((part) => part.type === "finish")!
      expect(finish.metadata[ChatLanguageModel.MetadataKey]).toMatchObject({
        toolErrors: [{ id: "add_1", name: "add", message: "arguments did not decode" }]
      })
      expect(handlers.calls).toMatchObject({ add: 0, today: 1 })
    }).pipe(Effect.provide(handlers.layer), Effect.provide(model.layer))
  })
})
