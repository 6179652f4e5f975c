import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ConversationLog from "../../src/internal/conversationLog.ts"
import { Usage } from "../../src/services/ChatClient.ts"
import { makeMemory } from "../../src/services/ClaudeSessionStore.ts"

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
})
