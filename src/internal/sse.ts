/**
 * The one SSE decoder the HTTP providers share: bytes → `Sse.Event`s, on
 * `@effect/experimental/Sse`'s parser (BOM, CR/LF, multi-line `data`, comments, size bound).
 */
import * as Sse from "@effect/experimental/Sse"
import * as Chunk from "effect/Chunk"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"

export type Event = Sse.Event

/** Largest pending event accepted (the parser's default is 10 MiB); a bigger one fails the stream. */
export const MaxEventSize = 4 * 1024 * 1024

/**
 * Decodes an SSE byte stream into its events. `retry:` fields are ignored: a POST answer cannot be
 * resumed. An event over `MaxEventSize` fails the stream with `onTooLarge`'s error, typed (the
 * experimental channel would turn it into a defect).
 */
export const decode = <E, E2>(
  bytes: Stream.Stream<Uint8Array, E>,
  onTooLarge: (error: Sse.SseError) => E2,
  options: { readonly maxEventSize?: number | undefined } = {}
): Stream.Stream<Event, E | E2> =>
  Stream.suspend(() => {
    // One parser per run of the stream: it holds the partial line and event between chunks.
    let pending: Array<Event> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag === "Event") pending.push(event)
    }, { maxEventSize: options.maxEventSize ?? MaxEventSize })
    return bytes.pipe(
      Stream.decodeText(),
      // Events parsed before an oversized one are still delivered, then the stream fails.
      Stream.mapChunks((chunk) => {
        const out: Array<Either.Either<Event, E2>> = []
        for (const text of chunk) {
          const error = parser.feed(text)
          for (const event of pending) out.push(Either.right(event))
          pending = []
          if (error !== undefined) {
            out.push(Either.left(onTooLarge(error)))
            break
          }
        }
        return Chunk.unsafeFromArray(out)
      }),
      Stream.mapEffect((step) => step)
    )
  })
