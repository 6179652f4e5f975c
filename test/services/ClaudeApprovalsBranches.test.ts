import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import {
  AlreadyDecided,
  ApprovalError,
  ApprovalExpired,
  ApprovalNotFound,
  approve,
  ClaudeApprovals,
  type ClaudeApprovalsService,
  deny,
  list,
  makeMemory,
  PendingApproval
} from "../../src/services/ClaudeApprovals.ts"

const pending = (id: string) =>
  new PendingApproval({
    approvalId: id,
    projectKey: "p",
    sessionId: "s",
    toolUseId: `tu-${id}`,
    tool: "deploy",
    input: { target: "prod" },
    state: "pending",
    createdAt: 1,
    expiresAt: 2
  })

describe("ClaudeApprovals", () => {
  it("an ApprovalError carries its reason's message and is never retryable for a decision's reasons", () => {
    for (
      const reason of [
        new ApprovalNotFound({ message: "no approval a1" }),
        new ApprovalExpired({ message: "a1 expired" }),
        new AlreadyDecided({ message: "a1 was approved", state: "approved" })
      ]
    ) {
      expect(reason.isRetryable).toBe(false)
      const error = new ApprovalError({ approvalId: "a1", reason })
      expect(error.message).toBe(reason.message)
      expect(error.isRetryable).toBe(false)
    }
  })

  it.effect("the memory store keeps a decision's input and reason, and moves only a pending approval", () =>
    Effect.gen(function*() {
      const store = yield* makeMemory
      yield* store.put(pending("a"))
      yield* store.put(pending("b"))
      expect(yield* store.decide("p", "missing", { state: "approved" })).toBe(false)
      expect(yield* store.decide("other", "a", { state: "approved" })).toBe(false)
      expect(yield* store.decide("p", "a", { state: "approved", updatedInput: { target: "staging" } })).toBe(true)
      expect(yield* store.decide("p", "a", { state: "denied", reason: "too late" })).toBe(false)
      expect(yield* store.decide("p", "b", { state: "denied", reason: "not today" })).toBe(true)
      const a = Option.getOrThrow(yield* store.get("p", "a"))
      const b = Option.getOrThrow(yield* store.get("p", "b"))
      expect([a.state, a.updatedInput, a.reason]).toEqual(["approved", { target: "staging" }, undefined])
      expect([b.state, b.updatedInput, b.reason]).toEqual(["denied", undefined, "not today"])
      // Answering a missing approval changes nothing.
      yield* store.answer("p", "missing", "done")
      expect((yield* store.list("p")).map((x) => x.approvalId)).toEqual(["a", "b"])
    }))

  it.effect("the accessors use the ClaudeApprovals in context", () => {
    const calls: Array<unknown> = []
    const service: ClaudeApprovalsService = {
      approve: (id, options) => Effect.sync(() => (calls.push(["approve", id, options]), `approved ${id}`)),
      deny: (id, reason) => Effect.sync(() => (calls.push(["deny", id, reason]), `denied ${id}`)),
      list: (sessionId) => Effect.sync(() => (calls.push(["list", sessionId]), [pending("x")]))
    }
    return Effect.gen(function*() {
      expect(yield* approve("a1", { updatedInput: { n: 1 } })).toBe("approved a1")
      expect(yield* deny("a2", "no")).toBe("denied a2")
      expect((yield* list("s1")).map((x) => x.approvalId)).toEqual(["x"])
      expect(calls).toEqual([["approve", "a1", { updatedInput: { n: 1 } }], ["deny", "a2", "no"], ["list", "s1"]])
    }).pipe(Effect.provide(Layer.succeed(ClaudeApprovals, service)))
  })
})
