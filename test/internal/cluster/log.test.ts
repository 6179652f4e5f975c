import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ConversationLog from "../../../src/internal/cluster/log.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import { makeMemory, SessionStoreError, StoreUnavailable } from "../../../src/services/ClaudeSessionStore.ts"

describe("conversationLog", () => {
  it.effect("a clean passivation is no failover; finished turns name the session, usage and reply", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      const first = ConversationLog.make(store, "p", "conv", "runner-a")
      yield* first.activated
      yield* first.turnStarted("t1")
      yield* first.turnDone("t1", "s-1", Usage.of({ inputTokens: 3, outputTokens: 2 }), "one")
      yield* first.passivated
      const state = yield* ConversationLog.make(store, "p", "conv", "runner-b").load
      expect(state.failedOver).toBe(false)
      expect(state.sessionId).toBe("s-1")
      expect(state.usage.totalTokens).toBe(5)
      expect(state.unfinished.size).toBe(0)
      expect(state.replies.get("t1")).toBe("one")
    }))

  it.effect("an activation without a passivation is a failover; a started turn without done is unfinished", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      const dead = ConversationLog.make(store, "p", "conv", "runner-a")
      yield* dead.activated
      yield* dead.turnStarted("t1")
      yield* dead.turnDone("t1", "s-1", Usage.of({ inputTokens: 1, outputTokens: 1 }), "one")
      yield* dead.turnStarted("t2")
      const state = yield* ConversationLog.make(store, "p", "conv", "runner-b").load
      expect(state.failedOver).toBe(true)
      expect([...state.unfinished]).toEqual(["t2"])
      expect(state.replies.has("t2")).toBe(false)
    }))

  it.effect("records are kept apart per project and conversation, and a turn done twice is stored once", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      const log = ConversationLog.make(store, "p", "conv", "r")
      yield* log.turnDone("t1", "s", Usage.empty, "a")
      yield* log.turnDone("t1", "s", Usage.empty, "a")
      const entries = yield* store.load(ConversationLog.logKey("p", "conv"))
      expect(Option.getOrThrow(entries)).toHaveLength(1)
      expect(yield* store.load(ConversationLog.logKey("p", "other"))).toEqual(Option.none())
      expect(yield* store.load({ projectKey: "p", sessionId: "conv" })).toEqual(Option.none())
      expect((yield* ConversationLog.make(store, "q", "conv", "r").load).sessionId).toBeUndefined()
    }))

  it.effect("tool results: found by key, absent otherwise", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      const results = ConversationLog.toolResults(store, "p", "conv")
      expect(yield* results.find("k1")).toEqual(Option.none())
      yield* results.record("k1", "charge", "charged 5")
      expect(yield* results.find("k1")).toEqual(Option.some("charged 5"))
      expect(yield* results.find("k2")).toEqual(Option.none())
    }))

  it.effect("tool results are read from the store once per activation, and a failed read is read again", () =>
    Effect.gen(function*() {
      const memory = yield* makeMemory
      let loads = 0
      let failNext = false
      const store = {
        ...memory,
        load: (key: Parameters<typeof memory.load>[0]) =>
          Effect.suspend(() => {
            loads++
            if (failNext) {
              failNext = false
              return Effect.fail(
                new SessionStoreError({ operation: "load", reason: new StoreUnavailable({ message: "store down" }) })
              )
            }
            return memory.load(key)
          })
      }
      // What an earlier activation stored is found by the next one.
      yield* ConversationLog.toolResults(memory, "p", "conv").record("old", "charge", "charged 1")
      const results = ConversationLog.toolResults(store, "p", "conv")
      failNext = true
      expect(yield* Effect.flip(results.find("old"))).toMatchObject({ _tag: "SessionStoreError" })
      expect(yield* results.find("old")).toEqual(Option.some("charged 1"))
      for (let i = 0; i < 50; i++) {
        expect(yield* results.find(`k${i}`)).toEqual(Option.none())
        yield* results.record(`k${i}`, "charge", `charged ${i}`)
        expect(yield* results.find(`k${i}`)).toEqual(Option.some(`charged ${i}`))
      }
      expect(loads).toBe(2)
      // The first result under a key stays the answer, in memory as in the store.
      yield* results.record("k0", "charge", "charged again")
      expect(yield* results.find("k0")).toEqual(Option.some("charged 0"))
      expect(yield* ConversationLog.toolResults(memory, "p", "conv").find("k0")).toEqual(Option.some("charged 0"))
    }))
})
