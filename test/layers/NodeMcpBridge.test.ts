import { describe, expect, it } from "@effect/vitest"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Http from "node:http"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as McpBridge from "../../src/services/McpBridge.ts"
import * as Tool from "../../src/services/Tool.ts"
import { connectClient, initializeBody, mcpHeaders, openSseStream, probePort, rawRequest } from "./mcpBridgeSupport.ts"

class Greeter extends Context.Service<Greeter, { readonly greet: (name: string) => string }>()("test/Greeter") {}

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.succeed(a + b)
})
const echo = Tool.make("echo", {
  description: "Echoes text verbatim",
  parameters: { text: Schema.String },
  handler: ({ text }) => Effect.succeed(text)
})
const info = Tool.make("info", {
  description: "Returns a JSON object",
  parameters: { id: Schema.Number },
  handler: ({ id }) => Effect.succeed({ id, tags: ["x", "y"], nested: { ok: true } })
})
const fail = Tool.make("fail", {
  description: "Always fails",
  parameters: {},
  handler: () => Effect.fail("boom")
})
const die = Tool.make("die", {
  description: "Always dies",
  parameters: {},
  handler: () => Effect.die(new Error("kaboom"))
})
const dynamicSchema = {
  type: "object",
  properties: { q: { type: "string", minLength: 1, description: "query" }, limit: { type: "integer", maximum: 10 } },
  required: ["q"],
  additionalProperties: false
} as const
const search = Tool.dynamic("search", {
  description: "A tool with a hand-written JSON Schema",
  inputSchema: dynamicSchema,
  handler: (input) => Effect.succeed({ received: input })
})
const greet = Tool.make("greet", {
  description: "Uses a service from the caller's context",
  parameters: { name: Schema.String },
  handler: ({ name }) => Effect.map(Greeter, (g) => g.greet(name))
})

const tools = [add, echo, info, fail, die, search, greet]
const provideGreeter = Effect.provideService(Greeter, { greet: (name: string) => `Hello, ${name}!` })

const textOf = (result: object): string => {
  const content = (result as { readonly content?: unknown }).content as ReadonlyArray<
    { readonly type: string; readonly text?: string }
  >
  expect(content).toHaveLength(1)
  expect(content[0]!.type).toBe("text")
  return content[0]!.text!
}

const startBridge = (options: McpBridge.McpBridgeOptions<Greeter> = {}) =>
  NodeMcpBridge.make({ tools, ...options }).pipe(provideGreeter)

const bearer = (bridge: McpBridge.McpBridgeService) => `Bearer ${Redacted.value(bridge.token)}`

