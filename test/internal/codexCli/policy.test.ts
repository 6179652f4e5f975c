/**
 * A CodexCli `toolPolicy` compiled into a run's switches, at the edges the catalog alone does not
 * reach: an application's own built-in no switch removes, a registry server's tool lists, opt-outs
 * of tools the registry does not know, and wildcards `disabled_tools` cannot say.
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as Run from "../../../src/internal/codexCli/run.ts"
import * as CodexCliCatalog from "../../../src/registry/CodexCliCatalog.ts"
import * as Registry from "../../../src/registry/Registry.ts"
import * as ToolPolicy from "../../../src/registry/ToolPolicy.ts"

const registry = Registry.unsafeMake([
  ...CodexCliCatalog.descriptors,
  {
    name: "app_builtin",
    category: "search",
    exposure: "user",
    kind: "sdk",
    labelKey: "tools.app_builtin.label",
    descriptionKey: "tools.app_builtin.description"
  },
  Registry.mcpTool({ server: "crm", wireName: "lookup", category: "search" }),
  Registry.mcpTool({ server: "crm", wireName: "plain", category: "search" })
])

const compile = (disabledTools: ReadonlyArray<string>) => {
  const result = ToolPolicy.toCodexPolicy({ registry, disabledTools }, { mcpServers: ["gtb"] })
  assert(Result.isSuccess(result))
  return result.success
}

describe("codexCli toolPolicy", () => {
  it("an application's own built-in stays offered and is reported; strict refuses it in the singular", () => {
    const p = compile(["app_builtin"])
    expect(p.offeredTools).toContain("app_builtin")
    expect(p.ignored).toEqual([{
      entry: "app_builtin",
      kind: "inexpressible",
      message: "app_builtin: no Codex CLI switch removes this built-in; it stays in the model's tool list"
    }])
    const strict = Run.compilePolicy({ toolPolicy: { registry, disabledTools: ["app_builtin"], strict: true } }, "gtb")
    assert(Result.isFailure(strict))
    expect(strict.failure.reason._tag).toBe("ConfigurationError")
    expect(strict.failure.reason.message).toMatch(
      /^CodexCli toolPolicy: toolPolicy\.strict: 1 opt-out cannot be applied to Codex CLI as written: app_builtin:/
    )
    const two = Run.compilePolicy({
      toolPolicy: { registry, disabledTools: ["app_builtin", "mcp__gtb__drop*"], strict: true }
    }, "gtb")
    assert(Result.isFailure(two))
    expect(two.failure.reason.message).toContain("toolPolicy.strict: 2 opt-outs cannot be applied")
  })

  it("a registry server's tools: enabled and disabled ones as TOML arrays, each enabled one approved", () => {
    const p = compile(["mcp__crm__plain"])
    expect(p.config).toContain(`mcp_servers.crm.enabled_tools=["lookup"]`)
    expect(p.config).toContain(`mcp_servers.crm.disabled_tools=["plain"]`)
    expect(p.config).toContain(`mcp_servers.crm.tools.lookup.approval_mode="approve"`)
  })

  it("an opt-out of a bridge tool the registry does not know turns that name off", () => {
    const p = compile(["mcp__gtb__drop_table"])
    expect(p.cliOptions.config["mcp_servers.gtb.disabled_tools"]).toBe(`["drop_table"]`)
    expect(p.ignored).toEqual([])
    // Alongside a registry server's opt-out and a built-in's: each server turns off only its own names.
    const mixed = compile(["mcp__gtb__drop_table", "mcp__crm__plain", "web_search"])
    expect(mixed.cliOptions.config["mcp_servers.gtb.disabled_tools"]).toBe(`["drop_table"]`)
    expect(mixed.cliOptions.config["mcp_servers.crm.disabled_tools"]).toBe(`["plain"]`)
    expect(mixed.deniedTools).toContain("web_search")
  })

  it("a partial wildcard over the bridge is reported; whole-server, other-server and malformed ones are not", () => {
    const partial = compile(["mcp__gtb__drop*"])
    expect(partial.ignored.map((i) => [i.entry, i.kind])).toEqual([["mcp__gtb__drop*", "inexpressible"]])
    expect(partial.ignored[0]!.message).toContain("other tools of gtb stay on")
    expect(compile(["mcp__gtb__*", "mcp__nowhere__x*", "mcp__gtb*"]).ignored).toEqual([])
  })

  it("a bridge tool the registry knows (not gated) is approved with the whole bridge, with no entry of its own", () => {
    const withBridgeTool = Registry.unsafeMake([
      ...CodexCliCatalog.descriptors,
      Registry.mcpTool({ server: "gtb", wireName: "add", category: "search" })
    ])
    const result = ToolPolicy.toCodexPolicy({ registry: withBridgeTool }, { mcpServers: ["gtb"] })
    assert(Result.isSuccess(result))
    const bridge = result.success.config.filter((c) => c.startsWith("mcp_servers.gtb."))
    expect(bridge).toEqual([`mcp_servers.gtb.default_tools_approval_mode="approve"`])
  })
})
