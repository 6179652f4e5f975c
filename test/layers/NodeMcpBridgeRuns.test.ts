/**
 * The bridge's per-run credentials, early-closed tool calls, idle expiry and the session bound,
 * driven with the MCP SDK's own client (and raw HTTP where the connection itself matters).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as References from "effect/References"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Http from "node:http"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as Tool from "../../src/services/Tool.ts"
import { connectClient, initializeBody, mcpHeaders, rawRequest } from "./mcpBridgeSupport.ts"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})

/** A tool that signals when it starts and when its finalizer runs; it never finishes on its own. */
const slowTool = Effect.gen(function*() {
  const started = yield* Deferred.make<void>()
  const finalized = yield* Deferred.make<void>()
  const slow = Tool.make("slow", {
    description: "Waits forever",
    parameters: {},
    handler: () =>
      Deferred.succeed(started, undefined).pipe(
        Effect.andThen(Effect.never),
        Effect.ensuring(Deferred.succeed(finalized, undefined))
      )
  })
  return { slow, started, finalized }
})

const bearerOf = (token: Redacted.Redacted<string>) => `Bearer ${Redacted.value(token)}`

describe("NodeMcpBridge runs", () => {
  it.live("a run's token opens sessions of its own; closing the run closes them and revokes the token", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make({ tools: [add] })
      const runScope = yield* Scope.make()
      const run = yield* bridge.openRun.pipe(Scope.provide(runScope))
      expect(Redacted.value(run.token)).not.toBe(Redacted.value(bridge.token))
      expect(run.mcpConfig.mcpServers["gtb"]!.headers.Authorization).toBe(bearerOf(run.token))

      const clientScope = yield* Scope.make()
      const client = yield* connectClient(bridge.url, bearerOf(run.token)).pipe(Scope.provide(clientScope))
      const result = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 1, b: 2 } }))
      expect(result.content).toEqual([{ type: "text", text: "3" }])
      // The bridge's own client is not the run's.
      yield* connectClient(bridge.url, bearerOf(bridge.token))
      expect(yield* run.sessionCount).toBe(1)
      expect(yield* bridge.sessionCount).toBe(2)

      yield* Scope.close(runScope, Exit.void)
      expect(yield* run.sessionCount).toBe(0)
      expect(yield* bridge.sessionCount).toBe(1)
      const after = yield* Effect.promise(() =>
        client.callTool({ name: "add", arguments: { a: 1, b: 2 } }).then(() => "answered", (e: Error) => e.message)
      )
      expect(after).not.toBe("answered")
      const fresh = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, Redacted.value(run.token)),
          body: initializeBody
        })
      )
      expect(fresh.status).toBe(401)
      yield* Scope.close(clientScope, Exit.void)
    }))

  it.live("a run's session is not reachable with another credential", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make({ tools: [add] })
      const run = yield* bridge.openRun
      const init = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, Redacted.value(run.token)),
          body: initializeBody
        })
      )
      const sessionId = init.headers["mcp-session-id"] as string
      const foreign = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, Redacted.value(bridge.token), {
            "mcp-session-id": sessionId,
            "mcp-protocol-version": "2025-06-18"
          }),
          body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })
        })
      )
      expect(foreign.status).toBe(404)
    }))

  it.live("closing a run interrupts the tool calls it started, finalizers included", () =>
    Effect.gen(function*() {
      const { finalized, slow, started } = yield* slowTool
      const bridge = yield* NodeMcpBridge.make({ tools: [slow] })
      const runScope = yield* Scope.make()
      const run = yield* bridge.openRun.pipe(Scope.provide(runScope))
      const client = yield* connectClient(bridge.url, bearerOf(run.token))
      const pending = client.callTool({ name: "slow", arguments: {} }, undefined, { timeout: 5_000 }).then(
        () => "answered",
        () => "failed"
      )
      yield* Deferred.await(started)
      yield* Scope.close(runScope, Exit.void)
      // The close waits for the interruption: the finalizer has already run.
      expect(yield* Deferred.isDone(finalized)).toBe(true)
      expect(yield* Effect.promise(() => pending)).toBe("failed")
    }))

  it.live("a run's tool calls are forked from where openRun ran (its log annotations reach the handler)", () =>
    Effect.gen(function*() {
      const runId = Tool.make("run_id", {
        description: "Reports the run annotation of the handler's fiber",
        parameters: {},
        handler: () => Effect.map(Effect.service(References.CurrentLogAnnotations), (a) => String(a["run"] ?? "none"))
      })
      const bridge = yield* NodeMcpBridge.make({ tools: [runId] })
      const run = yield* bridge.openRun.pipe(Effect.annotateLogs("run", "r-1"))
      const client = yield* connectClient(bridge.url, bearerOf(run.token))
      const result = yield* Effect.promise(() => client.callTool({ name: "run_id", arguments: {} }))
      expect(result.content).toEqual([{ type: "text", text: "r-1" }])
      // The bridge's own credential runs in the bridge's context.
      const own = yield* connectClient(bridge.url, bearerOf(bridge.token))
      const plain = yield* Effect.promise(() => own.callTool({ name: "run_id", arguments: {} }))
      expect(plain.content).toEqual([{ type: "text", text: "none" }])
    }))

  it.live("a tools/call whose HTTP connection closes before the answer interrupts its handler", () =>
    Effect.gen(function*() {
      const { finalized, slow, started } = yield* slowTool
      const bridge = yield* NodeMcpBridge.make({ tools: [slow, add] })
      const token = Redacted.value(bridge.token)
      const init = yield* Effect.promise(() =>
        rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: initializeBody })
      )
      const session = {
        "mcp-session-id": init.headers["mcp-session-id"] as string,
        "mcp-protocol-version": "2025-06-18"
      }
      yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, token, session),
          body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
        })
      )
      const req = Http.request({
        host: "127.0.0.1",
        port: bridge.port,
        method: "POST",
        path: "/mcp",
        agent: false,
        headers: mcpHeaders(bridge.port, token, session)
      })
      req.on("error", () => undefined)
      req.end(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "slow", arguments: {} } }))
      yield* Deferred.await(started)
      expect(yield* Deferred.isDone(finalized)).toBe(false)
      req.destroy()
      yield* Deferred.await(finalized).pipe(Effect.timeout("5 seconds"))
      // The session itself goes on serving.
      const next = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, token, session),
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 8,
            method: "tools/call",
            params: { name: "add", arguments: { a: 2, b: 3 } }
          })
        })
      )
      expect(next.status).toBe(200)
      expect(next.body).toContain("\"text\":\"5\"")
    }))

  it.live("past maxSessions an initialize gets a JSON-RPC error; open sessions keep working", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make({ tools: [add], maxSessions: 2 })
      const auth = bearerOf(bridge.token)
      const token = Redacted.value(bridge.token)
      const first = yield* connectClient(bridge.url, auth)
      const second = yield* Effect.promise(() =>
        rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: initializeBody })
      )
      const refused = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, Redacted.value(bridge.token)),
          body: initializeBody
        })
      )
      expect(refused.status).toBe(503)
      const error = JSON.parse(refused.body) as { error: { code: number; message: string } }
      expect(error.error.code).toBe(-32000)
      expect(error.error.message).toContain("at most 2 live sessions (maxSessions)")
      // Through the SDK client too, and nothing else is lost.
      const third = yield* Effect.exit(connectClient(bridge.url, auth))
      expect(Exit.isFailure(third)).toBe(true)
      expect(yield* bridge.sessionCount).toBe(2)
      const result = yield* Effect.promise(() => first.callTool({ name: "add", arguments: { a: 4, b: 5 } }))
      expect(result.content).toEqual([{ type: "text", text: "9" }])
      // Closing one (DELETE with its session id) makes room again.
      const deleted = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          method: "DELETE",
          headers: mcpHeaders(bridge.port, token, {
            "mcp-session-id": second.headers["mcp-session-id"] as string,
            "mcp-protocol-version": "2025-06-18"
          })
        })
      )
      expect(deleted.status).toBe(200)
      yield* connectClient(bridge.url, auth)
      expect(yield* bridge.sessionCount).toBe(2)
    }))

  it.live("an idle session expires; a busy one does not", () =>
    Effect.gen(function*() {
      const { finalized, slow, started } = yield* slowTool
      const bridge = yield* NodeMcpBridge.make({ tools: [slow, add], idleTimeout: "300 millis" })
      const auth = bearerOf(bridge.token)
      const idle = yield* connectClient(bridge.url, auth)
      const busy = yield* connectClient(bridge.url, auth)
      expect(yield* bridge.sessionCount).toBe(2)
      const pending = busy.callTool({ name: "slow", arguments: {} }, undefined, { timeout: 60_000 })
      pending.catch(() => undefined)
      yield* Deferred.await(started)
      yield* Effect.sleep("1200 millis")
      // The idle one is gone (404 for its next request); the one with a call in flight stays.
      expect(yield* bridge.sessionCount).toBe(1)
      expect(yield* Deferred.isDone(finalized)).toBe(false)
      const late = yield* Effect.promise(() =>
        idle.callTool({ name: "add", arguments: { a: 1, b: 1 } }).then(() => "answered", (e: Error) => e.message)
      )
      expect(late).toMatch(/404|Session not found/)
    }))

  it.effect("rejects a bad maxSessions or idleTimeout", () =>
    Effect.gen(function*() {
      for (const options of [{ maxSessions: 0 }, { maxSessions: 1.5 }, { idleTimeout: "0 millis" as const }]) {
        const error = yield* Effect.flip(Effect.scoped(NodeMcpBridge.make(options)))
        expect(error._tag).toBe("McpBridgeError")
        expect(error.message).toMatch(/maxSessions|idleTimeout/)
      }
    }))
})
