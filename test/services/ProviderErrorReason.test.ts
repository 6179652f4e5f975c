/**
 * `ProviderError` and `FallbackError` speak effect's reason pattern: every reason is caught by
 * `Effect.catchReason` (and a misspelt one does not compile), `isRetryable` follows the table in
 * the class docs, and a reason survives the JSON codec the cluster and `effect/ai` use.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as ClaudeApi from "../../src/layers/ClaudeApi.ts"
import * as Fallback from "../../src/layers/Fallback.ts"
import * as OpenAi from "../../src/layers/OpenAi.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import {
  ApprovalRequired,
  AuthenticationError,
  ChatClient,
  ChatError,
  ConfigurationError,
  Exhausted,
  FallbackError,
  type FallbackErrorReason,
  InternalProviderError,
  InvalidRequestError,
  InvalidResponseError,
  NetworkError,
  NoneBuilt,
  NoProviders,
  ProcessError,
  ProviderError,
  type ProviderErrorReason,
  QuotaExhaustedError,
  RateLimitError,
  reasonFromHttpStatus,
  RefusedAfterToolRun,
  SessionNotFoundError,
  StalledError,
  TimeoutError,
  UnknownError
} from "../../src/services/ChatClient.ts"
import { TurnError } from "../../src/services/ClaudeConversation.ts"
import { HttpLive, SecretKey } from "../layers/httpProviderSupport.ts"
import * as FakeMessages from "../support/FakeMessagesApi.ts"
import * as FakeOpenAi from "../support/FakeOpenAi.ts"

const message = "m"

/** Every reason with the `isRetryable` the docs' table gives it. */
const providerTable: ReadonlyArray<readonly [ProviderErrorReason, boolean]> = [
  [new AuthenticationError({ message, status: 401 }), false],
  [new RateLimitError({ message, status: 429, retryAfter: Duration.seconds(7) }), true],
  [new QuotaExhaustedError({ message, status: 429 }), false],
  [new InvalidRequestError({ message, status: 400 }), false],
  [new InternalProviderError({ message, status: 503 }), true],
  [new NetworkError({ message }), true],
  [new NetworkError({ message, transient: false }), false],
  [new TimeoutError({ message }), true],
  [new InvalidResponseError({ message }), false],
  [new ProcessError({ message, exitCode: 2 }), false],
  [new ProcessError({ message, transient: true }), true],
  [new ConfigurationError({ message }), false],
  [new StalledError({ message }), true],
  [
    new ApprovalRequired({ message, approvalId: "a-1", sessionId: "s-1", tool: "transfer", input: { amount: 5 } }),
    false
  ],
  [new UnknownError({ message }), false],
  [new SessionNotFoundError({ message, sessionId: "s-1" }), false]
]

const providerError = (reason: ProviderErrorReason) => new ProviderError({ provider: "p", reason })

const failing = (reason: ProviderErrorReason): Effect.Effect<string, ProviderError | FallbackError> =>
  Effect.fail(providerError(reason))

/** Catches each reason by its own tag; the effect still fails with the other reasons. */
const caught = (reason: ProviderErrorReason) =>
  failing(reason).pipe(
    Effect.catchReason("ProviderError", "AuthenticationError", (r) => Effect.succeed(`${r._tag} ${r.status}`)),
    Effect.catchReason("ProviderError", "RateLimitError", (r) =>
      Effect.succeed(`${r._tag} ${r.retryAfter === undefined ? "-" : Duration.toSeconds(r.retryAfter)}`)),
    Effect.catchReason("ProviderError", "QuotaExhaustedError", (r) =>
      Effect.succeed(`${r._tag} ${r.status}`)),
    Effect.catchReason("ProviderError", "InvalidRequestError", (r) =>
      Effect.succeed(`${r._tag} ${r.status}`)),
    Effect.catchReason("ProviderError", "InternalProviderError", (r) => Effect.succeed(`${r._tag} ${r.status}`)),
    Effect.catchReason("ProviderError", "NetworkError", (r) => Effect.succeed(`${r._tag} ${r.transient}`)),
    Effect.catchReason("ProviderError", "TimeoutError", (r) => Effect.succeed(r._tag)),
    Effect.catchReason("ProviderError", "InvalidResponseError", (r) => Effect.succeed(r._tag)),
    Effect.catchReason("ProviderError", "ProcessError", (r) => Effect.succeed(`${r._tag} ${r.exitCode}`)),
    Effect.catchReason("ProviderError", "ConfigurationError", (r) => Effect.succeed(r._tag)),
    Effect.catchReason("ProviderError", "StalledError", (r) => Effect.succeed(r._tag)),
    Effect.catchReason("ProviderError", "ApprovalRequired", (r) => Effect.succeed(`${r._tag} ${r.approvalId}`)),
    Effect.catchReason("ProviderError", "UnknownError", (r) => Effect.succeed(r._tag)),
    Effect.catchReason("ProviderError", "SessionNotFoundError", (r) => Effect.succeed(`${r._tag} ${r.sessionId}`))
  )

