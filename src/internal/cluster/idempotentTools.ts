/**
 * Tools whose result is replayed when a redelivered turn calls them again. A turn whose runner
 * died is run again from its prompt on another runner, and the model calls its tools again, with
 * new `tool_use` ids (so those cannot be the key). The key here is the conversation, the turn id,
 * the tool's name, its arguments (as canonical JSON) and how many identical calls came before in
 * the same turn; the first successful result under a key is stored, and a later call with that key
 * gets the stored result without running the handler. A handler that ran but whose result was not
 * stored yet when its runner died runs again: exactly once is not possible without the tool's own
 * cooperation (see the cluster docs).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import { ToolContent } from "../../services/Content.ts"
import * as Tool from "../../services/Tool.ts"
import type { toolResults } from "./log.ts"

/** JSON with object keys sorted, so the same arguments give the same key whatever their order. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/** The key of one call: conversation, turn, tool, arguments and its rank among identical calls. */
export const callKey = (parts: {
  readonly conversationId: string
  readonly turnId: string
  readonly tool: string
  readonly input: unknown
  readonly occurrence: number
}): string =>
  createHash("sha256")
    .update(
      JSON.stringify([parts.conversationId, parts.turnId, parts.tool, canonicalJson(parts.input), parts.occurrence])
    )
    .digest("hex")

const ToolOutput = Schema.Union([Schema.String, ToolContent])
const encodeOutput = Schema.encodeSync(Schema.toCodecJson(ToolOutput))
const decodeOutput = Schema.decodeUnknownOption(Schema.toCodecJson(ToolOutput))

/** Per-turn state: the turn id and how often each (tool, arguments) pair was called in it. */
export interface TurnCalls {
  readonly turnId: string
  readonly seen: ReadonlyMap<string, number>
}

/**
 * Wraps `tool` so that its successful results are stored and replayed by key. A failing store
 * fails the call (the model sees a tool error) rather than running a side effect it cannot record.
 */
export const makeIdempotent = (
  conversationId: string,
  turn: Ref.Ref<TurnCalls>,
  results: ReturnType<typeof toolResults>
) =>
<R>(tool: Tool.Tool<R>): Tool.Tool<R> => ({
  ...tool,
  run: Effect.fn("ClaudeConversation.idempotentTool", { attributes: { "tool.name": tool.name } })(function*(
    input: unknown
  ) {
    const args = canonicalJson(input)
    const { occurrence, turnId } = yield* Ref.modify(turn, (state) => {
      const id = `${tool.name}\u0000${args}`
      const occurrence = state.seen.get(id) ?? 0
      return [
        { occurrence, turnId: state.turnId },
        { turnId: state.turnId, seen: new Map(state.seen).set(id, occurrence + 1) }
      ]
    })
    const key = callKey({ conversationId, turnId, tool: tool.name, input, occurrence })
    const failure = (error: { readonly message: string }) =>
      new Tool.ToolFailure({
        reason: new Tool.HandlerFailed({ message: `The idempotent tool's result store failed: ${error.message}` })
      })
    const stored = yield* Effect.mapError(results.find(key), failure)
    const replay = Option.flatMap(stored, decodeOutput)
    if (Option.isSome(replay)) {
      yield* Effect.annotateCurrentSpan({ "tool.replayed": true })
      return replay.value
    }
    const output = yield* tool.run(input)
    yield* Effect.mapError(results.record(key, tool.name, encodeOutput(output)), failure)
    return output
  })
})
