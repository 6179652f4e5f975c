/**
 * Token and cost totals, re-exported by `ChatClient` (their place in the public API). A module of
 * their own because `ChatEvent` and the providers' telemetry carry them too, and `ChatClient`
 * imports `ChatEvent`: with `Usage` inside `ChatClient` the two formed an import cycle.
 */
import * as Schema from "effect/Schema"

/**
 * Token and cost totals. `known` is false when a provider reported nothing usable.
 *
 * @category schemas
 * @since 1.0.0
 */
export class Usage extends Schema.Class<Usage>("effect-chat-bridge/Usage")({
  /** Prompt (input) tokens. */
  inputTokens: Schema.Number,
  /** Completion (output) tokens. */
  outputTokens: Schema.Number,
  /** As reported, or input + output. */
  totalTokens: Schema.Number,
  /** Prompt tokens served from the provider's cache. */
  cachedTokens: Schema.Number,
  /** Output tokens spent on hidden reasoning. */
  reasoningTokens: Schema.Number,
  /** Cost in US dollars, when the provider reports one (the `claude` CLI does). */
  costUsd: Schema.optional(Schema.Number),
  /** False when nothing usable was reported (all counts are then 0). */
  known: Schema.Boolean
}) {
  /** Zero usage, `known: false`: the start of every running total. */
  static readonly empty: Usage = new Usage({
    inputTokens: 0,
    outputTokens: 0,
    totalTokens: 0,
    cachedTokens: 0,
    reasoningTokens: 0,
    known: false
  })

  /** Builds a usage record; `totalTokens` defaults to input + output. */
  static readonly of = (fields: {
    readonly inputTokens: number
    readonly outputTokens: number
    readonly totalTokens?: number
    readonly cachedTokens?: number
    readonly reasoningTokens?: number
    readonly costUsd?: number | undefined
  }): Usage =>
    new Usage({
      inputTokens: fields.inputTokens,
      outputTokens: fields.outputTokens,
      totalTokens: fields.totalTokens ?? fields.inputTokens + fields.outputTokens,
      cachedTokens: fields.cachedTokens ?? 0,
      reasoningTokens: fields.reasoningTokens ?? 0,
      ...(fields.costUsd === undefined ? {} : { costUsd: fields.costUsd }),
      known: true
    }, { disableChecks: true })

  /** Sums two records; a cost is kept only where at least one side reported one. */
  static readonly add = (a: Usage, b: Usage): Usage => {
    const costUsd = a.costUsd === undefined && b.costUsd === undefined
      ? undefined
      : (a.costUsd ?? 0) + (b.costUsd ?? 0)
    return new Usage({
      inputTokens: a.inputTokens + b.inputTokens,
      outputTokens: a.outputTokens + b.outputTokens,
      totalTokens: a.totalTokens + b.totalTokens,
      cachedTokens: a.cachedTokens + b.cachedTokens,
      reasoningTokens: a.reasoningTokens + b.reasoningTokens,
      ...(costUsd === undefined ? {} : { costUsd }),
      known: a.known || b.known
      // Sums of two valid records: no need to validate again on every turn.
    }, { disableChecks: true })
  }
}
