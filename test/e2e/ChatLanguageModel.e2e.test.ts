import { describe, expect, it } from "@effect/vitest"
import * as AiLanguageModel from "effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { readdirSync } from "node:fs"
import * as ChatLanguageModel from "../../src/ai/ChatLanguageModel.ts"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import { makeHandlers, TestToolkit } from "../ai/aiSupport.ts"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localServices } from "../support/claudeClients.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** The model: call add once (b as the numeric string the toolkit's schema expects), then answer. */
const addOnce = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length === 0) {
    return { text: "Let me add.", toolUses: [{ id: "toolu_add", name: "mcp__gtb__add", input: { a: 2, b: "40" } }] }
  }
  return { text: `The sum is ${results[0]!.content}.` }
}

/** Claude Code (the CLI) as the LanguageModel, in the test's sandbox. */
const layerIn = (box: Sandbox) =>
  ChatLanguageModel.layerClaudeLocal({ binary: claudeBinary, cwd: box.cwd, env: box.env, requestTimeout: "60 seconds" })
    .pipe(Layer.provide(localServices(box)))

describe("ChatLanguageModel on the real claude binary", () => {
  it.live("ClaudeLocal: generateText runs the toolkit once through the CLI; parts are provider-executed", () => {
    const handlers = makeHandlers()
    return Effect.gen(function*() {
      const api = yield* Fake.make(addOnce)
      const box = yield* sandbox(api.url)
      const response = yield* AiLanguageModel.generateText({
        prompt: [{ role: "system", content: "Use the tools." }, { role: "user", content: "What is 2 + 40?" }],
        toolkit: TestToolkit
      }).pipe(
        Effect.provide(layerIn(box))
      )
      expect(handlers.calls.add).toBe(1)
      // Effect 4's default ("opaque") parameters mode: the params as the model sent them.
      expect(response.toolCalls).toMatchObject([
        { id: "toolu_add", name: "add", params: { a: 2, b: "40" }, providerExecuted: true }
      ])
      expect(response.toolResults).toMatchObject([
        { id: "toolu_add", name: "add", result: 42, isFailure: false, providerExecuted: true }
      ])
      expect(response.text).toContain("The sum is 42.")
      expect(response.finishReason).toBe("stop")
      expect(response.usage.outputTokens.total).toBeGreaterThan(0)
      const first = api.messageRequests()[0]!
      expect(JSON.stringify(first.body.system)).toContain("Use the tools.")
      expect(first.body.tools!.map((t) => t.name)).toEqual(
        expect.arrayContaining(["mcp__gtb__add", "mcp__gtb__today", "mcp__gtb__lookup", "mcp__gtb__broken"])
      )
      expect(Fake.toolResults(api.messageRequests()[1]!)).toEqual([
        expect.objectContaining({ content: "42", is_error: false })
      ])
      // One call, one CLI run, closed with the call: no process and no secret file left.
      expect(claudeProcessesIn(box.cwd)).toEqual([])
      expect(readdirSync(box.secrets)).toEqual([])
    }).pipe(Effect.provide(handlers.layer))
  })

  it.live("ClaudeLocal: generateObject goes through --json-schema and is decoded with the caller's schema", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        (req.body.tools ?? []).some((t) => t.name === "StructuredOutput")
          ? { toolUses: [{ name: "StructuredOutput", input: { city: "Lisbon", founded: "1147-10-25T00:00:00.000Z" } }] }
          : { text: "no schema was offered" }
      )
      const box = yield* sandbox(api.url)
      const City = Schema.Struct({ city: Schema.String, founded: Schema.Date })
      const response = yield* AiLanguageModel.generateObject({ prompt: "Capital of Portugal?", schema: City }).pipe(
        Effect.provide(layerIn(box))
      )
      expect(response.value.city).toBe("Lisbon")
      expect(response.value.founded).toBeInstanceOf(Date)
      expect(response.value.founded.getUTCFullYear()).toBe(1147)
      const sent = api.messageRequests()[0]!.body.tools!.find((t) => t.name === "StructuredOutput")!.input_schema
      expect(sent).toMatchObject({ type: "object", required: ["city", "founded"] })
    }))

  it.live("ClaudeLocal: streamText yields text and tool parts as the CLI runs", () => {
    const handlers = makeHandlers()
    return Effect.gen(function*() {
      const api = yield* Fake.make(addOnce)
      const box = yield* sandbox(api.url)
      const parts = yield* Stream.runCollect(
        AiLanguageModel.streamText({ prompt: "What is 2 + 40?", toolkit: TestToolkit })
      ).pipe(Effect.provide(layerIn(box)))
      const types = parts.map((p) => p.type)
      expect(types).toContain("text-delta")
      expect(types.indexOf("tool-call")).toBeLessThan(types.indexOf("tool-result"))
      expect(types.at(-1)).toBe("finish")
      const text = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")
      expect(text).toContain("The sum is 42.")
      expect(parts.find((p) => p.type === "tool-result")).toMatchObject({
        name: "add",
        result: 42,
        providerExecuted: true
      })
      expect(handlers.calls.add).toBe(1)
    }).pipe(Effect.provide(handlers.layer))
  })

  it.live("ClaudeAgent: the same program, the toolkit served in-process over the SDK", () => {
    const handlers = makeHandlers()
    return Effect.gen(function*() {
      const api = yield* Fake.make(addOnce)
      const box = yield* sandbox(api.url)
      const model = ChatLanguageModel.layer((options) =>
        ClaudeAgent.make({ cwd: box.cwd, env: box.env, requestTimeout: "60 seconds", ...options })
      )
      const response = yield* AiLanguageModel.generateText({ prompt: "What is 2 + 40?", toolkit: TestToolkit }).pipe(
        Effect.provide(model)
      )
      expect(handlers.calls.add).toBe(1)
      expect(response.toolResults).toMatchObject([{ name: "add", result: 42, providerExecuted: true }])
      expect(response.text).toContain("The sum is 42.")
    }).pipe(Effect.provide(handlers.layer))
  })
})
