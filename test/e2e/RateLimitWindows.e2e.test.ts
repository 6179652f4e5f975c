import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Stream from "effect/Stream"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as Fallback from "../../src/layers/Fallback.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ChatClient, type ProviderFailure } from "../../src/services/ChatClient.ts"
import type { RateLimit } from "../../src/services/ChatEvent.ts"
import { Attributes, rateLimitUtilization } from "../../src/services/ChatTelemetry.ts"
import { claudeBinary, sandbox } from "../support/claudeCli.ts"
import { agentClient, localClient, localServices, requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

// Whole seconds, as the API sends them.
const now = Math.floor(Date.now() / 1000)
const fiveHourReset = now + 3_600
const sevenDayReset = now + 86_400

/**
 * One fake API for every case: "warn" is answered with a five-hour window at 91 % (a warning) and
 * the seven-day one at 40 %; "spent" with the five-hour window spent (429).
 */
const planApi = Fake.make((req) =>
  Fake.lastUserLine(req).includes("spent")
    ? Fake.spentWindow([
      { window: "5h", status: "rejected", utilization: 1, resetsAt: fiveHourReset },
      { window: "7d", status: "allowed", utilization: 0.5, resetsAt: sevenDayReset }
    ])
    : {
      text: "within the plan",
      headers: Fake.rateLimitHeaders([
        { window: "5h", status: "allowed_warning", utilization: 0.91, resetsAt: fiveHourReset },
        { window: "7d", status: "allowed", utilization: 0.4, resetsAt: sevenDayReset }
      ])
    }
)

/**
 * The sandbox of a CLI logged in to a subscription: the CLI reports plan windows only with an
 * OAuth token, not with an API key. No retries of the 429, so the spent case ends at once.
 */
const subscriptionBox = Effect.gen(function*() {
  const api = yield* planApi
  const box = yield* sandbox(api.url)
  const env = {
    ...box.env,
    ANTHROPIC_API_KEY: undefined,
    CLAUDE_CODE_OAUTH_TOKEN: "sk-ant-oat01-fake-subscription",
    CLAUDE_CODE_MAX_RETRIES: "0"
  }
  return { api, box, env }
})

const rateLimits = (events: Iterable<{ readonly _tag: string }>) =>
  [...events].filter((e): e is RateLimit => e._tag === "RateLimit").map((e) => ({
    window: e.window,
    status: e.status,
    utilization: e.utilization,
    resetsAt: e.resetsAt && DateTime.toEpochMillis(e.resetsAt) / 1000
  }))

const gauge = (provider: string, window: string) =>
  Effect.map(
    Metric.value(
      Metric.withAttributes(rateLimitUtilization, {
        [Attributes.provider]: provider,
        [Attributes.rateLimitWindow]: window
      })
    ),
    (state) => state.value
  )

describeWithClaude("Plan rate-limit windows with the real claude binary", () => {
  it.live("ClaudeLocal: the windows in chatStream and as the utilisation gauge", () =>
    Effect.gen(function*() {
      const { box, env } = yield* subscriptionBox
      const chat = yield* localClient(box, { env })
      const events = yield* Stream.runCollect(chat.chatStream("warn"))
      expect(rateLimits(events)).toEqual([
        { window: "five_hour", status: "allowed_warning", utilization: 0.91, resetsAt: fiveHourReset },
        { window: "seven_day", status: "allowed", utilization: 0.4, resetsAt: sevenDayReset }
      ])
      expect([...events].at(-1)).toMatchObject({ _tag: "Complete", text: "within the plan" })
      expect(yield* gauge("claude-local", "five_hour")).toBe(0.91)
      expect(yield* gauge("claude-local", "seven_day")).toBe(0.4)
    }), 120_000)

  it.live(
    "ClaudeLocal: a spent window is a retryable RateLimitError with resetsAt, and Fallback moves on",
    () =>
      Effect.gen(function*() {
        const { box, env } = yield* subscriptionBox
        const chat = yield* localClient(box, { env })
        const error = yield* Effect.flip(chat.chat("spent"))
        expect(error).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "RateLimitError", window: "five_hour", status: 429 },
          isRetryable: true
        })
        if (error._tag !== "ProviderError" || error.reason._tag !== "RateLimitError") return
        expect(error.reason.resetsAt && DateTime.toEpochMillis(error.reason.resetsAt)).toBe(fiveHourReset * 1000)
        expect(Fallback.defaultPolicy(error)).toBe("failover")
        expect(yield* gauge("claude-local", "five_hour")).toBe(1)

        // The subscription CLI first, an API-key provider (here a scripted one) when its window is spent.
        const failovers: Array<ProviderFailure> = []
        const chain = Fallback.layer([
          {
            name: "subscription",
            layer: ClaudeLocal.layer({ binary: claudeBinary, cwd: box.cwd, env, requestTimeout }).pipe(
              Layer.provide(localServices(box))
            )
          },
          { name: "api-key", layer: Scripted.layer({ script: [Scripted.text("answered by the second provider")] }) }
        ], { onFailover: (_from, _to, reason) => Effect.sync(() => failovers.push(reason)) })
        const fallback = Context.get(yield* Layer.build(Layer.fresh(chain)), ChatClient)
        const events = yield* Stream.runCollect(fallback.chatStream("spent again"))
        expect([...events].at(-1)).toMatchObject({ _tag: "Complete", text: "answered by the second provider" })
        // The spent window reached the consumer before the failover.
        expect(rateLimits(events)[0]).toMatchObject({ window: "five_hour", status: "rejected" })
        expect(failovers).toMatchObject([{
          _tag: "ProviderError",
          reason: { _tag: "RateLimitError", window: "five_hour" }
        }])
      }),
    180_000
  )

  it.live("ClaudeAgent: the windows in chatStream", () =>
    Effect.gen(function*() {
      const { box, env } = yield* subscriptionBox
      const chat = yield* agentClient(box, { env })
      const events = yield* Stream.runCollect(chat.chatStream("warn"))
      expect(rateLimits(events)).toEqual([
        { window: "five_hour", status: "allowed_warning", utilization: 0.91, resetsAt: fiveHourReset },
        { window: "seven_day", status: "allowed", utilization: 0.4, resetsAt: sevenDayReset }
      ])
      expect(yield* gauge("claude-agent", "five_hour")).toBe(0.91)
    }), 120_000)
})
