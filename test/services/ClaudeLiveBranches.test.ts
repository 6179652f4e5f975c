import { describe, expect, it } from "@effect/vitest"
import {
  ClaudeLiveError,
  Interrupted,
  isInterrupted,
  NoAnswer,
  NoProcess,
  NoRunningTurn,
  NotKeptAlive,
  Rejected
} from "../../src/services/ClaudeLive.ts"

const wrap = (reason: ClaudeLiveError["reason"]) => new ClaudeLiveError({ provider: "claude-local", reason })

describe("ClaudeLiveError reasons", () => {
  it("each reason says what happened, what to do, and whether a retry may help", () => {
    const cases = [
      {
        reason: new NotKeptAlive({ control: "steer" }),
        message: "steer needs a kept-alive claude CLI; build the client with `keepAlive: true`",
        retryable: false
      },
      {
        reason: new NoRunningTurn({ control: "interrupt" }),
        message: "interrupt: no turn is running; send the text with chat instead",
        retryable: false
      },
      {
        reason: new NoProcess({ control: "mcpStatus" }),
        message: "mcpStatus: no claude CLI is running for this conversation yet; run a turn first (or use `prewarm`)",
        retryable: false
      },
      {
        reason: new Rejected({ control: "setModel", error: "unknown model" }),
        message: "The claude CLI refused setModel: unknown model",
        retryable: false
      },
      {
        reason: new NoAnswer({ control: "contextUsage", detail: "the CLI ended" }),
        message: "The claude CLI did not answer contextUsage (the CLI ended)",
        retryable: true
      },
      {
        reason: new Interrupted({ answer: "partial", tools: [] }),
        message: "The turn was interrupted",
        retryable: false
      },
      {
        reason: new Interrupted({ answer: "", tools: [], terminalReason: "aborted_tools" }),
        message: "The turn was interrupted (aborted_tools)",
        retryable: false
      }
    ]
    for (const { message, reason, retryable } of cases) {
      expect(reason.message).toBe(message)
      expect(reason.isRetryable).toBe(retryable)
      const error = wrap(reason)
      expect(error.message).toBe(`claude-local: ${message}`)
      expect(error.isRetryable).toBe(retryable)
    }
  })

  it("isInterrupted recognises only an interrupted turn's error", () => {
    expect(isInterrupted(wrap(new Interrupted({ answer: "a", tools: [] })))).toBe(true)
    expect(isInterrupted(wrap(new NoRunningTurn({ control: "interrupt" })))).toBe(false)
    expect(isInterrupted(new Interrupted({ answer: "a", tools: [] }))).toBe(false)
    expect(isInterrupted({ _tag: "ClaudeLiveError", reason: { _tag: "Interrupted" } })).toBe(false)
    expect(isInterrupted(undefined)).toBe(false)
  })
})
