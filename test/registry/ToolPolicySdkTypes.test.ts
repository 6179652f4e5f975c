import type { McpServerConfig, Options, PermissionMode as SdkPermissionMode } from "@anthropic-ai/claude-agent-sdk"
import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import type * as SdkCoverage from "../../src/registry/SdkCoverage.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"

// ToolPolicy mirrors the Agent SDK's types structurally so the main entry needs no SDK. These
// assertions fail the typecheck (not just this test) when the SDK's types move away from them.
type Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const samePermissionModes: Equal<ToolPolicy.AgentSdkPermissionMode, SdkPermissionMode> = true
// The CLI's set is the SDK's plus `manual` (its alias of `default`).
const cliPermissionModes: Equal<ToolPolicy.PermissionMode, SdkPermissionMode | "manual"> = true
// SdkCoverage's compile-time guards, instantiated here so a test file's typecheck names them too.
const coverage: [SdkCoverage.CatalogCoversSdk, SdkCoverage.NamesAreSdkNames, SdkCoverage.InputsAreSdkInputs] = [
  true,
  true,
  true
]

describe("toAgentSdkOptions against the Agent SDK's own types", () => {
  it("produces a value assignable to the SDK's Options, hook included", () => {
    const policy = Result.getOrThrow(
      ToolPolicy.resolveToolPolicy(ClaudeCodeCatalog.registry, { disabledTools: [] }, {
        conditions: {},
        headless: false,
        mcpServers: ["gtb"]
      })
    )
    const gtb: McpServerConfig = { type: "http", url: "http://127.0.0.1:1/mcp" }
    const options = ToolPolicy.toAgentSdkOptions(policy, {
      permissionMode: "default",
      headless: true,
      mcpServers: { gtb }
    })
    const sdk: Pick<
      Options,
      "disallowedTools" | "allowedTools" | "mcpServers" | "strictMcpConfig" | "permissionMode" | "hooks"
    > = options
    expect(samePermissionModes).toBe(true)
    expect(cliPermissionModes).toBe(true)
    expect(coverage).toEqual([true, true, true])
    expect(sdk.mcpServers).toEqual({ gtb })
    expect(sdk.hooks?.PreToolUse?.[0]?.hooks.length).toBe(1)
  })
})
