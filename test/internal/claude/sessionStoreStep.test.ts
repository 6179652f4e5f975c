import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { makeSessionClient } from "../../../src/internal/claude/conversation.ts"
import { ResultLine } from "../../../src/internal/claude/streamJson.ts"
import type { Transcripts } from "../../../src/internal/claude/transcripts.ts"
import { Usage } from "../../../src/services/ChatClient.ts"
import { ClaudeSnapshot } from "../../../src/services/ClaudeCodeOptions.ts"
import { SessionStoreError, StoreUnavailable } from "../../../src/services/ClaudeSessionStore.ts"

const result = (fields: Record<string, unknown>) => Schema.decodeUnknownSync(ResultLine)({ type: "result", ...fields })

/** A client whose runs answer `a<n>` in session `s`, and whose store step records its calls. */
const recording = (failAfterRun: (turn: number) => boolean, initial?: { resume: string; usage: Usage }) =>
  Effect.gen(function*() {
    const calls: Array<string> = []
    let turn = 0
    const transcripts: Transcripts = {
      beforeRun: (id) => Effect.sync(() => void calls.push(`before ${id}`)),
      afterRun: (id) =>
        Effect.suspend(() => {
          calls.push(`after ${id}`)
          return failAfterRun(turn)
            ? Effect.fail(
              new SessionStoreError({
                operation: "append",
                sessionId: id,
                reason: new StoreUnavailable({ message: "down" })
              })
            )
            : Effect.void
        }),
      load: (id) => Effect.succeed([{ type: "user", uuid: `${id}-1`, message: { content: "hi" } }])
    }
    const client = yield* makeSessionClient({
      provider: "test",
      transcripts,
      resume: initial?.resume,
      initialUsage: initial?.usage,
      setTools: () => Effect.void,
      run: (input) =>
        Effect.gen(function*() {
          turn++
          calls.push(`run ${Option.getOrElse(input.sessionId, () => "new")}`)
          yield* input.recordResult(result({ result: `a${turn}`, session_id: "s", usage: { input_tokens: 1 } }))
          return { text: `a${turn}`, structured: undefined, sessionId: "s" }
        })
    })
    return { client, calls }
  })

describe("the store step of a Claude Code turn (makeSessionClient)", () => {
  it.effect("restores before a resuming run, stores after every successful run, in that order", () =>
    Effect.gen(function*() {
      const { calls, client } = yield* recording(() => false)
      expect(yield* client.chat("one")).toBe("a1")
      expect(yield* client.chat("two")).toBe("a2")
      expect(calls).toEqual(["run new", "after s", "before s", "run s", "after s"])
    }))

  it.effect("a store step that fails fails the turn with SessionStoreError carrying the answer; the next turn stores again", () =>
    Effect.gen(function*() {
      const { calls, client } = yield* recording((turn) => turn === 2)
      yield* client.chat("one")
      const error = yield* Effect.flip(client.chat("two"))
      expect(error).toBeInstanceOf(SessionStoreError)
      expect(error).toMatchObject({ _tag: "SessionStoreError", operation: "append", answer: "a2", isRetryable: true })
      expect(yield* client.chat("three")).toBe("a3")
      expect(calls.filter((c) => c.startsWith("after"))).toHaveLength(3)
      // The answer is kept, and so is the session the failed turn ran in.
      expect(Option.getOrThrow(yield* client.sessionId)).toBe("s")
    }))

  it.effect("a snapshot is the session, its transcript and the usage; it survives JSON; none before a session", () =>
    Effect.gen(function*() {
      const { client } = yield* recording(() => false)
      const none = yield* Effect.flip(client.snapshot)
      expect(none).toMatchObject({ _tag: "SessionStoreError", operation: "load", reason: { _tag: "NoSession" } })
      expect(none.isRetryable).toBe(false)
      expect(none.message).toContain("snapshot after a turn")
      yield* client.chat("one")
      const snapshot = yield* client.snapshot
      expect(snapshot).toBeInstanceOf(ClaudeSnapshot)
      expect(snapshot.sessionId).toBe("s")
      expect(snapshot.transcript).toEqual([{ type: "user", uuid: "s-1", message: { content: "hi" } }])
      expect(snapshot.usage.inputTokens).toBe(1)
      const json = Schema.encodeSync(Schema.fromJsonString(ClaudeSnapshot))(snapshot)
      expect(Schema.decodeSync(Schema.fromJsonString(ClaudeSnapshot))(json)).toEqual(snapshot)
    }))

  it.effect("an imported conversation starts at its session and its usage", () =>
    Effect.gen(function*() {
      const usage = Usage.of({ inputTokens: 10, outputTokens: 5, cachedTokens: 0, costUsd: 0.5 })
      const { calls, client } = yield* recording(() => false, { resume: "s", usage })
      yield* client.chat("one")
      expect(calls[0]).toBe("before s")
      const total = yield* client.usage
      expect(total.inputTokens).toBe(11)
      expect(total.costUsd).toBeCloseTo(0.5)
    }))
})
