import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import {
  callKey,
  canonicalJson,
  makeIdempotent,
  type TurnCalls
} from "../../../src/internal/cluster/idempotentTools.ts"
import * as ConversationLog from "../../../src/internal/cluster/log.ts"
import { makeMemory, SessionStoreError, StoreUnavailable } from "../../../src/services/ClaudeSessionStore.ts"
import { text, toolContent } from "../../../src/services/Content.ts"
import * as Tool from "../../../src/services/Tool.ts"

const counting = () => {
  const calls: Array<unknown> = []
  const tool = Tool.make("charge", {
    description: "Charges",
    parameters: { amount: Schema.Number, note: Schema.optional(Schema.String) },
    handler: (input) => Effect.sync(() => (calls.push(input), `charged ${input.amount} (#${calls.length})`))
  })
  return { calls, tool }
}

const setup = Effect.gen(function*() {
  const store = yield* makeMemory
  const turn = yield* Ref.make<TurnCalls>({ turnId: "t1", seen: new Map() })
  const wrap = makeIdempotent("conv", turn, ConversationLog.toolResults(store, "p", "conv"))
  const nextRun = (turnId: string) => Ref.set(turn, { turnId, seen: new Map() })
  return { store, wrap, nextRun }
})

describe("idempotentTools", () => {
  it("canonical JSON ignores key order and undefined fields", () => {
    expect(canonicalJson({ b: 1, a: [{ y: 2, x: 1 }], c: undefined })).toBe(
      canonicalJson({ a: [{ x: 1, y: 2 }], b: 1 })
    )
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: "1" }))
  })

  it("the key changes with conversation, turn, tool, arguments and repeat count", () => {
    const base = { conversationId: "c", turnId: "t", tool: "x", input: { a: 1 }, occurrence: 0 }
    const keys = [
      base,
      { ...base, conversationId: "d" },
      { ...base, turnId: "u" },
      { ...base, tool: "y" },
      { ...base, input: { a: 2 } },
      { ...base, occurrence: 1 }
    ].map(callKey)
    expect(new Set(keys).size).toBe(keys.length)
    expect(callKey({ ...base, input: { a: 1 } })).toBe(keys[0])
  })

  it.effect("a re-run of the same turn replays each call's stored result; another turn runs the handler", () =>
    Effect.gen(function*() {
      const { nextRun, wrap } = yield* setup
      const { calls, tool } = counting()
      const charge = wrap(tool)
      expect(yield* charge.run({ amount: 5 })).toBe("charged 5 (#1)")
      // The same call again in the same run is a second, distinct call (the model asked twice).
      expect(yield* charge.run({ amount: 5 })).toBe("charged 5 (#2)")
      yield* nextRun("t1") // the turn delivered again after a failover
      expect(yield* charge.run({ amount: 5 })).toBe("charged 5 (#1)")
      expect(yield* charge.run({ amount: 5 })).toBe("charged 5 (#2)")
      expect(yield* charge.run({ amount: 6 })).toBe("charged 6 (#3)")
      expect(calls).toHaveLength(3)
      yield* nextRun("t2")
      expect(yield* charge.run({ amount: 5 })).toBe("charged 5 (#4)")
    }))

  it.effect("a failed call is not stored, so its re-run runs the handler again", () =>
    Effect.gen(function*() {
      const { nextRun, wrap } = yield* setup
      let attempts = 0
      const flaky = wrap(Tool.make("flaky", {
        description: "Fails once",
        parameters: {},
        handler: () => (++attempts === 1 ? Effect.fail("down") : Effect.succeed(`ok ${attempts}`))
      }))
      const first = yield* Effect.flip(flaky.run({}))
      expect(first._tag).toBe("ToolFailure")
      yield* nextRun("t1")
      expect(yield* flaky.run({})).toBe("ok 2")
    }))

  it.effect("a ToolContent result (text and images) is replayed as it was", () =>
    Effect.gen(function*() {
      const { nextRun, wrap } = yield* setup
      let runs = 0
      const shot = wrap(Tool.dynamic("shot", {
        description: "A picture",
        inputSchema: { type: "object", properties: {} },
        handler: () => Effect.sync(() => (runs++, toolContent([text("a pixel")])))
      }))
      const first = yield* shot.run({})
      yield* nextRun("t1")
      const again = yield* shot.run({})
      expect(runs).toBe(1)
      expect(again).toEqual(first)
    }))

  it.effect("a store that fails fails the call before the handler runs", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      const broken = {
        ...store,
        load: () =>
          Effect.fail(
            new SessionStoreError({ operation: "load", reason: new StoreUnavailable({ message: "store down" }) })
          )
      }
      const turn = yield* Ref.make<TurnCalls>({ turnId: "t1", seen: new Map() })
      const { calls, tool } = counting()
      const charge = makeIdempotent("conv", turn, ConversationLog.toolResults(broken, "p", "conv"))(tool)
      const failure = yield* Effect.flip(charge.run({ amount: 1 }))
      expect(failure.message).toContain("store down")
      expect(calls).toHaveLength(0)
    }))
})
