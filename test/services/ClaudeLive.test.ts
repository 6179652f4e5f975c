import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ChatError } from "../../src/services/ChatClient.ts"
import {
  ClaudeLiveError,
  Interrupted,
  InterruptedTool,
  isInterrupted,
  NoAnswer,
  NotKeptAlive,
  Rejected
} from "../../src/services/ClaudeLive.ts"

const interrupted = new ClaudeLiveError({
  provider: "claude-local",
  reason: new Interrupted({
    answer: "Once upon",
    tools: [new InterruptedTool({ id: "toolu_1", name: "slow", isError: true })],
    terminalReason: "aborted_tools",
    sessionId: "s1"
  })
})

describe("ClaudeLive", () => {
  it.effect("an interrupted turn is caught by its reason and carries the partial answer and tools", () =>
    Effect.gen(function*() {
      const answer = yield* Effect.fail(interrupted).pipe(
        Effect.catchReason(
          "ClaudeLiveError",
          "Interrupted",
          (reason) => Effect.succeed(`${reason.answer} / ${reason.tools.map((t) => t.name).join(",")}`)
        )
      )
      assert.strictEqual(answer, "Once upon / slow")
      assert.isTrue(isInterrupted(interrupted))
      assert.isFalse(
        isInterrupted(new ClaudeLiveError({ provider: "p", reason: new NotKeptAlive({ control: "steer" }) }))
      )
      assert.isFalse(interrupted.isRetryable)
      assert.strictEqual(interrupted.message, "claude-local: The turn was interrupted (aborted_tools)")
    }))

  it("each reason says what to do, and whether to retry", () => {
    const notKept = new ClaudeLiveError({
      provider: "claude-local",
      reason: new NotKeptAlive({ control: "interrupt" })
    })
    assert.include(notKept.message, "keepAlive: true")
    const refused = new ClaudeLiveError({
      provider: "claude-local",
      reason: new Rejected({ control: "setPermissionMode", error: "Invalid permission mode: x" })
    })
    assert.include(refused.message, "Invalid permission mode: x")
    assert.isFalse(refused.isRetryable)
    assert.isTrue(
      new ClaudeLiveError({ provider: "p", reason: new NoAnswer({ control: "c", detail: "ended" }) }).isRetryable
    )
  })

  it("round-trips through the ChatError schema (the cluster sends it between runners)", () => {
    const codec = Schema.toCodecJson(ChatError)
    const encoded = Schema.encodeUnknownSync(codec)(interrupted)
    const decoded = Schema.decodeUnknownSync(codec)(JSON.parse(JSON.stringify(encoded)))
    assert.isTrue(isInterrupted(decoded))
    assert.deepStrictEqual((decoded as ClaudeLiveError).reason, interrupted.reason)
  })
})
