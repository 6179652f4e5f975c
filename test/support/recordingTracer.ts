/**
 * A tracer that keeps every span it makes (attributes, events, parent, exit), for tests that check
 * the shape of a trace. Provide it with `Effect.withTracer(recorder.tracer)` or `recorder.layer`.
 */
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

export interface RecordedEvent {
  readonly name: string
  readonly attributes: Record<string, unknown>
}

export interface RecordedSpan extends Tracer.Span {
  readonly events: ReadonlyArray<RecordedEvent>
  readonly ended: boolean
}

export interface Recorder {
  readonly tracer: Tracer.Tracer
  readonly layer: Layer.Layer<never>
  readonly spans: () => ReadonlyArray<RecordedSpan>
  /** Spans named `name`, or matching the predicate. */
  readonly find: (match: string | ((span: RecordedSpan) => boolean)) => ReadonlyArray<RecordedSpan>
  /** The names of a span's ancestors, nearest first. */
  readonly ancestors: (span: Tracer.AnySpan) => ReadonlyArray<RecordedSpan>
  /** Every attribute value and event (name and attributes) as one JSON text, for secret checks. */
  readonly dump: () => string
}

let nextId = 0

export const makeRecorder = (): Recorder => {
  const recorded: Array<RecordedSpan> = []
  const byId = new Map<string, RecordedSpan>()
  const tracer = Tracer.make({
    span: ({ annotations, kind, links, name, parent, sampled, startTime }) => {
      const attributes = new Map<string, unknown>()
      const events: Array<RecordedEvent> = []
      const id = `span-${++nextId}`
      let status: Tracer.SpanStatus = { _tag: "Started", startTime }
      const span: RecordedSpan = {
        _tag: "Span",
        name,
        spanId: id,
        traceId: Option.match(parent, { onNone: () => `trace-${id}`, onSome: (p: Tracer.AnySpan) => p.traceId }),
        parent,
        annotations,
        get status() {
          return status
        },
        attributes,
        links: [...links],
        sampled,
        kind,
        events,
        get ended() {
          return status._tag === "Ended"
        },
        end: (endTime: bigint, exit: Exit.Exit<unknown, unknown>) => {
          status = { _tag: "Ended", startTime, endTime, exit }
        },
        attribute: (key: string, value: unknown) => {
          attributes.set(key, value)
        },
        event: (eventName: string, _time: bigint, eventAttributes?: Record<string, unknown>) => {
          events.push({ name: eventName, attributes: eventAttributes ?? {} })
        },
        addLinks: () => undefined
      }
      recorded.push(span)
      byId.set(id, span)
      return span
    }
  })
  const find = (match: string | ((span: RecordedSpan) => boolean)) =>
    recorded.filter(typeof match === "string" ? (s) => s.name === match : match)
  const ancestors = (span: Tracer.AnySpan) => {
    const out: Array<RecordedSpan> = []
    let current = span._tag === "Span" ? span.parent : Option.none()
    while (Option.isSome(current)) {
      const found = byId.get(current.value.spanId)
      if (found === undefined) break
      out.push(found)
      current = found.parent
    }
    return out
  }
  const dump = () =>
    JSON.stringify(recorded.map((s) => ({
      name: s.name,
      attributes: Object.fromEntries(s.attributes),
      events: s.events
    })))
  return {
    tracer,
    layer: Layer.succeed(Tracer.Tracer, tracer),
    spans: () => recorded,
    find,
    ancestors,
    dump
  }
}

/** Runs `effect` with the recorder's tracer. */
export const traced = <A, E, R>(recorder: Recorder, effect: Effect.Effect<A, E, R>) =>
  Effect.withTracer(effect, recorder.tracer)
