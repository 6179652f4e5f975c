/**
 * The MCP bridge on Node: a loopback `node:http` server running the MCP SDK's low-level `Server`
 * over its Streamable HTTP transport, one session per client.
 *
 * **Details**
 *
 * Why `node:http` + the SDK's Node `StreamableHTTPServerTransport` rather than the web-standard
 * transport mounted in an Effect `HttpServer`:
 * - the bridge has one endpoint and no routing, so `HttpServer` would add two conversions per
 *   request (Node → Effect request → web `Request`, web `Response` → Effect response → Node) on the
 *   `tools/call` hot path; the Node transport is the SDK's own, tested conversion, and the bench
 *   measures the bridge against a bare SDK server on the very same transport, so the ratio shows
 *   only what the bridge adds (checks, Effect runtime);
 * - we need the raw socket lifetime on close: `NodeHttpServer` waits forever for a client's open
 *   SSE stream, whereas here the transports are closed first and the remaining sockets are dropped;
 * - the body limit must count bytes as they stream in, before anything is parsed, which is direct
 *   on an `IncomingMessage`.
 * All resources are still Effect-managed: listener, sessions and handler fibers are acquired in a
 * `Scope` and released in the right order.
 *
 * @summary The `McpBridge` on Node: a loopback `node:http` server running the MCP SDK.
 * @group Tools
 * @since 0.1.0
 * @module
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { CallToolResult, Tool as McpTool } from "@modelcontextprotocol/sdk/types.js"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { randomBytes, randomUUID } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo, Socket } from "node:net"
import {
  discardBody,
  isAllowedHost,
  isAllowedOrigin,
  makeBearerCheck,
  readBoundedBody
} from "../internal/agentCli/loopbackGuard.ts"
import * as McpServerSdk from "../internal/agentCli/mcpServerSdk.ts"
import { guardedContent, mcpContent } from "../internal/agentCli/mediaMcp.ts"
import * as Telemetry from "../internal/chat/telemetry.ts"
import {
  BindFailed,
  defaultIdleTimeout,
  defaultMaxBodyBytes,
  defaultMaxSessions,
  defaultServerName,
  InvalidOptions,
  makeMcpConfig,
  McpBridge,
  McpBridgeError,
  type McpBridgeOptions,
  type McpBridgeRun,
  type McpBridgeService,
  ServerNamePattern
} from "../services/McpBridge.ts"
import * as Tool from "../services/Tool.ts"

/**
 * How much of a refused (413) body is read and thrown away past the limit, and for how long, so
 * the client can read its answer; past either bound the connection closes over the unread rest
 * (a client still sending then sees a reset).
 */
const drainBytes = 64 * 1024 * 1024
const drainTimeoutMs = 10_000

type RunFork = (effect: Effect.Effect<Tool.ToolResult>) => Fiber.Fiber<Tool.ToolResult>

/** Who a session serves: the bridge itself (its own token) or one run (a token of the run's). */
interface Owner {
  readonly isAuthorized: (authorization: string | undefined) => boolean
  /** Forks a tool call into the owner's fibers: the bridge's scope, or the run's. */
  readonly runFork: RunFork
  /**
   * Where the owner's tool calls find the span they are children of. A call is forked from where
   * the owner was made (the bridge's `make`, or the run's `openRun`), so by default it joins that
   * trace; a run re-points it with `withRunSpan`. One per owner: runs sharing a bridge never see
   * each other's spans.
   */
  readonly trace: Telemetry.RunSlot
  readonly sessions: Set<Session>
  /** Connections whose latest request carried the owner's token: a run's are closed with the run. */
  readonly sockets: Set<Socket>
}

interface Session {
  readonly server: Server
  readonly transport: StreamableHTTPServerTransport
  readonly owner: Owner
  /** Per `tools/call` request id: fires when its HTTP connection closes before the answer. */
  readonly dropped: Map<string | number, AbortController>
  /** POST requests being answered; a session with one in flight is not idle. */
  inflight: number
  idleTimer: NodeJS.Timeout | undefined
}

/** The served tools and their precomputed `tools/list` entries, swapped as one value. */
interface Served {
  readonly set: Tool.ToolSet
  readonly listing: ReadonlyArray<McpTool>
}

const serve = (set: Tool.ToolSet): Served => ({
  set,
  listing: set.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema }))
})

