import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import * as Sse from "../../../src/internal/http/sse.ts"

// One chunk per piece: the decoder sees each piece in its own pull.
const chunks = (...pieces: ReadonlyArray<string>) =>
  Stream.fromIterable(pieces.map((p) => new TextEncoder().encode(p))).pipe(Stream.rechunk(1))

describe("sse.decode, chunk by chunk", () => {
  it.effect("pulls on through chunks that complete no event, and ignores `retry:` fields", () =>
    Effect.gen(function*() {
      const events = yield* Sse.decode(
        chunks("retry: 1000\n\n", ": comment\n", "data: par", "tial\n", "\n", "event: done\ndata: x\n\n"),
        (e) => e.message
      ).pipe(Stream.map(({ data, event }) => ({ event, data })), Stream.runCollect)
      expect(events).toEqual([{ event: "message", data: "partial" }, { event: "done", data: "x" }])
    }))

  it.effect("an oversized event with nothing before it in its pull fails at once", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const exit = yield* Sse.decode(
        chunks("data: first\n\n", `data: ${"y".repeat(300)}`, "\n\ndata: never\n\n"),
        (e) => ({ tooLarge: e.message }),
        { maxEventSize: 100 }
      ).pipe(Stream.runForEach((e) => Effect.sync(() => seen.push(e.data))), Effect.exit)
      expect(seen).toEqual(["first"])
      expect(exit).toEqual(Exit.fail({ tooLarge: "Pending SSE event exceeded the maximum size of 100" }))
    }))

  it.effect("the default size bound is MaxEventSize", () =>
    Effect.gen(function*() {
      const big = "z".repeat(Sse.MaxEventSize + 10)
      // The bound applies to an event still pending at the end of a chunk.
      const exit = yield* Sse.decode(chunks(`data: ${big}`, "\n\n"), (e) => e.message).pipe(
        Stream.runCount,
        Effect.exit
      )
      expect(exit).toEqual(Exit.fail(`Pending SSE event exceeded the maximum size of ${Sse.MaxEventSize}`))
    }))
})
