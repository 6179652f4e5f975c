import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Net from "node:net"
import * as NodeMcpBridge from "../../src/layers/NodeMcpBridge.ts"
import * as McpBridge from "../../src/services/McpBridge.ts"
import { initializeBody, mcpHeaders, rawRequest } from "./mcpBridgeSupport.ts"

// An oversized body must get a 413 the client can read, not a reset: the bridge answers and then
// drains what the client is still sending before it closes the connection.
const MiB = 1024 * 1024
const oversized = 12 * MiB
const payload = Buffer.alloc(oversized, "x").toString("latin1")
const chunks = Array.from({ length: 12 }, () => "x".repeat(MiB))

/**
 * Sends the whole request, then reads the answer: what curl, Python's `http.client` and most
 * synchronous clients do. Resolves with the status line, or the socket error's code.
 */
const sendThenRead = (port: number, token: string, framing: "content-length" | "chunked") =>
  new Promise<string>((resolve) => {
    const socket = Net.connect({ host: "127.0.0.1", port })
    let answer = ""
    socket.on("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"))
    socket.pause()
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\n` +
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
        (framing === "chunked" ? "Transfer-Encoding: chunked\r\n\r\n" : `Content-Length: ${oversized}\r\n\r\n`)
    )
    for (const chunk of chunks) {
      socket.write(framing === "chunked" ? `${MiB.toString(16)}\r\n${chunk}\r\n` : chunk)
    }
    socket.write(framing === "chunked" ? "0\r\n\r\n" : "", () => {
      socket.on("data", (d: Buffer) => answer += d.toString("latin1"))
      socket.on("end", () => resolve(answer.split("\r\n", 1)[0]!))
      socket.resume()
    })
  })

const expectReadable413 = (status: number, body: string) => {
  expect(status).toBe(413)
  const parsed = JSON.parse(body) as { readonly error: { readonly message: string } }
  expect(parsed.error.message).toContain(`${McpBridge.defaultMaxBodyBytes} bytes`)
}

describe("NodeMcpBridge body limit", () => {
  it.live("a 12 MiB POST with Content-Length gets a readable 413 (node:http)", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make()
      const token = Redacted.value(bridge.token)
      const res = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, token, { "content-length": String(oversized) }),
          body: payload
        })
      )
      expectReadable413(res.status, res.body)
      expect(res.headers.connection).toBe("close")
    }))

  it.live("a 12 MiB chunked POST gets a readable 413 (node:http)", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make()
      const token = Redacted.value(bridge.token)
      const res = yield* Effect.promise(() =>
        rawRequest({
          port: bridge.port,
          headers: mcpHeaders(bridge.port, token, { "transfer-encoding": "chunked" }),
          body: chunks
        })
      )
      expectReadable413(res.status, res.body)
    }))

  it.live("fetch reads the 413 for a 12 MiB body, with a length and streamed", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make()
      const headers = {
        authorization: `Bearer ${Redacted.value(bridge.token)}`,
        accept: "application/json, text/event-stream",
        "content-type": "application/json"
      }
      const declared = yield* Effect.promise(async () => {
        const res = await fetch(bridge.url, { method: "POST", headers, body: payload })
        return { status: res.status, body: await res.text() }
      })
      expectReadable413(declared.status, declared.body)

      const streamed = yield* Effect.promise(async () => {
        const encoder = new TextEncoder()
        let sent = 0
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent === chunks.length) return controller.close()
            controller.enqueue(encoder.encode(chunks[sent++]))
          }
        })
        const res = await fetch(bridge.url, { method: "POST", headers, body, duplex: "half" } as RequestInit)
        return { status: res.status, body: await res.text() }
      })
      expectReadable413(streamed.status, streamed.body)
    }))

  it.live("a client that sends all 12 MiB before reading still reads the 413", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make()
      const token = Redacted.value(bridge.token)
      expect(yield* Effect.promise(() => sendThenRead(bridge.port, token, "content-length"))).toBe(
        "HTTP/1.1 413 Payload Too Large"
      )
      expect(yield* Effect.promise(() => sendThenRead(bridge.port, token, "chunked"))).toBe(
        "HTTP/1.1 413 Payload Too Large"
      )
    }))

  it.live("a declared body beyond what the bridge drains gets its 413 and the connection closes", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make({ maxBodyBytes: 1024 })
      const token = Redacted.value(bridge.token)
      // Only the headers are sent: the bridge must neither wait for 1 GiB nor keep the socket.
      const answer = yield* Effect.promise(() =>
        new Promise<string>((resolve) => {
          const socket = Net.connect({ host: "127.0.0.1", port: bridge.port })
          let text = ""
          socket.on("data", (d: Buffer) => text += d.toString("latin1"))
          socket.on("close", () => resolve(text))
          socket.write(
            `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${bridge.port}\r\nAuthorization: Bearer ${token}\r\n` +
              `Content-Type: application/json\r\nContent-Length: ${1024 ** 3}\r\n\r\n`
          )
        })
      )
      expect(answer.split("\r\n", 1)[0]).toBe("HTTP/1.1 413 Payload Too Large")
      expect(answer).toContain("must not exceed 1024 bytes")
    }))

  it.live("the bridge keeps serving after refusing oversized bodies", () =>
    Effect.gen(function*() {
      const bridge = yield* NodeMcpBridge.make()
      const token = Redacted.value(bridge.token)
      const refused = yield* Effect.promise(() =>
        rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: payload })
      )
      expect(refused.status).toBe(413)
      const ok = yield* Effect.promise(() =>
        rawRequest({ port: bridge.port, headers: mcpHeaders(bridge.port, token), body: initializeBody })
      )
      expect(ok.status).toBe(200)
    }))
})