const jsonRpcError = (
  res: Http.ServerResponse,
  status: number,
  code: number,
  message: string,
  headers: Http.OutgoingHttpHeaders = {}
): void => {
  if (res.headersSent) {
    res.destroy()
    return
  }
  // Rejected requests close the connection: an unread body (possibly huge) is not drained.
  res.writeHead(status, { "content-type": "application/json", connection: "close", ...headers })
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }))
}

const containsInitialize = (sdk: McpServerSdk.McpServerSdk, body: unknown): boolean =>
  Array.isArray(body) ? body.some((m) => sdk.isInitializeRequest(m)) : sdk.isInitializeRequest(body)

/** Ids of the `tools/call` requests in a POST body (one message or a batch). */
const toolCallIds = (body: unknown): ReadonlyArray<string | number> => {
  const ids: Array<string | number> = []
  for (const m of Array.isArray(body) ? body : [body]) {
    if (typeof m !== "object" || m === null) continue
    const { id, method } = m as { readonly id?: unknown; readonly method?: unknown }
    if (method === "tools/call" && (typeof id === "string" || typeof id === "number")) ids.push(id)
  }
  return ids
}

const hookPrefix = "/hooks/"

const plainAnswer = (res: Http.ServerResponse, status: number, body: string) => {
  if (res.headersSent) return res.destroy()
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

/**
 * Answers one HTTP hook request: the body (bounded) goes to `hooks`, run in the bridge's fibers;
 * its answer is the response. A client that hangs up first interrupts it.
 */
const hookAnswerer = (
  hooks: NonNullable<McpBridgeOptions["hooks"]>,
  runFork: (effect: Effect.Effect<unknown, unknown>) => Fiber.Fiber<unknown, unknown>,
  maxBodyBytes: number
) =>
(name: string, req: Http.IncomingMessage, res: Http.ServerResponse): void => {
  void readBoundedBody(req, maxBodyBytes).then((read) => {
    if (read._tag === "Aborted") return res.destroy()
    if (read._tag === "TooLarge") return jsonRpcError(res, 413, -32000, "Payload Too Large")
    let input: unknown
    try {
      input = JSON.parse(read.bytes.toString("utf8"))
    } catch {
      return jsonRpcError(res, 400, -32700, "Parse error: Invalid JSON")
    }
    const fiber = runFork(Effect.suspend(() => hooks(name, input)))
    const onClose = () => {
      if (!res.writableFinished) fiber.interruptUnsafe()
    }
    res.once("close", onClose)
    fiber.addObserver((exit) => {
      if (Exit.isSuccess(exit)) return plainAnswer(res, 200, JSON.stringify(exit.value ?? {}))
      plainAnswer(res, 500, JSON.stringify({ error: `The ${name} hook did not answer` }))
    })
  })
}

const newToken = () => Redacted.make(randomBytes(32).toString("base64url"))

// setTimeout's largest delay (about 24.8 days); a longer idle timeout means "never" in practice.
const MaxTimerMs = 2 ** 31 - 1

const validateOptions = <R>(options: McpBridgeOptions<R>) =>
  Effect.suspend(() => {
    const serverName = options.serverName ?? defaultServerName
    const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes
    const invalid = (option: string, message: string) =>
      Effect.fail(new McpBridgeError({ reason: new InvalidOptions({ option, message }) }))
    if (!ServerNamePattern.test(serverName)) {
      return invalid("serverName", `serverName ${JSON.stringify(serverName)} must match ${ServerNamePattern.source}`)
    }
    if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0) {
      return invalid("maxBodyBytes", `maxBodyBytes must be a positive integer, got ${maxBodyBytes}`)
    }
    const implementation = options.implementation ?? { name: serverName, version: "0.1.0" }
    if (implementation.name.trim() === "" || implementation.version.trim() === "") {
      return invalid("implementation", "implementation name and version must not be empty")
    }
    const maxSessions = options.maxSessions ?? defaultMaxSessions
    if (!Number.isSafeInteger(maxSessions) || maxSessions <= 0) {
      return invalid("maxSessions", `maxSessions must be a positive integer, got ${maxSessions}`)
    }
    const idle = Duration.fromInput(options.idleTimeout ?? defaultIdleTimeout)
    if (Option.isNone(idle) || !Duration.isGreaterThan(idle.value, Duration.zero)) {
      return invalid("idleTimeout", `idleTimeout must be a positive duration, got ${String(options.idleTimeout)}`)
    }
    const idleMs = Duration.isFinite(idle.value) ? Math.min(MaxTimerMs, Duration.toMillis(idle.value)) : undefined
    return Effect.succeed({ serverName, maxBodyBytes, implementation, maxSessions, idleMs, idle: idle.value })
  })