const ChatErrorJson = Schema.toCodecJson(ChatError)
const TurnErrorJson = Schema.toCodecJson(TurnError)

/** Encodes to JSON text and back, as the cluster stores a reply and `effect/ai` carries metadata. */
const roundTrip = <A>(codec: Schema.Codec<A, unknown>, value: A): A =>
  Schema.decodeUnknownSync(codec)(JSON.parse(JSON.stringify(Schema.encodeSync(codec)(value))))

describe("ProviderError reasons", () => {
  it.effect("Effect.catchReason catches every reason by its tag", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      for (const [reason] of providerTable) seen.push(yield* caught(reason))
      expect(seen).toEqual([
        "AuthenticationError 401",
        "RateLimitError 7",
        "QuotaExhaustedError 429",
        "InvalidRequestError 400",
        "InternalProviderError 503",
        "NetworkError undefined",
        "NetworkError false",
        "TimeoutError",
        "InvalidResponseError",
        "ProcessError 2",
        "ProcessError undefined",
        "ConfigurationError",
        "StalledError",
        "ApprovalRequired a-1",
        "UnknownError",
        "SessionNotFoundError s-1"
      ])
    }))

  it.effect("a reason not caught leaves the ProviderError as it was; catchReasons selects several", () =>
    Effect.gen(function*() {
      const error = providerError(new StalledError({ message: "silent" }))
      const left = yield* Effect.flip(
        Effect.fail(error).pipe(Effect.catchReason("ProviderError", "RateLimitError", () => Effect.succeed("no")))
      )
      assert.strictEqual(left, error)
      const picked = yield* failing(new TimeoutError({ message })).pipe(
        Effect.catchReasons("ProviderError", {
          TimeoutError: () => Effect.succeed("retry later"),
          StalledError: () => Effect.succeed("resume")
        })
      )
      expect(picked).toBe("retry later")
    }))

  it.effect("type test: a misspelt reason tag does not compile", () =>
    Effect.gen(function*() {
      const program = failing(new RateLimitError({ message })).pipe(
        // @ts-expect-error: "RateLimit" is not a reason of ProviderError
        Effect.catchReason("ProviderError", "RateLimit", () => Effect.succeed("never"))
      )
      // At run time the misspelt tag matches nothing: the error comes through.
      const error = yield* Effect.flip(program)
      expect(error).toMatchObject({ _tag: "ProviderError", reason: { _tag: "RateLimitError" } })
    }))

  it("isRetryable follows the documented table, on the reason and on the error", () => {
    for (const [reason, retryable] of providerTable) {
      expect([reason._tag, reason.isRetryable]).toEqual([reason._tag, retryable])
      expect([reason._tag, providerError(reason).isRetryable]).toEqual([reason._tag, retryable])
    }
  })

  it("message, status and retryAfter read the reason", () => {
    const error = providerError(
      new RateLimitError({ message: "slow down", status: 429, retryAfter: Duration.seconds(3) })
    )
    expect([error.message, error.status, error.retryAfter]).toEqual(["slow down", 429, Duration.seconds(3)])
    const plain = providerError(new ConfigurationError({ message: "set KEY" }))
    expect([plain.message, plain.status, plain.retryAfter]).toEqual(["set KEY", undefined, undefined])
    expect(plain).toBeInstanceOf(Error)
    expect(String(plain)).toContain("set KEY")
  })

  it("reasonFromHttpStatus: the reason each status stands for", () => {
    const tags = [400, 401, 403, 404, 408, 429, 500, 501, 529, 302].map((status) =>
      reasonFromHttpStatus({ status, message })._tag
    )
    expect(tags).toEqual([
      "InvalidRequestError",
      "AuthenticationError",
      "AuthenticationError",
      "InvalidRequestError",
      "TimeoutError",
      "RateLimitError",
      "InternalProviderError",
      "InternalProviderError",
      "InternalProviderError",
      "UnknownError"
    ])
    const limited = reasonFromHttpStatus({ status: 429, message, retryAfter: Duration.seconds(2) })
    expect(limited).toMatchObject({ status: 429, retryAfter: Duration.seconds(2) })
    expect(Scripted.httpError(503).reason).toBeInstanceOf(InternalProviderError)
  })

  it.live(
    "a used-up quota is a QuotaExhaustedError, not retried; Fallback still fails over on its 429",
    () =>
      Effect.gen(function*() {
        const quota = {
          error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" }
        }
        const openai = yield* FakeOpenAi.make(() => ({ status: 429, body: quota }))
        const client = yield* OpenAi.make({
          apiKey: Redacted.make(SecretKey),
          model: "gpt-test",
          baseUrl: openai.url,
          retryBaseDelay: "5 millis"
        })
        const error = yield* Effect.flip(client.chat("hi"))
        expect(error).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "QuotaExhaustedError", status: 429 },
          isRetryable: false
        })
        expect(error.message).toContain("You exceeded your current quota")
        expect(openai.completionRequests()).toHaveLength(1)
        if (error._tag === "ProviderError") expect(Fallback.defaultPolicy(error)).toBe("failover")

        const credit = yield* FakeMessages.make(() => ({
          status: 400,
          body: { type: "error", error: { type: "invalid_request_error", message: "Your credit balance is too low" } }
        }))
        const anthropic = yield* ClaudeApi.make({ apiKey: Redacted.make(SecretKey), model: "m", baseUrl: credit.url })
        const refused = yield* Effect.flip(anthropic.chat("hi"))
        expect(refused).toMatchObject({ reason: { _tag: "QuotaExhaustedError", status: 400 } })
        if (refused._tag === "ProviderError") expect(Fallback.defaultPolicy(refused)).toBe("fatal")
        // Other 429s stay rate limits and are retried.
        const limited = yield* FakeOpenAi.make(() => ({ status: 429, body: { error: { message: "slow down" } } }))
        const retried = yield* OpenAi.make({
          apiKey: Redacted.make(SecretKey),
          model: "gpt-test",
          baseUrl: limited.url,
          retryBaseDelay: "5 millis",
          maxRetries: 1
        })
        expect(yield* Effect.flip(retried.chat("hi"))).toMatchObject({ reason: { _tag: "RateLimitError" } })
        expect(limited.completionRequests()).toHaveLength(2)
      }).pipe(Effect.provide(HttpLive)),
    60_000
  )

  it("every reason survives the JSON codec (ChatError, and the cluster's TurnError), fields and class included", () => {
    for (const [reason, retryable] of providerTable) {
      const error = providerError(reason)
      for (const codec of [ChatErrorJson, TurnErrorJson]) {
        const back = roundTrip(codec as Schema.Codec<ChatError, unknown>, error)
        expect(back).toBeInstanceOf(ProviderError)
        if (back._tag !== "ProviderError") continue
        expect(back.reason).toBeInstanceOf(reason.constructor)
        expect(back.reason).toEqual(reason)
        expect([reason._tag, back.isRetryable, back.message]).toEqual([reason._tag, retryable, message])
      }
    }
  })

  it("the old shape (kind, retryable) no longer decodes: a 1.x reply is reported, not misread", () => {
    const old = { _tag: "ProviderError", provider: "p", kind: "http", status: 429, message, retryable: true }
    expect(() => Schema.decodeUnknownSync(ChatErrorJson)(old)).toThrow()
  })
})

