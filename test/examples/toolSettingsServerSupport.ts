/**
 * Starts examples/tool-settings-server.ts in this process on a temp SQLite file, and a small
 * HTTP client for it (node:http, so tests can also send the headers a browser would not).
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as NetAddress from "effect/net/NetAddress"
import * as Scope from "effect/Scope"
import * as http from "node:http"
import * as ToolSettingsServer from "../../examples/tool-settings-server.ts"

/** A running server; `close` stops it and closes the database. */
export interface RunningServer {
  readonly url: string
  readonly port: number
  readonly close: () => Promise<void>
}

/** The session's conditions in tests: fixed, so the flags do not depend on where tests run. */
export const conditions = { "workspace-has-git": false }

/**
 * The session most tests describe: the application answers permission prompts, so nothing is
 * withheld and the switches alone decide the flags. `{}` is the server's default (a plain
 * `ClaudeLocal` run), where Bash, Edit and Write are withheld.
 */
export const answeringSession: ToolSettingsServer.Session = { canUseTool: true }

export const startServer = async (
  filename: string,
  port = 0,
  session: ToolSettingsServer.Session = answeringSession
): Promise<RunningServer> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const context = await Effect.runPromise(
      Layer.buildWithScope(ToolSettingsServer.layer({ filename, port, conditions, session }), scope)
    )
    const address = Effect.runSync(Effect.provide(Effect.map(HttpServer.HttpServer, (s) => s.address), context))
    if (!NetAddress.isInetAddress(address)) throw new Error("expected a TCP address")
    return {
      url: `http://127.0.0.1:${address.port}`,
      port: address.port,
      close: () => Effect.runPromise(Scope.close(scope, Exit.void))
    }
  } catch (error) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  }
}

/** A response: its status, content type and body (parsed when JSON). */
export interface Reply {
  readonly status: number
  readonly contentType: string
  /** The `Connection` header: `close` when the server ends the connection after this answer. */
  readonly connection: string | undefined
  readonly text: string
  readonly json: unknown
  /** With `chunks`: how many were not sent because the answer came first. */
  readonly unsent: number
}

/**
 * Sends a request: `body` in one piece with a Content-Length, or `chunks` with chunked encoding,
 * one after the other and no more once the answer has begun (as a client does that reads while
 * it uploads). A failed write after the answer came (the server closed) is not an error.
 */
export const request = (
  url: string,
  method: string,
  path: string,
  options: {
    readonly body?: string
    readonly chunks?: ReadonlyArray<string>
    readonly headers?: Record<string, string>
  } = {}
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    let answered = false
    let next = 0
    const chunks = options.chunks ?? []
    const headers = { ...options.headers, ...(options.chunks === undefined ? {} : { "transfer-encoding": "chunked" }) }
    const req = http.request(new URL(path, url), { method, headers }, (res) => {
      answered = true
      let text = ""
      res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk))
      res.on("error", reject)
      res.on("end", () => {
        const contentType = res.headers["content-type"] ?? ""
        resolve({
          status: res.statusCode ?? 0,
          contentType,
          connection: res.headers.connection,
          text,
          json: contentType.startsWith("application/json") ? JSON.parse(text) : undefined,
          unsent: chunks.length - next
        })
      })
    })
    req.on("error", (error) => {
      if (!answered) reject(error)
    })
    if (options.chunks === undefined) return void req.end(options.body)
    const write = () => {
      if (answered) return
      if (next === chunks.length) return void req.end()
      // Each chunk once the previous one is flushed, so the server sees the body arrive in pieces.
      req.write(chunks[next++]!, () => setImmediate(write))
    }
    write()
  })

/** A JSON request as the page sends it. */
export const send = (url: string, method: string, path: string, body?: unknown) =>
  request(url, method, path, {
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } })
  })
