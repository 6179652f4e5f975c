import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpClient from "effect/http/HttpClient"
import * as Redacted from "effect/Redacted"
import { type HttpSettings, postJson } from "../../../src/internal/http/transport.ts"
import { ProviderError } from "../../../src/services/ChatClient.ts"
import { HttpLive, SecretKey, withCapturedLogs } from "../../layers/httpProviderSupport.ts"
import { sendJson, serve } from "../../support/fakeServer.ts"

/** Settings of a provider built without the library's variables: errors name the options. */
const settings = (baseUrl: string, maxRetries = 0): HttpSettings => ({
  provider: "acme",
  baseUrl,
  secretHeaders: ["x-acme-key"],
  secret: Redacted.make(SecretKey),
  maxRetries,
  retryBaseDelay: Duration.millis(1)
})

const post = (s: HttpSettings, path = "/v1/turn") =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    return yield* postJson(client, s, path, { "x-acme-key": SecretKey }, { prompt: "hi" })
  })

describe("transport.postJson without an env prefix", () => {
  it.live("a refused key names the API key option, and the echoed key is scrubbed", () =>
    Effect.gen(function*() {
      const api = yield* serve(({ res }) => sendJson(res, 401, { error: { message: `invalid key ${SecretKey}` } }))
      const error = yield* Effect.flip(post(settings(api.url)))
      expect(error).toBeInstanceOf(ProviderError)
      expect(error.reason).toMatchObject({ _tag: "AuthenticationError", status: 401 })
      expect(error.message).toBe(
        "acme refused the credentials (HTTP 401: invalid key [redacted]); " +
          "check the API key (or the apiKey option) and its access to this model"
      )
      expect(api.requests).toHaveLength(1)
      expect(api.requests[0]!.body).toEqual({ prompt: "hi" })
    }).pipe(Effect.scoped, Effect.provide(HttpLive)))

  it.live("a 2xx body that is not JSON is an InvalidResponseError, not retried", () =>
    Effect.gen(function*() {
      const api = yield* serve(({ res }) => {
        res.writeHead(200, { "content-type": "text/plain" })
        res.end("<html>portal</html>")
      })
      const error = yield* Effect.flip(post(settings(api.url, 2)))
      expect(error.reason._tag).toBe("InvalidResponseError")
      expect(error.message).toBe("acme answered with a body that is not JSON")
      expect(api.requests).toHaveLength(1)
    }).pipe(Effect.scoped, Effect.provide(HttpLive)))

  it.live("a server that went away is a transient NetworkError naming the base URL; retries log its reason", () =>
    Effect.gen(function*() {
      // A port that was just free: nothing listens there any more.
      const port = yield* Effect.scoped(Effect.map(serve(() => undefined), (api) => api.port))
      const { exit, lines } = yield* withCapturedLogs(Effect.flip(post(settings(`http://127.0.0.1:${port}`, 1))))
      if (!Exit.isSuccess(exit)) return expect.unreachable("the post should fail")
      const error = exit.value
      expect(error.reason).toMatchObject({ _tag: "NetworkError" })
      expect(error.isRetryable).toBe(true)
      expect(error.message).toContain(`acme request to 127.0.0.1:${port} failed (Transport`)
      expect(error.message).toContain(`check that 127.0.0.1:${port} is reachable and that the base URL is right`)
      const retries = lines.filter((line) => line.includes("retrying model request"))
      expect(retries).toHaveLength(1)
      expect(retries[0]).toContain("status=NetworkError")
    }).pipe(Effect.scoped, Effect.provide(HttpLive)))

  it.live("a request that cannot be addressed fails at once, not transient", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(post(settings("http://127.0.0.1:1", 3), ":not-a-port/v1"))
      expect(error.reason).toMatchObject({ _tag: "NetworkError", transient: false })
      expect(error.isRetryable).toBe(false)
      expect(error.message).toContain("acme request to 127.0.0.1:1 failed")
    }).pipe(Effect.scoped, Effect.provide(HttpLive)))
})