describe("NodeMcpBridge", () => {
  it.live("serves each tool's JSON Schema unaltered", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      const client = yield* connectClient(bridge.url, bearer(bridge))
      const listed = yield* Effect.promise(() => client.listTools())
      expect(listed.tools.map((t) => t.name)).toEqual(tools.map((t) => t.name))
      for (const tool of tools) {
        const served = listed.tools.find((t) => t.name === tool.name)!
        expect(served.inputSchema).toEqual(tool.inputSchema)
        expect(served.description).toBe(tool.description)
      }
      expect(listed.tools.find((t) => t.name === "search")!.inputSchema).toEqual(dynamicSchema)
    }))

  it.live("exposes url, token, server name and the MCP config", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      expect(bridge.url).toBe(`http://127.0.0.1:${bridge.port}/mcp`)
      expect(bridge.serverName).toBe("gtb")
      const token = Redacted.value(bridge.token)
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(Buffer.from(token, "base64url")).toHaveLength(32)
      expect(String(bridge.token)).not.toContain(token)
      expect(bridge.mcpConfig).toEqual({
        mcpServers: {
          gtb: { type: "http", url: bridge.url, headers: { Authorization: `Bearer ${token}` }, alwaysLoad: true }
        }
      })
      expect(JSON.parse(McpBridge.renderMcpConfig(bridge.mcpConfig))).toEqual(bridge.mcpConfig)
      const other = yield* startBridge({ serverName: "tools_2" })
      expect(Object.keys(other.mcpConfig.mcpServers)).toEqual(["tools_2"])
      expect(Redacted.value(other.token)).not.toBe(token)
    }))

  it.live("calls tools: text, JSON, caller's services; failures and defects are isError and serving goes on", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      const client = yield* connectClient(bridge.url, bearer(bridge))
      const call = (name: string, args: Record<string, unknown>) =>
        Effect.promise(() => client.callTool({ name, arguments: args }))

      const sum = yield* call("add", { a: 2, b: 3 })
      expect(sum.isError).toBe(false)
      expect(JSON.parse(textOf(sum))).toBe(5)

      const echoed = yield* call("echo", { text: "plain \"text\"\n" })
      expect(textOf(echoed)).toBe("plain \"text\"\n")

      const json = yield* call("info", { id: 7 })
      expect(JSON.parse(textOf(json))).toEqual({ id: 7, tags: ["x", "y"], nested: { ok: true } })

      const dyn = yield* call("search", { q: "cats" })
      expect(JSON.parse(textOf(dyn))).toEqual({ received: { q: "cats" } })

      const greeted = yield* call("greet", { name: "Ada" })
      expect(textOf(greeted)).toBe("Hello, Ada!")

      const failed = yield* call("fail", {})
      expect(failed.isError).toBe(true)
      expect(textOf(failed)).toBe("Error: boom")

      const died = yield* call("die", {})
      expect(died.isError).toBe(true)
      expect(textOf(died)).toBe("tool handler panicked: kaboom")

      const badArgs = yield* call("add", { a: "two" })
      expect(badArgs.isError).toBe(true)
      expect(textOf(badArgs)).toContain("Invalid arguments for tool add")

      const unknown = yield* call("nope", {})
      expect(unknown.isError).toBe(true)
      expect(textOf(unknown)).toBe("Tool nope not found")

      // still serving after all of the above
      const again = yield* call("add", { a: 40, b: 2 })
      expect(JSON.parse(textOf(again))).toBe(42)
    }))

  it.live("answers 200 concurrent calls correctly", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      const client = yield* connectClient(bridge.url, bearer(bridge))
      const results = yield* Effect.promise(() =>
        Promise.all(
          Array.from({ length: 200 }, (_, i) => client.callTool({ name: "add", arguments: { a: i, b: 1000 } }))
        )
      )
      expect(results.map((r) => JSON.parse(textOf(r)))).toEqual(Array.from({ length: 200 }, (_, i) => i + 1000))
      expect(results.every((r) => r.isError === false)).toBe(true)
    }))

  it.live("interrupts the handler's fiber when the client cancels the call", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const slow = Tool.make("slow", {
        description: "Waits until cancelled",
        parameters: {},
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.andThen(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      const bridge = yield* NodeMcpBridge.make({ tools: [slow] })
      const client = yield* connectClient(bridge.url, bearer(bridge))
      const controller = new AbortController()
      const pending = client.callTool({ name: "slow", arguments: {} }, undefined, { signal: controller.signal })
      pending.catch(() => undefined)
      yield* Deferred.await(started)
      controller.abort()
      yield* Deferred.await(interrupted).pipe(Effect.timeout("5 seconds"))
      const outcome = yield* Effect.promise(() => pending.then(() => "resolved", () => "rejected"))
      expect(outcome).toBe("rejected")
    }))

  describe("request checks", () => {
    it.live("accepts a well-formed request (control case)", () =>
      Effect.gen(function*() {
        const bridge = yield* startBridge()
        const token = Redacted.value(bridge.token)
        for (const host of [`127.0.0.1:${bridge.port}`, `localhost:${bridge.port}`, `[::1]:${bridge.port}`]) {
          const res = yield* Effect.promise(() =>
            rawRequest({
              port: bridge.port,
              headers: mcpHeaders(bridge.port, token, { host, origin: `http://localhost:${bridge.port}` }),
              body: initializeBody
            })
          )
          expect(res.status).toBe(200)
          expect(res.headers["mcp-session-id"]).toBeTypeOf("string")
        }
      }))

    it.live("401 for missing, wrong and malformed credentials, never echoing the token", () =>
      Effect.gen(function*() {
        const bridge = yield* startBridge()
        const token = Redacted.value(bridge.token)
        const cases: ReadonlyArray<string | undefined> = [
          undefined,
          `Bearer ${"A".repeat(43)}`,
          `Bearer ${token}x`,
          `Bearer ${token.slice(0, -1)}`,
          `Basic ${Buffer.from(`user:${token}`).toString("base64")}`,
          `Basic ${token}`,
          "Bearer",
          "Bearer ",
          token
        ]
        for (const authorization of cases) {
          const headers = mcpHeaders(bridge.port, token)
          if (authorization === undefined) delete headers.authorization
          else headers.authorization = authorization
          const res = yield* Effect.promise(() => rawRequest({ port: bridge.port, headers, body: initializeBody }))
          expect(res.status, `authorization ${String(authorization)}`).toBe(401)
          expect(res.headers["www-authenticate"]).toMatch(/^Bearer/)
          expect(res.body).not.toContain(token)
          expect(JSON.parse(res.body).error.code).toBe(-32001)
        }
      }))

    it.live("403 for a foreign Host, another port, or a foreign Origin", () =>
      Effect.gen(function*() {
        const bridge = yield* startBridge()
        const token = Redacted.value(bridge.token)
        const otherPort = bridge.port === 65535 ? 65534 : bridge.port + 1
        const cases: ReadonlyArray<Record<string, string>> = [
          { host: `evil.example:${bridge.port}` },
          { host: `127.0.0.1:${otherPort}` },
          { host: "127.0.0.1" },
          { host: `localhost.evil.example:${bridge.port}` },
          { origin: "http://evil.example" },
          { origin: `http://evil.example:${bridge.port}` },
          { origin: "null" }
        ]
        for (const extra of cases) {
          const res = yield* Effect.promise(() =>
            rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token, extra), body: initializeBody })
          )
          expect(res.status, JSON.stringify(extra)).toBe(403)
          expect(res.body).not.toContain(token)
        }
      }))

    it.live("413 for a body over the limit, declared or streamed", () =>
      Effect.gen(function*() {
        const bridge = yield* startBridge({ maxBodyBytes: 1024 })
        const token = Redacted.value(bridge.token)
        const padded = (size: number) => {
          const base = JSON.parse(initializeBody)
          base.params.padding = ""
          const overhead = JSON.stringify(base).length
          base.params.padding = "x".repeat(size - overhead)
          return JSON.stringify(base)
        }
        const fits = yield* Effect.promise(() =>
          rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: padded(1024) })
        )
        expect(fits.status).toBe(200)

        const declared = yield* Effect.promise(() =>
          rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: padded(1025) })
        )
        expect(declared.status).toBe(413)

        const big = padded(4096)
        const chunks = Array.from({ length: 8 }, (_, i) => big.slice(i * 512, (i + 1) * 512))
        const streamed = yield* Effect.promise(() =>
          rawRequest({
            port: bridge.port,
            headers: mcpHeaders(bridge.port, token, { "transfer-encoding": "chunked" }),
            body: chunks
          })
        )
        expect(streamed.status).toBe(413)
        expect(JSON.parse(streamed.body).error.message).toContain("1024")
      }))

    it.live("malformed JSON-RPC gets a JSON-RPC error and the server keeps serving", () =>
      Effect.gen(function*() {
        const bridge = yield* startBridge()
        const token = Redacted.value(bridge.token)
        const client = yield* connectClient(bridge.url, bearer(bridge))

        const notJson = yield* Effect.promise(() =>
          rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: "{\"jsonrpc\": \"2.0\", " })
        )
        expect(notJson.status).toBe(400)
        expect(JSON.parse(notJson.body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 }, id: null })

        const init = yield* Effect.promise(() =>
          rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: initializeBody })
        )
        const sessionId = init.headers["mcp-session-id"] as string
        const notRpc = yield* Effect.promise(() =>
          rawRequest({
            port: bridge.port,
            headers: mcpHeaders(bridge.port, token, {
              "mcp-session-id": sessionId,
              "mcp-protocol-version": "2025-06-18"
            }),
            body: JSON.stringify({ hello: "world" })
          })
        )
        expect(notRpc.status).toBe(400)
        expect(JSON.parse(notRpc.body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 } })

        const noSession = yield* Effect.promise(() =>
          rawRequest({
            port: bridge.port,
            headers: mcpHeaders(bridge.port, token),
            body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })
          })
        )
        expect(noSession.status).toBe(400)
        expect(JSON.parse(noSession.body).error.code).toBe(-32000)

        const unknownSession = yield* Effect.promise(() =>
          rawRequest({
            port: bridge.port,
            headers: mcpHeaders(bridge.port, token, { "mcp-session-id": "no-such-session" }),
            body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" })
          })
        )
        expect(unknownSession.status).toBe(404)

        const wrongPath = yield* Effect.promise(() =>
          rawRequest({
            port: bridge.port,
            path: "/other",
            headers: mcpHeaders(bridge.port, token),
            body: initializeBody
          })
        )
        expect(wrongPath.status).toBe(404)

        const sum = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 1, b: 1 } }))
        expect(JSON.parse(textOf(sum))).toBe(2)
      }))
  })

  it.live("setTools replaces the set for a connected client, which hears list_changed; port and token stay", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      const { port, token, url } = bridge
      const client = yield* connectClient(bridge.url, bearer(bridge))
      yield* Effect.promise(() => client.listTools())
      let notified = 0
      let resolveChanged!: () => void
      const changed = new Promise<void>((resolve) => (resolveChanged = resolve))
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        notified++
        resolveChanged()
      })
      const mul = Tool.make("mul", {
        description: "Multiplies",
        parameters: { a: Schema.Number, b: Schema.Number },
        handler: ({ a, b }) => Effect.succeed(a * b)
      })
      // The client opens its GET SSE stream just after initializing, without telling anyone when
      // it is up; a notification sent before that is dropped, so set again until one arrives.
      yield* bridge.setTools([mul, greet]).pipe(
        provideGreeter,
        Effect.andThen(Effect.promise(() => changed).pipe(Effect.timeout("100 millis"))),
        Effect.retry({ times: 50 })
      )
      expect(notified).toBeGreaterThanOrEqual(1)

      const listed = yield* Effect.promise(() => client.listTools())
      expect(listed.tools.map((t) => t.name)).toEqual(["mul", "greet"])
      expect(listed.tools[0]!.inputSchema).toEqual(mul.inputSchema)
      const product = yield* Effect.promise(() => client.callTool({ name: "mul", arguments: { a: 6, b: 7 } }))
      expect(JSON.parse(textOf(product))).toBe(42)
      const gone = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 1, b: 2 } }))
      expect(gone.isError).toBe(true)
      expect(textOf(gone)).toBe("Tool add not found")
      expect(yield* bridge.toolNames).toEqual(["mul", "greet"])
      expect(bridge.port).toBe(port)
      expect(bridge.url).toBe(url)
      expect(bridge.token).toBe(token)

      // An invalid set is refused and changes nothing.
      const refused = yield* Effect.exit(bridge.setTools([mul, mul]))
      expect(Exit.isFailure(refused)).toBe(true)
      expect(yield* bridge.toolNames).toEqual(["mul", "greet"])
    }))

  it.effect("rejects bad options with a typed error", () =>
    Effect.gen(function*() {
      const badName = yield* Effect.flip(Effect.scoped(NodeMcpBridge.make({ serverName: "has space" })))
      expect(badName._tag).toBe("McpBridgeError")
      expect(badName.message).toContain("serverName")
      const badLimit = yield* Effect.flip(Effect.scoped(NodeMcpBridge.make({ maxBodyBytes: 0 })))
      expect(badLimit._tag).toBe("McpBridgeError")
      const badTools = yield* Effect.flip(Effect.scoped(NodeMcpBridge.make({ tools: [add, add] })))
      expect(badTools._tag).toBe("InvalidToolsError")
    }))

  it.live("scope close with open SSE streams is quick, refuses connections afterwards, and is idempotent", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const bridge = yield* startBridge().pipe(Scope.provide(scope))
      const token = Redacted.value(bridge.token)
      const client = yield* connectClient(bridge.url, bearer(bridge)).pipe(Scope.provide(scope))
      yield* Effect.promise(() => client.listTools())
      const init = yield* Effect.promise(() =>
        rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: initializeBody })
      )
      const sse = yield* Effect.promise(() =>
        openSseStream(bridge.port, token, init.headers["mcp-session-id"] as string)
      )
      expect(sse.status).toBe(200)
      expect(yield* bridge.sessionCount).toBe(2)

      const started = performance.now()
      yield* Scope.close(scope, Exit.void)
      const elapsed = performance.now() - started
      expect(elapsed).toBeLessThan(5000)
      yield* Effect.promise(() => sse.ended)
      expect(yield* Effect.promise(() => probePort(bridge.port))).toBe("ECONNREFUSED")
      // closing again is a no-op
      yield* Scope.close(scope, Exit.void)
      expect(yield* Effect.promise(() => probePort(bridge.port))).toBe("ECONNREFUSED")
    }))

  it.live("layerConfig reads the options from Config", () =>
    Effect.gen(function*() {
      const bridge = yield* McpBridge.McpBridge
      expect(bridge.serverName).toBe("from_config")
      expect(Object.keys(bridge.mcpConfig.mcpServers)).toEqual(["from_config"])
      const res = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, Redacted.value(bridge.token)),
          body: JSON.stringify({ padding: "x".repeat(200) })
        })
      )
      expect(res.status).toBe(413)
    }).pipe(
      Effect.provide(
        NodeMcpBridge.layerConfig({
          serverName: Config.String("BRIDGE_SERVER_NAME"),
          maxBodyBytes: Config.Int("BRIDGE_MAX_BODY_BYTES"),
          idleTimeout: Config.Duration("BRIDGE_IDLE_TIMEOUT"),
          maxSessions: Config.Int("BRIDGE_MAX_SESSIONS")
        }).pipe(
          Layer.provide(
            ConfigProvider.layer(
              ConfigProvider.fromUnknown({
                BRIDGE_SERVER_NAME: "from_config",
                BRIDGE_MAX_BODY_BYTES: "100",
                BRIDGE_IDLE_TIMEOUT: "5 minutes",
                BRIDGE_MAX_SESSIONS: "3"
              })
            )
          )
        )
      )
    ))

  it.live("the layer stops the server when its scope closes", () =>
    Effect.gen(function*() {
      const port = yield* Effect.scoped(
        Effect.gen(function*() {
          const bridge = yield* McpBridge.McpBridge
          expect(yield* Effect.promise(() => probePort(bridge.port))).toBe("connected")
          return bridge.port
        }).pipe(Effect.provide(NodeMcpBridge.layer({ serverName: "layered" })))
      )
      expect(yield* Effect.promise(() => probePort(port))).toBe("ECONNREFUSED")
    }))
})

