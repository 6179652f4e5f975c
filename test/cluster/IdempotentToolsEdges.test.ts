/**
 * Edges of the idempotent tool wrapper the runner gives each conversation: canonical JSON's exact
 * form, a stored result that no longer decodes (the handler runs again), and a store that fails
 * to record a result the handler produced (the call fails, saying so).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { callKey, canonicalJson, makeIdempotent, type TurnCalls } from "../../src/internal/cluster/idempotentTools.ts"
import * as ConversationLog from "../../src/internal/cluster/log.ts"
import { makeMemory, SessionStoreError, StoreFailed } from "../../src/services/ClaudeSessionStore.ts"
import * as Tool from "../../src/services/Tool.ts"

const charge = (calls: Array<unknown>) =>
  Tool.make("charge", {
    description: "Charges",
    parameters: { amount: Schema.Number },
    handler: (input) => Effect.sync(() => (calls.push(input), `charged ${input.amount}`))
  })

describe("idempotentTools (edges)", () => {
  it("canonical JSON: keys sorted at every depth, undefined fields dropped, undefined itself null", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, "x"], c: null }, e: undefined })).toBe(
      "{\"a\":{\"c\":null,\"d\":[1,\"x\"]},\"b\":1}"
    )
    expect(canonicalJson({ z: 1, y: 2, x: 3 })).toBe("{\"x\":3,\"y\":2,\"z\":1}")
    expect(canonicalJson(undefined)).toBe("null")
    expect(canonicalJson([undefined, 2])).toBe("[null,2]")
    expect(canonicalJson("a\"b")).toBe("\"a\\\"b\"")
  })

  it.effect("a stored result that does not decode is not replayed: the handler runs", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      const input = { amount: 3 }
      const key = callKey({ conversationId: "conv", turnId: "t1", tool: "charge", input, occurrence: 0 })
      // A result under the call's key that is neither text nor ToolContent (another version wrote it).
      yield* store.append(ConversationLog.logKey("p", "conv", "effect-chat-bridge/tool-results"), [
        { type: "effect-chat-bridge/tool-result", uuid: key, tool: "charge", result: { unexpected: 42 } }
      ])
      const turn = yield* Ref.make<TurnCalls>({ turnId: "t1", seen: new Map() })
      const calls: Array<unknown> = []
      const wrapped = makeIdempotent("conv", turn, ConversationLog.toolResults(store, "p", "conv"))(charge(calls))
      expect(yield* wrapped.run(input)).toBe("charged 3")
      expect(calls).toEqual([input])
    }))

  it.effect("a store that cannot record the result fails the call, saying the result store failed", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      const broken = {
        ...store,
        append: () =>
          Effect.fail(new SessionStoreError({ operation: "append", reason: new StoreFailed({ message: "disk full" }) }))
      }
      const turn = yield* Ref.make<TurnCalls>({ turnId: "t1", seen: new Map() })
      const calls: Array<unknown> = []
      const wrapped = makeIdempotent("conv", turn, ConversationLog.toolResults(broken, "p", "conv"))(charge(calls))
      const failure = yield* Effect.flip(wrapped.run({ amount: 1 }))
      expect(failure._tag).toBe("ToolFailure")
      expect(failure.reason).toMatchObject({ _tag: "HandlerFailed" })
      expect(failure.message).toContain("The idempotent tool's result store failed")
      expect(failure.message).toContain("disk full")
      expect(calls).toHaveLength(1)
    }))
})
