/**
 * The plumbing the fake vendor APIs share: an HTTP server on 127.0.0.1:0 that records every
 * request with its JSON body, answers scripted HTTP errors and delays, notes streamed answers the
 * client abandoned, and stops when the scope closes. Each fake adds only its routes and wire format.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface Recorded<B> {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: B
}

/** A scripted HTTP error instead of a model answer. */
export interface ErrorReply {
  readonly status: number
  readonly body?: unknown
  readonly headers?: Record<string, string>
}

export interface FakeServer<B> {
  readonly url: string
  readonly port: number
  readonly requests: Array<Recorded<B>>
  /** Indexes (in `requests`) of streamed answers whose connection the client closed before the end. */
  readonly abandoned: Array<number>
}

/** What a fake's handler gets besides the request. */
export interface Exchange<B> {
  readonly request: Recorded<B>
  readonly res: ServerResponse
  /** Call before streaming: records the request in `abandoned` if the client leaves early. */
  readonly watchAbandon: () => void
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify(body))
}

/** Waits `delayMs` if the reply asks for it, then answers a scripted error; true when it did. */
export const answeredError = async (
  res: ServerResponse,
  reply: ErrorReply | { readonly delayMs?: number | undefined },
  defaultBody: (status: number) => unknown
): Promise<boolean> => {
  if ("delayMs" in reply && reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs))
  if (!("status" in reply)) return false
  sendJson(res, reply.status, reply.body ?? defaultBody(reply.status), reply.headers)
  return true
}

/** Starts the server; `handle` answers every request (after it has been recorded). */
export const serve = <B extends object>(
  handle: (exchange: Exchange<B>) => Promise<void> | void
): Effect.Effect<FakeServer<B>, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ server: FakeServer<B>; close: () => Promise<void> }>((resume) => {
      const requests: Array<Recorded<B>> = []
      const abandoned: Array<number> = []
      const server = createServer((req, res) => {
        void (async () => {
          const raw = await readBody(req)
          let body = {} as B
          try {
            if (raw !== "") body = JSON.parse(raw) as B
          } catch {
            // Kept as {}: a test may send a malformed body on purpose.
          }
          const request: Recorded<B> = { method: req.method ?? "GET", path: req.url ?? "/", headers: req.headers, body }
          const index = requests.push(request) - 1
          const watchAbandon = () =>
            res.on("close", () => {
              if (!res.writableFinished) abandoned.push(index)
            })
          await handle({ request, res, watchAbandon })
        })().catch((e: unknown) => {
          res.writeHead(500)
          res.end(String(e))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as AddressInfo).port
        resume(Effect.succeed({
          server: { url: `http://127.0.0.1:${port}`, port, requests, abandoned },
          close: () =>
            new Promise<void>((resolve) => {
              server.closeAllConnections()
              server.close(() => resolve())
            })
        }))
      })
    }),
    ({ close }) => Effect.promise(close)
  ).pipe(Effect.map(({ server }) => server))
