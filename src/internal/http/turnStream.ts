/**
 * A streamed model turn from a vendor's server-sent events: each provider's wire module reads the
 * events (`TurnStreamReader`); this turns what it read into `TurnStreamEvent`s and errors.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  InternalProviderError,
  InvalidResponseError,
  NetworkError,
  ProviderError,
  UnknownError
} from "../../services/ChatClient.ts"
import type { TurnResponse, TurnStreamEvent } from "../../services/ModelTurn.ts"
import * as ParseErrorText from "../core/parseErrorText.ts"
import { bounded } from "./errorDetail.ts"
import type * as Sse from "./sse.ts"
import { sseJson } from "./transport.ts"

/**
 * What reading one stream event gives: text (and reasoning, shown apart) to show now, nothing, or
 * the vendor's error event.
 */
export type StreamStep =
  | { readonly _tag: "Text"; readonly text: string; readonly reasoning?: string | undefined }
  | { readonly _tag: "Nothing" }
  | { readonly _tag: "Error"; readonly message: string; readonly retryable: boolean }

/** Reads one streamed turn: `push` takes each event's JSON (and may throw on a malformed one), `finish` gives the turn. */
export interface TurnStreamReader {
  readonly push: (json: unknown) => StreamStep
  readonly finish: () => Effect.Effect<TurnResponse, ProviderError>
}

const noEvents: ReadonlyArray<TurnStreamEvent> = []

/**
 * A streamed model turn from SSE events: each event's JSON goes through `reader`, text is emitted
 * as it comes, and when the stream has ended `Done` carries the turn `reader.finish` assembled.
 * A vendor error event or a malformed event fails the stream (after what was emitted).
 */
export const turnStream = (
  provider: string,
  events: Stream.Stream<Sse.Event, ProviderError>,
  reader: TurnStreamReader
): Stream.Stream<TurnStreamEvent, ProviderError> => {
  const step = (json: unknown): Effect.Effect<ReadonlyArray<TurnStreamEvent>, ProviderError> =>
    Effect.suspend(() => {
      let read: StreamStep
      try {
        read = reader.push(json)
      } catch (e) {
        const detail = Schema.isSchemaError(e) ? ParseErrorText.format(e) : String(e)
        return Effect.fail(
          new ProviderError({
            provider,
            reason: new InvalidResponseError({
              message: `${provider} sent a stream event in an unexpected shape: ${bounded(detail)}`
            })
          })
        )
      }
      switch (read._tag) {
        case "Text":
          return Effect.succeed([
            ...(read.reasoning === undefined || read.reasoning === ""
              ? []
              : [{ _tag: "ReasoningDelta" as const, text: read.reasoning }]),
            ...(read.text === "" ? [] : [{ _tag: "TextDelta" as const, text: read.text }])
          ])
        case "Nothing":
          return Effect.succeed([])
        case "Error":
          return Effect.fail(
            new ProviderError({
              provider,
              reason: read.retryable
                ? new InternalProviderError({ message: `${provider} stream failed: ${bounded(read.message)}` })
                : new UnknownError({ message: `${provider} stream failed: ${bounded(read.message)}` })
            })
          )
      }
    })
  const json = sseJson(provider)
  return Stream.concat(
    events.pipe(
      Stream.mapEffect((event) =>
        Effect.flatMap(
          json(event),
          Option.match({ onNone: () => Effect.succeed(noEvents), onSome: step })
        )
      ),
      Stream.flattenIterable
    ),
    Stream.fromEffect(Effect.suspend(reader.finish)).pipe(
      Stream.map((response): TurnStreamEvent => ({ _tag: "Done", response }))
    )
  )
}

/** The stream ended before the vendor's end-of-message marker: the answer is incomplete. */
export const truncatedStream = (provider: string): ProviderError =>
  new ProviderError({
    provider,
    reason: new NetworkError({
      message: `${provider} stream ended before the message was complete`
    })
  })
