/**
 * The one SSE decoder the HTTP providers share: bytes → `Sse.Event`s, on `effect/encoding/Sse`'s
 * parser (BOM, CR/LF, multi-line `data`, comments, size bound).
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Sse from "effect/encoding/Sse"
import type * as Pull from "effect/Pull"
import * as Stream from "effect/Stream"

export type Event = Sse.Event

/**
 * Largest event the parser holds while waiting for its end (the parser's default is 10 MiB): the
 * bound is on what stays buffered between chunks, so a bigger event that arrives complete in one
 * chunk (already in memory) passes.
 */
export const MaxEventSize = 4 * 1024 * 1024

/**
 * Decodes an SSE byte stream into its events. `retry:` fields are ignored: a POST answer cannot be
 * resumed (`Sse.decode` would fail the stream with them). An event still incomplete at the end of
 * a chunk and over `MaxEventSize` fails the stream with `onTooLarge`'s error, after the events
 * parsed before it.
 */
export const decode = <E, E2>(
  bytes: Stream.Stream<Uint8Array, E>,
  onTooLarge: (error: Sse.SseError) => E2,
  options: { readonly maxEventSize?: number | undefined } = {}
): Stream.Stream<Event, E | E2> =>
  Stream.transformPull(Stream.decodeText(bytes), (pull) =>
    Effect.sync(() => {
      // One parser per run of the stream: it holds the partial line and event between chunks.
      let pending: Array<Event> = []
      let tooLarge: { readonly error: E2 } | undefined
      const parser = Sse.makeParser((event) => {
        if (event._tag === "Event") pending.push(event)
      }, { maxEventSize: options.maxEventSize ?? MaxEventSize })
      const next: Pull.Pull<Arr.NonEmptyReadonlyArray<Event>, E | E2, void> = Effect.suspend(() => {
        if (tooLarge !== undefined) return Effect.fail(tooLarge.error)
        return Effect.flatMap(pull, (texts) => {
          for (const text of texts) {
            const error = parser.feed(text)
            if (error !== undefined) {
              tooLarge = { error: onTooLarge(error) }
              break
            }
          }
          const out = pending
          pending = []
          return Arr.isArrayNonEmpty(out) ? Effect.succeed(out) : next
        })
      })
      return next
    }))
