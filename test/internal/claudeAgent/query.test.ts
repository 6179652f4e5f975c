import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { mergeHooks } from "../../../src/internal/claudeAgent/query.ts"
import * as ClaudeCodeCatalog from "../../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../../src/registry/Registry.ts"
import * as ToolPolicy from "../../../src/registry/ToolPolicy.ts"

const noop = async () => ({})

describe("ClaudeAgent query hooks", () => {
  it.effect("the policy's PreToolUse hook and a user's hooks are merged, the policy's first, none lost", () =>
    Effect.gen(function*() {
      const registry = yield* Registry.make(ClaudeCodeCatalog.descriptors)
      const policy = Result.getOrThrow(ToolPolicy.resolveToolPolicy(registry, { disabledTools: [] }, {
        conditions: { "workspace-has-git": true },
        headless: true,
        permissionMode: "bypassPermissions"
      }))
      const fromPolicy = ToolPolicy.toAgentSdkOptions(policy, { permissionMode: "bypassPermissions", headless: true })
      const policyMatcher = fromPolicy.hooks!.PreToolUse[0]!
      const merged = mergeHooks(fromPolicy.hooks, {
        PreToolUse: [{ matcher: "Bash", hooks: [noop] }],
        Stop: [{ hooks: [noop] }]
      })
      expect(merged?.PreToolUse?.map((m) => m.matcher)).toEqual([policyMatcher.matcher, "Bash"])
      expect(merged?.PreToolUse?.[0]?.hooks[0]).toBe(policyMatcher.hooks[0])
      expect(merged?.Stop?.length).toBe(1)
      expect(mergeHooks(undefined, {}, { PreToolUse: [] })).toBeUndefined()
    }))
})
