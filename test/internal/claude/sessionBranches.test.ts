import { describe, expect, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Schema from "effect/Schema"
import { budgetSpent, spentWindowError, toolServerFailure } from "../../../src/internal/claude/session.ts"
import { InitLine } from "../../../src/internal/claude/streamJson.ts"

const init = (servers: ReadonlyArray<{ name: string; status: string }> | undefined) =>
  Schema.decodeUnknownSync(InitLine)({
    type: "system",
    subtype: "init",
    ...(servers === undefined ? {} : { mcp_servers: servers })
  })

describe("session: errors a run is refused with", () => {
  it("a tool server the CLI never reported: the message lists what it did report", () => {
    const error = toolServerFailure("claude-local", "bridge", init([{ name: "github", status: "connected" }]))
    expect(error.reason._tag).toBe("ConfigurationError")
    expect(error.message).toBe(
      "The claude CLI could not use the tool server (MCP server bridge: not reported; it listed github (connected)); " +
        "refusing an answer given without tools"
    )
    expect(toolServerFailure("claude-local", "bridge", undefined).message).toContain(
      "not reported; it listed no MCP servers"
    )
    expect(toolServerFailure("claude-local", "bridge", init(undefined)).message).toContain(
      "not reported; it listed no MCP servers"
    )
  })

  it("a spent window without reset time, CLI text or status says only the window", () => {
    const error = spentWindowError("claude-local", { window: "seven_day", status: "rejected" }, "")
    expect(error.reason).toMatchObject({ _tag: "RateLimitError", window: "seven_day" })
    expect(error.reason).not.toHaveProperty("resetsAt")
    expect(error.status).toBeUndefined()
    expect(error.isRetryable).toBe(true)
    expect(error.message).toBe(
      "The claude CLI's plan rate-limit window seven_day is spent; wait until it resets or use another provider"
    )
  })

  it("a spent window with its reset, the CLI's words and the API's 429", () => {
    const resetsAt = DateTime.makeUnsafe("2026-01-02T03:04:05Z")
    const error = spentWindowError(
      "claude-local",
      { window: "five_hour", status: "rejected", resetsAt },
      "Claude AI usage limit reached",
      429
    )
    expect(error.status).toBe(429)
    expect(error.message).toBe(
      "The claude CLI's plan rate-limit window five_hour is spent until 2026-01-02T03:04:05.000Z " +
        "(Claude AI usage limit reached); wait until it resets or use another provider"
    )
  })

  it("a spent budget with nothing counted yet says $0", () => {
    expect(budgetSpent("claude-local", 0.5, undefined).message).toBe(
      "The conversation has spent $0 of its maxBudgetUsd ($0.5), so the turn did not run; " +
        "raise maxBudgetUsd or start a new conversation"
    )
  })
})
