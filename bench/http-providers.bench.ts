/**
 * Per-request client overhead of the HTTP providers: one `chat` against a local fake API, next to
 * the vendor's official SDK sending the same request to the same fake in the same run. Target:
 * ratio ≤ 1.0×.
 *
 * What is timed, and why: a vendor SDK client is stateless — built once, it sends each request
 * as given. A ChatClient is a conversation: it keeps the history, so reusing one would make every
 * request larger than the last and no longer "the same request". Building a fresh client inside
 * the timed region would instead charge our side for construction the SDK side never pays
 * (the SDK client is built once, outside). So each sample takes a ChatClient from a pool built
 * ahead of time (`make` outside the timed region) and times one `chat("hi")` on it: the same
 * one-message request the SDK sends. What `make` itself costs is printed on its own line.
 *
 * Both sides first send `BENCH_WARMUP` (default 1000) untimed requests, so the ratio is the
 * steady state of a long-running process rather than how fast V8 tiers up either code base
 * (`compare` alone warms up with only 10 calls). `BENCH_WARMUP=0` shows the cold numbers. */
import Anthropic from "@anthropic-ai/sdk"
import { NodeHttpClient } from "@effect/platform-node"
import { GoogleGenAI } from "@google/genai"
import * as Effect from "effect/Effect"
import type * as HttpClient from "effect/http/HttpClient"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import OpenAI from "openai"
import * as ClaudeApi from "../src/layers/ClaudeApi.ts"
import * as Gemini from "../src/layers/Gemini.ts"
import * as OpenAi from "../src/layers/OpenAi.ts"
import type { ChatClientService, ProviderError } from "../src/services/ChatClient.ts"
import * as FakeGemini from "../test/support/FakeGemini.ts"
import * as FakeMessagesApi from "../test/support/FakeMessagesApi.ts"
import * as FakeOpenAi from "../test/support/FakeOpenAi.ts"
import { compare, median, sample } from "./util.ts"

const key = "bench-key"
// Which HttpClient to measure: undici (default) or node:http with a keep-alive agent (`BENCH_HTTP=node`).
const runtime = ManagedRuntime.make(
  process.env["BENCH_HTTP"] === "node" ? NodeHttpClient.layerNodeHttp : NodeHttpClient.layerUndici
)
const options = { rounds: 5, perRound: 60, target: 1.0 }
// compare() runs 10 warm-up calls in the first round and 2 in each later one, per side.
const callsPerCompare = options.rounds * options.perRound + 10 + 2 * (options.rounds - 1)

const warmup = Number(process.env["BENCH_WARMUP"] ?? 1000)

type Make = Effect.Effect<ChatClientService, ProviderError, HttpClient.HttpClient>

/**
 * Times `chat("hi")` on a fresh client per call against `sdkCall`. The clients are built before
 * timing starts; both sides first run `warmup` requests untimed, so the ratio is steady state.
 */
const measure = async (label: string, make: Make, sdkCall: () => Promise<unknown>) => {
  const pool = await runtime.runPromise(Effect.replicateEffect(make, warmup + callsPerCompare))
  let next = 0
  const ours = () => {
    const client = pool[next++]
    if (client === undefined) throw new Error("client pool exhausted: callsPerCompare is out of date")
    return runtime.runPromise(client.chat("hi"))
  }
  for (let i = 0; i < warmup; i++) {
    await sdkCall()
    await ours()
  }
  await compare(label, ours, sdkCall, options)
}

const reportMake = async (label: string, make: Make) => {
  const times = await sample(200, () => runtime.runPromise(make))
  console.log(`${label} make (not part of the ratio): ${(median(times) * 1000).toFixed(1)} µs`)
}

const main = Effect.gen(function*() {
  const anthropic = yield* FakeMessagesApi.make(() => ({ text: "ok" }))
  const openai = yield* FakeOpenAi.make(() => ({ text: "ok" }))
  const gemini = yield* FakeGemini.make(() => ({ text: "ok" }))

  const claudeSdk = new Anthropic({ apiKey: key, baseURL: anthropic.url, maxRetries: 0 })
  const claudeMake = ClaudeApi.make({
    apiKey: Redacted.make(key),
    model: "claude-bench",
    baseUrl: anthropic.url,
    maxTokens: 64
  })
  yield* Effect.promise(() =>
    measure(
      "ClaudeApi chat (1 request) vs @anthropic-ai/sdk messages.create",
      claudeMake,
      () =>
        claudeSdk.messages.create({
          model: "claude-bench",
          max_tokens: 64,
          messages: [{ role: "user", content: "hi" }]
        })
    )
  )

  const openaiSdk = new OpenAI({ apiKey: key, baseURL: openai.url, maxRetries: 0 })
  const openaiMake = OpenAi.make({ apiKey: Redacted.make(key), model: "gpt-bench", baseUrl: openai.url })
  yield* Effect.promise(() =>
    measure(
      "OpenAi chat (1 request) vs openai chat.completions.create",
      openaiMake,
      () => openaiSdk.chat.completions.create({ model: "gpt-bench", messages: [{ role: "user", content: "hi" }] })
    )
  )

  const geminiSdk = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gemini.url } })
  const geminiMake = Gemini.make({ apiKey: Redacted.make(key), model: "gemini-bench", baseUrl: gemini.url })
  yield* Effect.promise(() =>
    measure(
      "Gemini chat (1 request) vs @google/genai models.generateContent",
      geminiMake,
      () => geminiSdk.models.generateContent({ model: "gemini-bench", contents: "hi" })
    )
  )

  yield* Effect.promise(async () => {
    await reportMake("ClaudeApi", claudeMake)
    await reportMake("OpenAi", openaiMake)
    await reportMake("Gemini", geminiMake)
  })
})

await runtime.runPromise(Effect.scoped(main))
await runtime.dispose()