const listen = (handler: Http.RequestListener) =>
  Effect.callback<Http.Server, McpBridgeError>((resume) => {
    const server = Http.createServer(handler)
    // Node closes a keep-alive connection idle for 5 s (+1 s grace). The claude CLI (Bun's fetch)
    // ignores the `Keep-Alive: timeout` hint and reuses a pooled socket after any gap, and a
    // request written as the close lands (or read only after a busy loop ran that timer) is reset:
    // the CLI hands the model `ECONNRESET: The socket connection was closed unexpectedly` as the
    // tool's result. Gaps of 6 s between a CLI's calls are ordinary (a slow model turn, a loaded
    // machine), so the server never closes an idle connection itself: the client does, the end of
    // the run it served does (`openRun`), and the bridge's close does.
    server.keepAliveTimeout = 0
    const onError = (error: Error) =>
      resume(
        Effect.fail(
          new McpBridgeError({
            reason: new BindFailed({
              host: "127.0.0.1",
              port: 0,
              message: `Cannot listen on 127.0.0.1: ${error.message}`
            })
          })
        )
      )
    server.once("error", onError)
    server.listen({ host: "127.0.0.1", port: 0 }, () => {
      server.off("error", onError)
      resume(Effect.succeed(server))
    })
  })

const closeHttpServer = (server: Http.Server) =>
  Effect.callback<void>((resume) => {
    server.close(() => resume(Effect.void))
    // The transports are already closed; whatever socket is left (keep-alive, a half-sent
    // response) must not hold the close up.
    server.closeAllConnections()
  })

