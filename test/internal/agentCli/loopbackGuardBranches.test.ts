import { describe, expect, it } from "@effect/vitest"
import type { IncomingMessage } from "node:http"
import { PassThrough } from "node:stream"
import { discardBody, readBoundedBody } from "../../../src/internal/agentCli/loopbackGuard.ts"

/** A request body as a stream with the two `IncomingMessage` fields the guard reads. */
const request = (headers: Record<string, string> = {}) => {
  const stream = Object.assign(new PassThrough(), { headers, complete: false })
  const end = () => {
    stream.complete = true
    stream.end()
  }
  return { stream, req: stream as unknown as IncomingMessage, end }
}

describe("readBoundedBody", () => {
  it("refuses a declared length over the limit without reading", async () => {
    const { req, stream } = request({ "content-length": "11" })
    stream.write("x")
    expect(await readBoundedBody(req, 10)).toEqual({ _tag: "TooLarge", received: 0 })
    expect(stream.listenerCount("data")).toBe(0)
  })

  it("returns one chunk as is and several chunks joined", async () => {
    const one = request({ "content-length": "5" })
    const first = readBoundedBody(one.req, 10)
    one.stream.write("hello")
    one.end()
    const read = await first
    expect(read._tag === "Body" && read.bytes.toString()).toBe("hello")

    const several = request()
    const second = readBoundedBody(several.req, 10)
    several.stream.write("ab")
    several.stream.write("cd")
    several.stream.write("ef")
    several.end()
    const joined = await second
    expect(joined._tag === "Body" && joined.bytes.toString()).toBe("abcdef")
  })

  it("stops at the first chunk past the limit of a body with no declared length", async () => {
    const { end, req, stream } = request()
    const read = readBoundedBody(req, 4)
    stream.write("abc")
    stream.write("def")
    expect(await read).toEqual({ _tag: "TooLarge", received: 6 })
    expect(stream.listenerCount("data")).toBe(0)
    end()
  })

  it("reports an aborted body when the request errors or closes before its end", async () => {
    const errored = request()
    const first = readBoundedBody(errored.req, 10)
    errored.stream.write("ab")
    errored.stream.destroy(new Error("socket hang up"))
    expect(await first).toEqual({ _tag: "Aborted" })

    const closed = request()
    const second = readBoundedBody(closed.req, 10)
    closed.stream.emit("close")
    expect(await second).toEqual({ _tag: "Aborted" })
  })

  it("a close after the complete body keeps the body", async () => {
    const { req, stream } = request()
    const read = readBoundedBody(req, 10)
    stream.write("ok")
    stream.complete = true
    stream.emit("close")
    stream.end()
    const body = await read
    expect(body._tag === "Body" && body.bytes.toString()).toBe("ok")
  })
})

describe("discardBody", () => {
  const bounds = { received: 0, maxBytes: 8, timeoutMs: 10_000 }

  it("gives up at once on a declared length over the bound, and succeeds at once on a read body", async () => {
    expect(await discardBody(request({ "content-length": "9" }).req, bounds)).toBe(false)
    const done = request()
    done.stream.complete = true
    expect(await discardBody(done.req, bounds)).toBe(true)
  })

  it("drains the rest of a body within the bound", async () => {
    const { end, req, stream } = request()
    const drained = discardBody(req, { ...bounds, received: 4 })
    stream.write("abcd")
    end()
    expect(await drained).toBe(true)
    expect(stream.listenerCount("data")).toBe(0)
  })

  it("stops draining once the bytes already read and the rest pass the bound", async () => {
    const { req, stream } = request()
    const drained = discardBody(req, { ...bounds, received: 6 })
    stream.write("abc")
    expect(await drained).toBe(false)
    expect(stream.isPaused()).toBe(true)
  })

  it("stops draining after the timeout", async () => {
    const { req, stream } = request()
    expect(await discardBody(req, { ...bounds, timeoutMs: 1 })).toBe(false)
    expect(stream.isPaused()).toBe(true)
  })

  it("a connection that goes counts as drained only if the body was complete", async () => {
    const gone = request()
    const first = discardBody(gone.req, bounds)
    gone.stream.emit("close")
    expect(await first).toBe(false)

    const completed = request()
    const second = discardBody(completed.req, bounds)
    completed.stream.complete = true
    completed.stream.emit("error", new Error("late reset"))
    expect(await second).toBe(true)
  })
})
