/**
 * Request checks for the loopback MCP bridge, applied before the MCP transport sees a request.
 * Plain synchronous functions on purpose: they run on every request of a hot path, outside any
 * fiber (inside a `node:http` callback).
 */
import { createHash, timingSafeEqual } from "node:crypto"
import type { IncomingMessage } from "node:http"

const loopbackHostnames = new Set(["127.0.0.1", "localhost", "[::1]"])

/**
 * DNS-rebinding protection: the `Host` header must name a loopback host *and* the bound port. A
 * rebound name (`evil.example:<port>`) or another local port (`127.0.0.1:<other>`) is refused.
 */
export const isAllowedHost = (host: string | undefined, port: number): boolean => {
  if (host === undefined) return false
  const colon = host.lastIndexOf(":")
  // `[::1]` alone has colons but no port: the port must be present and after the closing bracket.
  if (colon < 0 || colon < host.lastIndexOf("]")) return false
  const name = host.slice(0, colon).toLowerCase()
  const portText = host.slice(colon + 1)
  return loopbackHostnames.has(name) && /^[0-9]{1,5}$/.test(portText) && Number(portText) === port
}

/** Browsers send `Origin` on cross-site requests; only loopback pages may talk to the bridge. */
export const isAllowedOrigin = (origin: string | undefined): boolean => {
  if (origin === undefined) return true
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    // Includes the opaque origin "null" (sandboxed frames, file:// pages).
    return false
  }
  return (url.protocol === "http:" || url.protocol === "https:") && loopbackHostnames.has(url.hostname.toLowerCase())
}

const digest = (value: string): Buffer => createHash("sha256").update(value, "utf8").digest()

/**
 * Makes a constant-time bearer check. Both sides are hashed first so `timingSafeEqual` always
 * compares equal-length buffers and the token's length does not leak through an early exit.
 */
export const makeBearerCheck = (token: string): (authorization: string | undefined) => boolean => {
  const expected = digest(token)
  return (authorization) => {
    if (authorization === undefined) return false
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization)
    const presented = match?.[1]
    if (presented === undefined) return false
    return timingSafeEqual(digest(presented), expected)
  }
}

/** Outcome of reading a bounded request body. */
export type BodyRead =
  | { readonly _tag: "Body"; readonly bytes: Buffer }
  | { readonly _tag: "TooLarge"; readonly received: number }
  | { readonly _tag: "Aborted" }

/**
 * Reads a request body of at most `limit` bytes. A declared `Content-Length` over the limit is
 * refused before anything is read; otherwise bytes are counted as they stream in (chunked bodies
 * declare no length) and reading stops as soon as the limit is passed.
 */
export const readBoundedBody = (req: IncomingMessage, limit: number): Promise<BodyRead> => {
  const declared = req.headers["content-length"]
  if (declared !== undefined && Number(declared) > limit) return Promise.resolve({ _tag: "TooLarge", received: 0 })
  return new Promise((resolve) => {
    const chunks: Array<Buffer> = []
    let received = 0
    let settled = false
    const settle = (result: BodyRead) => {
      if (settled) return
      settled = true
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onAbort)
      req.off("close", onClose)
      resolve(result)
    }
    const onData = (chunk: Buffer) => {
      received += chunk.length
      if (received > limit) {
        // Stop buffering; the caller answers 413 and discards the rest (`discardBody`).
        req.pause()
        settle({ _tag: "TooLarge", received })
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () =>
      settle({ _tag: "Body", bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received) })
    const onAbort = () => settle({ _tag: "Aborted" })
    const onClose = () => {
      if (!req.complete) settle({ _tag: "Aborted" })
    }
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("error", onAbort)
    req.on("close", onClose)
  })
}

/** How much of a refused body the bridge reads and throws away so that its client can read the 413. */
export interface DiscardBounds {
  /** Bytes of the body already read before it was refused. */
  readonly received: number
  /** At most this many bytes of body in all, declared or streamed. */
  readonly maxBytes: number
  /** At most this long. */
  readonly timeoutMs: number
}

/**
 * Reads and discards the rest of a refused request's body. Closing a socket with unread bytes in
 * its receive buffer makes the kernel send a reset, so a client that sends its whole body before it
 * reads (curl, Python's `http.client`, most synchronous clients) would see `EPIPE`/`ECONNRESET`
 * instead of the 413 already written to it. Resolves `true` when the body ended within the bounds,
 * `false` when the bounds were passed or the connection went first.
 */
export const discardBody = (req: IncomingMessage, bounds: DiscardBounds): Promise<boolean> => {
  const declared = req.headers["content-length"]
  if (declared !== undefined && Number(declared) > bounds.maxBytes) return Promise.resolve(false)
  if (req.complete) return Promise.resolve(true)
  return new Promise((resolve) => {
    let received = bounds.received
    const settle = (drained: boolean) => {
      clearTimeout(timer)
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onGone)
      req.off("close", onGone)
      if (!drained) req.pause()
      resolve(drained)
    }
    const onData = (chunk: Buffer) => {
      received += chunk.length
      if (received > bounds.maxBytes) settle(false)
    }
    const onEnd = () => settle(true)
    const onGone = () => settle(req.complete)
    const timer = setTimeout(() => settle(false), bounds.timeoutMs)
    timer.unref()
    req.on("data", onData)
    req.on("end", onEnd)
    req.on("error", onGone)
    req.on("close", onGone)
    req.resume()
  })
}
