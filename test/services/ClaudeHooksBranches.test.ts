import { describe, expect, it } from "@effect/vitest"
import * as ClaudeHooks from "../../src/services/ClaudeHooks.ts"

describe("ClaudeHooks.toWire", () => {
  it("fields left undefined are not sent, at the top level or in hookSpecificOutput", () => {
    expect(
      ClaudeHooks.toWire("PreToolUse", {
        systemMessage: undefined,
        continue: true,
        permissionDecision: "deny",
        permissionDecisionReason: undefined
      })
    ).toEqual({ continue: true, hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny" } })
    expect(ClaudeHooks.toWire("UserPromptSubmit", { additionalContext: undefined, reason: undefined })).toEqual({})
  })
})