/**
 * Starts a bridge on `127.0.0.1` with an ephemeral port and a fresh token. It stops when the scope
 * closes: sessions (and their SSE streams) first, then the listener, then in-flight handlers.
 * Fails with `McpBridgeError` (`InvalidOptions` for a bad server name, body limit, session bound
 * or idle timeout, `BindFailed`
 * when the listener cannot start) or `InvalidToolsError` for a bad initial tool set.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: <R = never>(
  options?: McpBridgeOptions<R>
) => Effect.Effect<McpBridgeService, McpBridgeError | Tool.InvalidToolsError, Scope.Scope | R> = Effect.fn(
  "McpBridge.make"
)(function*<R = never>(options: McpBridgeOptions<R> = {}) {
  const { idle, idleMs, implementation, maxBodyBytes, maxSessions, serverName } = yield* validateOptions(options)
  // Loaded here, not at import: an app that never starts a bridge never loads the SDK.
  const sdk = yield* McpServerSdk.load
  const token = newToken()

  // Read by SDK callbacks outside any fiber; replacing the reference is atomic.
  let served = serve(Tool.empty)
  let closing = false
  let port = 0
  const sessions = new Map<string, Session>()
  const live = new Set<Session>()

  const own: Owner = {
    isAuthorized: makeBearerCheck(Redacted.value(token)),
    runFork: yield* FiberSet.makeRuntime<never, Tool.ToolResult, never>(),
    trace: Telemetry.makeRunSlot(),
    sessions: new Set(),
    sockets: new Set()
  }
  // Live runs; few at a time (one per running CLI), so a linear scan of the checks is enough.
  const runs = new Set<Owner>()
  const ownerOf = (authorization: string | undefined): Owner | undefined => {
    if (own.isAuthorized(authorization)) return own
    for (const run of runs) if (run.isAuthorized(authorization)) return run
    return undefined
  }

  const socketOwners = new WeakMap<Socket, Owner>()
  /** Files `socket` under the owner of its latest request (one client process: one token). */
  const adopt = (owner: Owner, socket: Socket) => {
    const before = socketOwners.get(socket)
    if (before === owner) return
    if (before === undefined) socket.once("close", () => socketOwners.get(socket)?.sockets.delete(socket))
    else before.sockets.delete(socket)
    socketOwners.set(socket, owner)
    owner.sockets.add(socket)
  }

  const closeSessions = (all: ReadonlyArray<Session>) =>
    Effect.forEach(all, (s) => Effect.promise(() => s.server.close().catch(() => undefined)), {
      concurrency: "unbounded",
      discard: true
    }).pipe(Effect.interruptible, Effect.timeout("2 seconds"), Effect.ignore)

  const callTool = (
    session: Session,
    name: string,
    args: unknown,
    extra: { readonly requestId: string | number; readonly signal: AbortSignal }
  ): Promise<CallToolResult> => {
    const call = new Tool.ToolCall({ id: String(extra.requestId), name, arguments: args ?? {} }, {
      disableChecks: true
    })
    // Handlers run from HTTP requests, outside the chat fiber: the session's owner knows its span.
    const fiber = session.owner.runFork(session.owner.trace.apply(Tool.executeTool(served.set, call)))
    // Cancelled by the client (`notifications/cancelled`) or its HTTP connection closed early.
    const signals = [extra.signal, session.dropped.get(extra.requestId)?.signal].filter((s) => s !== undefined)
    const onAbort = () => fiber.interruptUnsafe()
    for (const signal of signals) {
      if (signal.aborted) onAbort()
      else signal.addEventListener("abort", onAbort, { once: true })
    }
    return new Promise((resolve, reject) => {
      fiber.addObserver((exit) => {
        for (const signal of signals) signal.removeEventListener("abort", onAbort)
        if (Exit.isSuccess(exit)) {
          resolve({
            content: (options.guardJsonText === true ? guardedContent : mcpContent)(exit.value),
            isError: exit.value.isError
          })
        } else {
          reject(new Error(`Tool call ${name} was cancelled`))
        }
      })
    })
  }

  const expireIfIdle = (session: Session) => {
    if (session.inflight > 0) session.idleTimer?.refresh()
    else void session.server.close().catch(() => undefined)
  }

  const openSession = (owner: Owner): Session => {
    const server = new sdk.Server(implementation, { capabilities: { tools: { listChanged: true } } })
    server.setRequestHandler(sdk.ListToolsRequestSchema, () => ({ tools: [...served.listing] }))
    server.setRequestHandler(
      sdk.CallToolRequestSchema,
      (request, extra) => callTool(session, request.params.name, request.params.arguments, extra)
    )
    const transport = new sdk.StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, session)
      }
    })
    const session: Session = { server, transport, owner, dropped: new Map(), inflight: 0, idleTimer: undefined }
    if (idleMs !== undefined) {
      session.idleTimer = setTimeout(() => expireIfIdle(session), idleMs)
      // An idle session must not keep the process alive.
      session.idleTimer.unref()
    }
    transport.onclose = () => {
      clearTimeout(session.idleTimer)
      live.delete(session)
      owner.sessions.delete(session)
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
    }
    live.add(session)
    owner.sessions.add(session)
    return session
  }

  /** Tracks a POST while it is answered: activity for the idle timer, and early closes of tool calls. */
  const track = (session: Session, res: Http.ServerResponse, body: unknown) => {
    session.inflight++
    session.idleTimer?.refresh()
    const ids = toolCallIds(body)
    const controllers = ids.map((id) => {
      const controller = new AbortController()
      session.dropped.set(id, controller)
      return [id, controller] as const
    })
    res.once("close", () => {
      session.inflight--
      session.idleTimer?.refresh()
      for (const [id, controller] of controllers) {
        // The connection closed before the answer was written: nobody is waiting for the result.
        if (!res.writableFinished) controller.abort()
        if (session.dropped.get(id) === controller) session.dropped.delete(id)
      }
    })
  }

  const handle = (
    session: Session,
    req: Http.IncomingMessage,
    res: Http.ServerResponse,
    body: unknown,
    fresh: boolean
  ) => {
    if (req.method === "POST") track(session, res, body)
    else session.idleTimer?.refresh()
    const run = fresh
      ? session.server.connect(session.transport).then(() => session.transport.handleRequest(req, res, body))
      : session.transport.handleRequest(req, res, body)
    run.then(
      () => {
        // An initialize that the transport refused never becomes a session: forget it.
        if (fresh && session.transport.sessionId === undefined) {
          live.delete(session)
          session.owner.sessions.delete(session)
          clearTimeout(session.idleTimer)
          void session.server.close().catch(() => undefined)
        }
      },
      () => jsonRpcError(res, 500, -32603, "Internal error")
    )
  }

  const route = (owner: Owner, req: Http.IncomingMessage, res: Http.ServerResponse, body: unknown) => {
    const sessionId = req.headers["mcp-session-id"]
    if (typeof sessionId === "string") {
      const session = sessions.get(sessionId)
      // Another credential's session is not found either: a run sees only its own sessions.
      if (session === undefined || session.owner !== owner) {
        return jsonRpcError(res, 404, -32001, "Session not found")
      }
      return handle(session, req, res, body, false)
    }
    if (req.method === "POST" && containsInitialize(sdk, body)) {
      if (live.size >= maxSessions) {
        return jsonRpcError(
          res,
          503,
          -32000,
          `Too many sessions: this bridge serves at most ${maxSessions} live sessions (maxSessions). ` +
            "Close a session you no longer need (DELETE with its Mcp-Session-Id) or retry after idle ones " +
            `expire (idleTimeout ${Duration.format(idle)})`,
          { "retry-after": "1" }
        )
      }
      return handle(openSession(owner), req, res, body, true)
    }
    return jsonRpcError(res, 400, -32000, "Bad Request: Mcp-Session-Id header is required")
  }

  /**
   * Answers 413 at once (a client that reads while it sends can stop), then drains the rest of the
   * body, bounded, before the connection closes: closing over unread bytes resets the connection,
   * and a client that sends everything before reading would lose the answer.
   */
  const refuseTooLarge = (req: Http.IncomingMessage, res: Http.ServerResponse, received: number) => {
    const payload = JSON.stringify({
      jsonrpc: "2.0",
      error: { code: -32000, message: `Payload Too Large: request body must not exceed ${maxBodyBytes} bytes` },
      id: null
    })
    res.writeHead(413, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(payload),
      connection: "close"
    })
    // Written but not ended: ending lets Node drop the socket while the body is still arriving.
    res.write(payload)
    void discardBody(req, {
      received,
      maxBytes: maxBodyBytes + drainBytes,
      timeoutMs: drainTimeoutMs
    }).then(() => res.end())
  }

  const answerHook = options.hooks === undefined
    ? undefined
    : hookAnswerer(options.hooks, yield* FiberSet.makeRuntime<never, unknown, unknown>(), maxBodyBytes)

  const onRequest: Http.RequestListener = (req, res) => {
    if (closing) return jsonRpcError(res, 503, -32000, "Server is shutting down")
    // Host/Origin first: a DNS-rebinding request is refused before the credential is looked at.
    if (!isAllowedHost(req.headers.host, port)) {
      return jsonRpcError(res, 403, -32000, "Forbidden: Host must be a loopback name with the bridge's port")
    }
    if (!isAllowedOrigin(req.headers.origin)) {
      return jsonRpcError(res, 403, -32000, "Forbidden: Origin must be loopback")
    }
    const owner = ownerOf(req.headers.authorization)
    if (owner === undefined) {
      return jsonRpcError(res, 401, -32001, "Unauthorized: a valid bearer token is required", {
        "www-authenticate": "Bearer"
      })
    }
    adopt(owner, req.socket)
    const path = req.url === undefined ? "" : req.url.split("?", 1)[0]!
    if (path.startsWith(hookPrefix) && req.method === "POST" && answerHook !== undefined) {
      return answerHook(decodeURIComponent(path.slice(hookPrefix.length)), req, res)
    }
    if (path !== "/mcp") return jsonRpcError(res, 404, -32000, "Not found")
    if (req.method !== "POST") return route(owner, req, res, undefined)
    readBoundedBody(req, maxBodyBytes).then((read) => {
      switch (read._tag) {
        case "Aborted":
          return res.destroy()
        case "TooLarge":
          return refuseTooLarge(req, res, read.received)
        case "Body": {
          let body: unknown
          try {
            body = JSON.parse(read.bytes.toString("utf8"))
          } catch {
            return jsonRpcError(res, 400, -32700, "Parse error: Invalid JSON")
          }
          return route(owner, req, res, body)
        }
      }
    })
  }

  const httpServer = yield* Effect.acquireRelease(listen(onRequest), closeHttpServer)
  port = (httpServer.address() as AddressInfo).port

  // Registered after the listener, so it runs before the listener's release: with a client
  // holding its GET SSE stream, closing the HTTP server first would wait for that stream forever.
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      closing = true
      const all = [...live]
      live.clear()
      sessions.clear()
      runs.clear()
      return closeSessions(all)
    })
  )

  const notifyListChanged = Effect.suspend(() =>
    Effect.forEach(
      [...live],
      (s) => Effect.ignore(Effect.tryPromise(() => s.server.sendToolListChanged())),
      { concurrency: "unbounded", discard: true }
    )
  )

  const setTools = Effect.fn("McpBridge.setTools")(function*<RT>(tools: ReadonlyArray<Tool.Tool<RT>>) {
    const set = yield* Tool.capture(tools)
    served = serve(set)
    yield* notifyListChanged
  })

  if (options.tools !== undefined) yield* setTools(options.tools)

  const url = `http://127.0.0.1:${port}/mcp`

  const openRun: Effect.Effect<McpBridgeRun, never, Scope.Scope> = Effect.gen(function*() {
    // Acquired first, so released last: after the token is revoked and the sessions are closed,
    // the run's tool calls are interrupted and awaited. Forked from here, so they carry the run's
    // fiber state (log annotations, current span, metric labels), which is how a call can be told
    // apart by run.
    const runFork = yield* FiberSet.makeRuntime<never, Tool.ToolResult, never>()
    const runToken = newToken()
    const owner: Owner = {
      isAuthorized: makeBearerCheck(Redacted.value(runToken)),
      runFork,
      trace: Telemetry.makeRunSlot(),
      sessions: new Set(),
      sockets: new Set()
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => runs.add(owner)),
      () =>
        Effect.suspend(() => {
          runs.delete(owner)
          return closeSessions([...owner.sessions]).pipe(
            // With no idle timeout on the server, the run's kept-alive connections would outlive
            // it for as long as its client does; its token is revoked, so nothing can reuse them.
            // `destroySoon` lets the answers just written (the closed SSE streams) drain first.
            Effect.andThen(Effect.sync(() => {
              for (const socket of owner.sockets) socket.destroySoon()
              owner.sockets.clear()
            }))
          )
        })
    )
    return {
      token: runToken,
      mcpConfig: makeMcpConfig({ serverName, url, token: runToken }),
      sessionCount: Effect.sync(() => owner.sessions.size),
      withRunSpan: owner.trace.within
    } satisfies McpBridgeRun
  })

  const service: McpBridgeService = {
    url,
    port,
    token,
    serverName,
    mcpConfig: makeMcpConfig({ serverName, url, token }),
    setTools,
    toolNames: Effect.sync(() => served.set.tools.map((tool) => tool.name)),
    sessionCount: Effect.sync(() => sessions.size),
    openRun
  }
  return service
})

