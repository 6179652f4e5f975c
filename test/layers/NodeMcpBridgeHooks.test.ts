import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Http from "node:http"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import { rawRequest } from "./mcpBridgeSupport.ts"

const hookHeaders = (port: number, token: string | undefined): Http.OutgoingHttpHeaders => ({
  host: `127.0.0.1:${port}`,
  "content-type": "application/json",
  ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
})

describe("NodeMcpBridge hooks route", () => {
  it.live("answers POST /hooks/<name> with the handler's JSON, only with the bridge's or a live run's token", () =>
    Effect.scoped(Effect.gen(function*() {
      const calls: Array<[string, unknown]> = []
      const bridge = yield* NodeMcpBridge.make({
        hooks: (name, input) => Effect.sync(() => (calls.push([name, input]), { seen: name }))
      })
      const post = (token: string | undefined, path = "/hooks/0") =>
        Effect.promise(() =>
          rawRequest({ port: bridge.port, path, headers: hookHeaders(bridge.port, token), body: "{\"a\":1}" })
        )
      const token = Redacted.value(bridge.token)
      for (const wrong of [undefined, `${token}x`, "nope"]) {
        const refused = yield* post(wrong)
        expect(refused.status).toBe(401)
        expect(refused.body).not.toContain(token)
      }
      expect(calls).toEqual([])
      const answered = yield* post(token)
      expect(answered.status).toBe(200)
      expect(JSON.parse(answered.body)).toEqual({ seen: "0" })
      expect(calls).toEqual([["0", { a: 1 }]])
      // A run's token is the conversation's credential too, while the run lives.
      const run = yield* Effect.scoped(Effect.gen(function*() {
        const access = yield* bridge.openRun
        const res = yield* post(Redacted.value(access.token), "/hooks/PreToolUse%2F1")
        return { res, runToken: Redacted.value(access.token) }
      }))
      expect(run.res.status).toBe(200)
      expect(JSON.parse(run.res.body)).toEqual({ seen: "PreToolUse/1" })
      expect((yield* post(run.runToken)).status).toBe(401)
      // A foreign Host is refused before anything else.
      const rebound = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          path: "/hooks/0",
          headers: { ...hookHeaders(bridge.port, token), host: `evil.example:${bridge.port}` },
          body: "{}"
        })
      )
      expect(rebound.status).toBe(403)
    })))

  it.live("a failing or dying hook answers 500; bad JSON 400; a bridge without hooks 404", () =>
    Effect.scoped(Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make({
        hooks: (name) => name === "fail" ? Effect.fail("no") : Effect.die(new Error("boom"))
      })
      const token = Redacted.value(bridge.token)
      const post = (path: string, body = "{}") =>
        Effect.promise(() => rawRequest({ port: bridge.port, path, headers: hookHeaders(bridge.port, token), body }))
      expect((yield* post("/hooks/fail")).status).toBe(500)
      expect((yield* post("/hooks/die")).status).toBe(500)
      expect((yield* post("/hooks/fail", "{not json")).status).toBe(400)
      const plain = yield* NodeMcpBridge.make()
      const none = yield* Effect.promise(() =>
        rawRequest({
          port: plain.port,
          path: "/hooks/0",
          headers: hookHeaders(plain.port, Redacted.value(plain.token)),
          body: "{}"
        })
      )
      expect(none.status).toBe(404)
    })))

  it.live("a client that hangs up interrupts the running hook", () =>
    Effect.scoped(Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const bridge = yield* NodeMcpBridge.make({
        hooks: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      const req = Http.request({
        host: "127.0.0.1",
        port: bridge.port,
        method: "POST",
        path: "/hooks/0",
        headers: hookHeaders(bridge.port, Redacted.value(bridge.token)),
        agent: false
      })
      req.on("error", () => undefined)
      req.end("{}")
      yield* Deferred.await(started)
      req.destroy()
      yield* Deferred.await(interrupted).pipe(Effect.timeout("10 seconds"))
    })))
})
