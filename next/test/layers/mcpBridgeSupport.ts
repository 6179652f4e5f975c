/** Test helpers for the MCP bridge: the SDK's own client, and raw HTTP for header-level cases. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as Effect from "effect/Effect"
import * as Http from "node:http"
import * as Net from "node:net"

/** Connects the SDK client with the given bearer token; closed with the scope. */
export const connectClient = (url: string, authorization: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "bridge-test", version: "0.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: authorization } }
      })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close().catch(() => undefined))
  )

export interface RawResponse {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** One HTTP request with full control over headers (including `Host`). */
export const rawRequest = (options: {
  readonly port: number
  readonly method?: string
  readonly path?: string
  readonly headers?: Http.OutgoingHttpHeaders
  readonly body?: string | ReadonlyArray<string>
}): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    const req = Http.request(
      {
        host: "127.0.0.1",
        port: options.port,
        method: options.method ?? "POST",
        path: options.path ?? "/mcp",
        headers: options.headers ?? {},
        agent: false
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }))
        res.on("error", reject)
      }
    )
    // The server may answer (413) and close before a large body is fully written.
    req.on("error", reject)
    const body = options.body
    if (typeof body === "string") {
      req.end(body)
    } else if (body !== undefined) {
      for (const chunk of body) {
        req.write(chunk)
      }
      req.end()
    } else req.end()
  })

export const initializeBody = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } }
})

/** Headers of a well-formed MCP POST; override to break one thing at a time. */
export const mcpHeaders = (
  port: number,
  token: string,
  extra: Http.OutgoingHttpHeaders = {}
): Http.OutgoingHttpHeaders => ({
  host: `127.0.0.1:${port}`,
  authorization: `Bearer ${token}`,
  accept: "application/json, text/event-stream",
  "content-type": "application/json",
  ...extra
})

/** Opens a raw GET SSE stream on a session and keeps it open; resolves once the headers arrived. */
export const openSseStream = (port: number, token: string, sessionId: string) =>
  new Promise<{ readonly status: number; readonly ended: Promise<void> }>((resolve, reject) => {
    const req = Http.request({
      host: "127.0.0.1",
      port,
      method: "GET",
      path: "/mcp",
      agent: false,
      headers: {
        host: `127.0.0.1:${port}`,
        authorization: `Bearer ${token}`,
        accept: "text/event-stream",
        "mcp-session-id": sessionId,
        "mcp-protocol-version": "2025-06-18"
      }
    }, (res) => {
      const ended = new Promise<void>((done) => {
        res.on("end", () => done())
        res.on("close", () => done())
        res.on("error", () => done())
      })
      res.resume()
      resolve({ status: res.statusCode ?? 0, ended })
    })
    req.on("error", reject)
    req.end()
  })

/** Resolves with the connection error code, or "connected" if something still listens. */
export const probePort = (port: number) =>
  new Promise<string>((resolve) => {
    const socket = Net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resolve("connected")
    })
    socket.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"))
  })
