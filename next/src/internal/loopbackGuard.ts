/**
 * Request checks for the loopback MCP bridge, applied before the MCP transport sees a request.
 * Plain synchronous functions on purpose: they run on every request of a hot path, outside any
 * fiber (inside a `node:http` callback).
 *
 * @internal
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
  | { readonly _tag: "TooLarge" }
  | { readonly _tag: "Aborted" }

/**
 * Reads a request body of at most `limit` bytes. A declared `Content-Length` over the limit is
 * refused before anything is read; otherwise bytes are counted as they stream in (chunked bodies
 * declare no length) and reading stops as soon as the limit is passed.
 */
export const readBoundedBody = (req: IncomingMessage, limit: number): Promise<BodyRead> => {
  const declared = req.headers["content-length"]
  if (declared !== undefined && Number(declared) > limit) return Promise.resolve({ _tag: "TooLarge" })
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
        // Stop buffering; the caller answers 413 and closes the connection.
        req.pause()
        settle({ _tag: "TooLarge" })
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