/** Every FallbackError reason with its `isRetryable`. */
const fallbackTable: ReadonlyArray<readonly [FallbackErrorReason, boolean]> = [
  [new Exhausted({ message, errors: [providerError(new RateLimitError({ message, status: 429 }))] }), true],
  [
    new Exhausted({
      message,
      errors: [providerError(new TimeoutError({ message })), providerError(new ProcessError({ message }))]
    }),
    false
  ],
  [new RefusedAfterToolRun({ message, errors: [providerError(new NetworkError({ message }))] }), false],
  [new NoProviders({ message }), false],
  [new NoneBuilt({ message, errors: [providerError(new ConfigurationError({ message }))] }), false]
]

describe("FallbackError reasons", () => {
  it.effect("Effect.catchReason catches every reason by its tag; Exhausted gives the errors", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      for (const [reason] of fallbackTable) {
        const program: Effect.Effect<string, ProviderError | FallbackError> = Effect.fail(new FallbackError({ reason }))
        seen.push(
          yield* program.pipe(
            Effect.catchReason("FallbackError", "Exhausted", (r) => Effect.succeed(`Exhausted ${r.errors.length}`)),
            Effect.catchReason("FallbackError", "RefusedAfterToolRun", (r) => Effect.succeed(r._tag)),
            Effect.catchReason("FallbackError", "NoProviders", (r) => Effect.succeed(r._tag)),
            Effect.catchReason("FallbackError", "NoneBuilt", (r) => Effect.succeed(r._tag)),
            // @ts-expect-error: "Exhaused" is not a reason of FallbackError
            Effect.catchReason("FallbackError", "Exhaused", () => Effect.succeed("never"))
          )
        )
      }
      expect(seen).toEqual(["Exhausted 1", "Exhausted 2", "RefusedAfterToolRun", "NoProviders", "NoneBuilt"])
    }))

  it("isRetryable follows the documented table; errors reads the reason's", () => {
    for (const [reason, retryable] of fallbackTable) {
      const error = new FallbackError({ reason })
      expect([reason._tag, error.isRetryable]).toEqual([reason._tag, retryable])
      expect(error.errors).toEqual("errors" in reason ? reason.errors : [])
      expect(error.message).toBe(message)
    }
  })

  it("every reason survives the JSON codec, nested provider errors included", () => {
    for (const [reason, retryable] of fallbackTable) {
      const back = roundTrip(ChatErrorJson, new FallbackError({ reason }))
      expect(back).toBeInstanceOf(FallbackError)
      if (back._tag !== "FallbackError") continue
      expect(back.reason).toBeInstanceOf(reason.constructor)
      expect(back.reason).toEqual(reason)
      expect(back.isRetryable).toBe(retryable)
      for (const e of back.errors) expect(e).toBeInstanceOf(ProviderError)
    }
  })

  it.effect("a real chain's Exhausted is caught by catchReason with each provider's error in order", () =>
    Effect.gen(function*() {
      const member = (name: string, status: number) => ({
        name,
        layer: Scripted.layer({ script: [Scripted.fail(Scripted.httpError(status, name))] })
      })
      const statuses = yield* Effect.flatMap(ChatClient, (chat) => chat.chat("hi")).pipe(
        Effect.provide(Fallback.layer([member("a", 503), member("b", 429)])),
        Effect.map(() => [] as ReadonlyArray<unknown>),
        Effect.catchReason(
          "FallbackError",
          "Exhausted",
          (reason) =>
            Effect.succeed(reason.errors.map((e) => e._tag === "ProviderError" && [e.provider, e.reason._tag]))
        )
      )
      expect(statuses).toEqual([["a", "InternalProviderError"], ["b", "RateLimitError"]])
    }))
})
