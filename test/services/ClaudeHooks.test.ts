import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ClaudeHooks from "../../src/services/ClaudeHooks.ts"

const preToolUse = {
  hook_event_name: "PreToolUse",
  session_id: "s",
  transcript_path: "/t",
  cwd: "/",
  tool_name: "Bash",
  tool_input: { command: "ls" },
  tool_use_id: "t1",
  some_new_field: true
}

describe("ClaudeHooks", () => {
  it.effect("decodes the CLI's input, runs the hook and nests the event's own fields in hookSpecificOutput", () =>
    Effect.gen(function*() {
      let seen: unknown
      const wire = yield* ClaudeHooks.answer("PreToolUse", {
        run: (input) =>
          Effect.sync(() => {
            seen = input
            return { permissionDecision: "deny", permissionDecisionReason: "no", systemMessage: "denied Bash" }
          })
      }, preToolUse)
      expect(seen).toMatchObject({ tool_name: "Bash", tool_input: { command: "ls" } })
      expect(wire).toEqual({
        systemMessage: "denied Bash",
        hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no" }
      })
      expect(ClaudeHooks.toWire("Stop", { decision: "block", reason: "go on" })).toEqual({
        decision: "block",
        reason: "go on"
      })
      expect(ClaudeHooks.toWire("PostToolUse", {})).toEqual({})
    }))

  it.effect("an input that does not decode, a failure, a defect and a refused answer are HookErrors naming the event", () =>
    Effect.gen(function*() {
      const ok: ClaudeHooks.Hook<"PreToolUse"> = { run: () => Effect.succeed({}) }
      const errors = yield* Effect.forEach([
        ClaudeHooks.answer("PreToolUse", ok, { hook_event_name: "PreToolUse" }),
        ClaudeHooks.answer("PreToolUse", { run: () => Effect.fail("nope") }, preToolUse),
        ClaudeHooks.answer("PreToolUse", { run: () => Effect.die("boom") }, preToolUse),
        ClaudeHooks.answer(
          "PreToolUse",
          { run: () => Effect.succeed({ permissionDecision: "maybe" } as never) },
          preToolUse
        )
      ], Effect.flip)
      expect(errors.map((e) => e._tag)).toEqual(["HookError", "HookError", "HookError", "HookError"])
      expect(errors.every((e) => e.event === "PreToolUse")).toBe(true)
      expect(errors[0]!.message).toContain("did not decode")
      expect(errors[1]!.message).toContain("nope")
      expect(errors[2]!.message).toContain("boom")
      expect(errors[3]!.message).toContain("schema refuses")
    }))

  it("entries lists each hook with its event, events in a fixed order", () => {
    const run = () => Effect.succeed({})
    const hooks: ClaudeHooks.Hooks = { Stop: [{ run }], PreToolUse: [{ run, matcher: "a" }, { run, matcher: "b" }] }
    expect(ClaudeHooks.entries(hooks).map(([event, hook]) => `${event}:${hook.matcher ?? ""}`)).toEqual([
      "PreToolUse:a",
      "PreToolUse:b",
      "Stop:"
    ])
    expect(ClaudeHooks.entries(undefined)).toEqual([])
  })
})