/**
 * A layer running the bridge for the layer's lifetime; initial tools' requirements come from `R`.
 * Fails like {@link make}.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { McpBridge, NodeMcpBridge, Tool } from "effect-chat-bridge"
 *
 * const echo = Tool.make("echo", {
 *   description: "Echoes its text",
 *   parameters: { text: Schema.String },
 *   handler: ({ text }) => Effect.succeed(text)
 * })
 *
 * const program = Effect.gen(function*() {
 *   const bridge = yield* McpBridge.McpBridge
 *   // Write this to a 0600 file (SecretFile) and pass it to `claude --mcp-config`.
 *   return McpBridge.renderMcpConfig(bridge.mcpConfig)
 * }).pipe(Effect.provide(NodeMcpBridge.layer({ tools: [echo] })))
 * ```
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = <R = never>(
  options: McpBridgeOptions<R> = {}
): Layer.Layer<McpBridge, McpBridgeError | Tool.InvalidToolsError, R> => Layer.effect(McpBridge, make(options))

/**
 * Like {@link layer}, with the options read from `Config` (e.g. `Config.String("MCP_SERVER_NAME")`).
 * Tools are set afterwards with `setTools`.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerConfig = (
  config: Config.Wrap<{
    readonly serverName?: string | undefined
    readonly maxBodyBytes?: number | undefined
    readonly idleTimeout?: Duration.Input | undefined
    readonly maxSessions?: number | undefined
  }>
): Layer.Layer<McpBridge, McpBridgeError | Tool.InvalidToolsError | Config.ConfigError> =>
  Layer.unwrap(Effect.map(Config.unwrap(config), (options) => layer(options)))
