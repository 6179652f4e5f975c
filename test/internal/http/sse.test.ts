import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import * as Sse from "../../../src/internal/http/sse.ts"

const bytes = (...pieces: ReadonlyArray<string | Uint8Array>) =>
  Stream.fromIterable(pieces.map((p) => (typeof p === "string" ? new TextEncoder().encode(p) : p)))

const decodeAll = (stream: Stream.Stream<Uint8Array>, maxEventSize?: number) =>
  Sse.decode(stream, (e) => ({ tooLarge: e.message }), { maxEventSize }).pipe(
    Stream.map(({ data, event }) => ({ event, data })),
    Stream.runCollect
  )

describe("sse.decode", () => {
  it.effect("splits events across arbitrary chunk boundaries, including inside a UTF-8 character", () =>
    Effect.gen(function*() {
      const whole = new TextEncoder().encode("event: a\ndata: {\"t\":\"🌍é\"}\n\ndata: second\n\n")
      // One byte at a time: every boundary, the middle of the 4-byte emoji included.
      const events = yield* decodeAll(Stream.fromIterable([...whole].map((b) => Uint8Array.of(b))))
      expect(events).toEqual([{ event: "a", data: "{\"t\":\"🌍é\"}" }, { event: "message", data: "second" }])
    }))

  it.effect("CRLF and CR line ends, comments, multi-line data, BOM; an unterminated last event is dropped", () =>
    Effect.gen(function*() {
      const events = yield* decodeAll(
        bytes(
          "\uFEFF: keep-alive\r\n",
          "data: line 1\r\ndata: line 2\r\n\r\n",
          "event: ping\rdata: x\r\r",
          "data: cut off"
        )
      )
      expect(events).toEqual([{ event: "message", data: "line 1\nline 2" }, { event: "ping", data: "x" }])
    }))

  it.effect("an event over the size bound fails the stream with the typed error, after the earlier events", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const exit = yield* Sse.decode(
        bytes("data: small\n\n", `data: ${"x".repeat(200)}`),
        (e) => ({ tooLarge: e.message }),
        {
          maxEventSize: 100
        }
      ).pipe(Stream.runForEach((e) => Effect.sync(() => seen.push(e.data))), Effect.exit)
      expect(seen).toEqual(["small"])
      expect(exit).toEqual(Exit.fail({ tooLarge: "Pending SSE event exceeded the maximum size of 100" }))
    }))

  it.effect("errors of the byte stream pass through unchanged", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(decodeAll(Stream.concat(bytes("data: a\n\n"), Stream.fail("broken" as never))))
      expect(exit).toEqual(Exit.fail("broken"))
    }))
})