describe("NodeMcpBridge: more edges", () => {
  it.effect("an implementation with an empty name or version is rejected", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.scoped(NodeMcpBridge.make({ implementation: { name: " ", version: "1.0.0" } }))
      )
      expect(error).toMatchObject({
        _tag: "McpBridgeError",
        reason: { _tag: "InvalidOptions", option: "implementation" }
      })
      expect(error.message).toContain("must not be empty")
    }))

  it.live("a call without arguments runs the tool with {} (a tool without parameters succeeds)", () =>
    Effect.gen(function*() {
      const ping = Tool.make("ping", {
        description: "No parameters",
        parameters: {},
        handler: () => Effect.succeed("pong")
      })
      const bridge = yield* NodeMcpBridge.make({ tools: [ping, add] })
      const client = yield* connectClient(bridge.url, bearer(bridge))
      const result = yield* Effect.promise(() => client.callTool({ name: "ping" }))
      expect(textOf(result)).toBe("pong")
      expect(result.isError).toBeFalsy()
      // A tool that has parameters reports the missing ones, as an error result.
      const missing = yield* Effect.promise(() => client.callTool({ name: "add" }))
      expect(missing.isError).toBe(true)
      expect(textOf(missing)).toContain("Invalid arguments for tool add")
    }))

  it.live("an initialize request sent as a one-element batch opens a session", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      const token = Redacted.value(bridge.token)
      const init = yield* Effect.promise(() =>
        rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: `[${initializeBody}]` })
      )
      expect(init.status).toBe(200)
      expect(typeof init.headers["mcp-session-id"]).toBe("string")
    }))

  it.live("an initialize the transport refuses (no event-stream in Accept) opens no session", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      const token = Redacted.value(bridge.token)
      const refused = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, token, { accept: "application/json" }),
          body: initializeBody
        })
      )
      expect(refused.status).toBe(406)
      expect(refused.headers["mcp-session-id"]).toBeUndefined()
      expect(yield* bridge.sessionCount).toBe(0)
      const init = yield* Effect.promise(() =>
        rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: initializeBody })
      )
      expect(init.status).toBe(200)
      expect(yield* bridge.sessionCount).toBe(1)
    }))

  it.live("a request whose body is cut off mid-stream is dropped; the bridge keeps serving", () =>
    Effect.gen(function*() {
      const bridge = yield* startBridge()
      const token = Redacted.value(bridge.token)
      const dropped = yield* Effect.callback<string>((resume) => {
        const req = Http.request({
          host: "127.0.0.1",
          port: bridge.port,
          method: "POST",
          path: "/mcp",
          agent: false,
          headers: mcpHeaders(bridge.port, token, { "content-length": String(initializeBody.length) })
        })
        req.on("response", (res) => resume(Effect.succeed(`answered ${res.statusCode}`)))
        req.on("close", () => resume(Effect.succeed("closed")))
        req.on("error", () => undefined)
        req.write(initializeBody.slice(0, 20), () => setTimeout(() => req.destroy(), 100))
      })
      expect(dropped).toBe("closed")
      expect(yield* bridge.sessionCount).toBe(0)
      const client = yield* connectClient(bridge.url, bearer(bridge))
      const sum = yield* Effect.promise(() => client.callTool({ name: "add", arguments: { a: 1, b: 1 } }))
      expect(JSON.parse(textOf(sum))).toBe(2)
    }))
})
