/**
 * Connection lifetimes of the bridge (issue 30): the server never closes an idle keep-alive
 * connection on its own (the claude CLI reuses pooled sockets after any gap, and one reused as
 * the server closes it is reset), while a run's connections end with the run.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import { initializeBody, mcpHeaders } from "./mcpBridgeSupport.ts"

interface Sent {
  readonly status: number
  readonly socket: Net.Socket
  readonly reused: boolean
}

/** An initialize POST through `agent`, with the socket it went over. */
const initialize = (agent: Http.Agent, port: number, token: string) =>
  Effect.callback<Sent>((resume) => {
    const req = Http.request(
      { host: "127.0.0.1", port, method: "POST", path: "/mcp", headers: mcpHeaders(port, token), agent },
      (res) => {
        res.resume()
        res.on("end", () =>
          resume(Effect.succeed({ status: res.statusCode ?? 0, socket: req.socket!, reused: req.reusedSocket })))
      }
    )
    req.on("error", (e) =>
      resume(Effect.die(e)))
    req.end(initializeBody)
  })

const keepAliveAgent = Effect.acquireRelease(
  Effect.sync(() => new Http.Agent({ keepAlive: true, maxSockets: 1 })),
  (agent) => Effect.sync(() => agent.destroy())
)

const closed = (socket: Net.Socket) =>
  socket.destroyed ? Effect.void : Effect.callback<void>((resume) => {
    socket.once("close", () => resume(Effect.void))
  })

describe("NodeMcpBridge connection lifetimes", () => {
  it.live(
    "an idle keep-alive connection outlives Node's idle close (5 s + 1 s) and is reused",
    () =>
      Effect.gen(function*() {
        const bridge = yield* NodeMcpBridge.make()
        const agent = yield* keepAliveAgent
        const token = Redacted.value(bridge.token)
        const first = yield* initialize(agent, bridge.port, token)
        expect(first.status).toBe(200)
        yield* Effect.sleep("6500 millis")
        expect(first.socket.destroyed).toBe(false)
        const second = yield* initialize(agent, bridge.port, token)
        expect(second).toMatchObject({ status: 200, reused: true })
        expect(second.socket).toBe(first.socket)
      }),
    20_000
  )

  it.live("a run's connections close when the run ends; the bridge's own stay open", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make()
      const own = yield* initialize(yield* keepAliveAgent, bridge.port, Redacted.value(bridge.token))
      const runScope = yield* Scope.make()
      const run = yield* bridge.openRun.pipe(Scope.provide(runScope))
      const sent = yield* initialize(yield* keepAliveAgent, bridge.port, Redacted.value(run.token))
      expect(sent.status).toBe(200)
      expect(sent.socket.destroyed).toBe(false)
      yield* Scope.close(runScope, Exit.void)
      yield* closed(sent.socket).pipe(
        Effect.timeoutOrElse({ duration: "2 seconds", orElse: () => Effect.fail("still open") })
      )
      expect(sent.socket.destroyed).toBe(true)
      expect(own.socket.destroyed).toBe(false)
    }))
})
