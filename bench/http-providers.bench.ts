/**
 * Per-request client overhead of the HTTP providers: one `chat` (a fresh client each time, so the
 * history does not grow) against a local fake API, next to the vendor's official SDK sending the
 * same request to the same fake in the same run. Target: ratio ≤ 1.0×.
 */
import Anthropic from "@anthropic-ai/sdk"
import { NodeHttpClient } from "@effect/platform-node"
import { GoogleGenAI } from "@google/genai"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import OpenAI from "openai"
import * as ClaudeApi from "../src/layers/ClaudeApi.js"
import * as Gemini from "../src/layers/Gemini.js"
import * as OpenAi from "../src/layers/OpenAi.js"
import * as FakeGemini from "../test/support/FakeGemini.js"
import * as FakeMessagesApi from "../test/support/FakeMessagesApi.js"
import * as FakeOpenAi from "../test/support/FakeOpenAi.js"
import { compare } from "./util.js"

const key = "bench-key"
// Which HttpClient to measure: undici (default) or node:http with a keep-alive agent (`BENCH_HTTP=node`).
const runtime = ManagedRuntime.make(
  process.env.BENCH_HTTP === "node" ? NodeHttpClient.layer : NodeHttpClient.layerUndici
)
const run = <A, E>(effect: Effect.Effect<A, E, never>) => runtime.runPromise(effect)
const options = { rounds: 5, perRound: 60, target: 1.0 }

const main = Effect.gen(function*() {
  const anthropic = yield* FakeMessagesApi.make(() => ({ text: "ok" }))
  const openai = yield* FakeOpenAi.make(() => ({ text: "ok" }))
  const gemini = yield* FakeGemini.make(() => ({ text: "ok" }))

  const claudeSdk = new Anthropic({ apiKey: key, baseURL: anthropic.url, maxRetries: 0 })
  const claudeOurs = ClaudeApi.make({
    apiKey: Redacted.make(key),
    model: "claude-bench",
    baseUrl: anthropic.url,
    maxTokens: 64
  })
  yield* Effect.promise(() =>
    compare(
      "ClaudeApi chat (1 request) vs @anthropic-ai/sdk messages.create",
      () => runtime.runPromise(Effect.flatMap(claudeOurs, (c) => c.chat("hi"))),
      () =>
        claudeSdk.messages.create({
          model: "claude-bench",
          max_tokens: 64,
          messages: [{ role: "user", content: "hi" }]
        }),
      options
    )
  )

  const openaiSdk = new OpenAI({ apiKey: key, baseURL: openai.url, maxRetries: 0 })
  const openaiOurs = OpenAi.make({ apiKey: Redacted.make(key), model: "gpt-bench", baseUrl: openai.url })
  yield* Effect.promise(() =>
    compare(
      "OpenAi chat (1 request) vs openai chat.completions.create",
      () => runtime.runPromise(Effect.flatMap(openaiOurs, (c) => c.chat("hi"))),
      () => openaiSdk.chat.completions.create({ model: "gpt-bench", messages: [{ role: "user", content: "hi" }] }),
      options
    )
  )

  const geminiSdk = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gemini.url } })
  const geminiOurs = Gemini.make({ apiKey: Redacted.make(key), model: "gemini-bench", baseUrl: gemini.url })
  yield* Effect.promise(() =>
    compare(
      "Gemini chat (1 request) vs @google/genai models.generateContent",
      () => runtime.runPromise(Effect.flatMap(geminiOurs, (c) => c.chat("hi"))),
      () => geminiSdk.models.generateContent({ model: "gemini-bench", contents: "hi" }),
      options
    )
  )
})

await run(Effect.scoped(main))
await runtime.dispose()
