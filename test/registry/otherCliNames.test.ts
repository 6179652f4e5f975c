/**
 * The name translation the Gemini CLI and Codex CLI compiles share, on the real Gemini catalog:
 * Claude Code names become their Gemini equivalents (a wildcard those of every Claude tool it
 * matches), a Claude tool without an equivalent has nothing to turn off, other names pass as they
 * are; the merged registry is built once per caller registry; lists that are not strings are refused
 * with the resolution's own message.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as GeminiCliCatalog from "../../src/registry/GeminiCliCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import * as OtherCliNames from "../../src/registry/toolPolicy/otherCliNames.ts"

const names = OtherCliNames.makeNames(GeminiCliCatalog)
const crm = Registry.unsafeMake([Registry.mcpTool({ server: "crm", wireName: "lookup", category: "search" })])

describe("otherCliNames.globOf", () => {
  it("matches whole names and escapes the other regular-expression characters", () => {
    const glob = OtherCliNames.globOf("mcp__a.b__*")
    expect(glob.test("mcp__a.b__x")).toBe(true)
    expect(glob.test("mcp__aXb__x")).toBe(false)
    expect(glob.test("pre_mcp__a.b__x")).toBe(false)
  })
})

describe("otherCliNames.translate", () => {
  it("a Claude wildcard becomes the equivalents of every Claude tool it matches, and stays itself", () => {
    const { names: out, origin } = names.translate(GeminiCliCatalog.registry, ["Task*"])
    expect(new Set(out)).toEqual(
      new Set([
        "invoke_agent",
        "tracker_create_task",
        "tracker_update_task",
        "tracker_get_task",
        "tracker_list_tasks",
        "Task*"
      ])
    )
    expect(origin.get("tracker_get_task")).toBe("Task*")
  })

  it("a wildcard matching no Claude tool and an unknown name pass as they are", () => {
    expect(names.translate(GeminiCliCatalog.registry, ["Zz*", "mystery"]).names).toEqual(["Zz*", "mystery"])
  })

  it("keeps CLI and MCP names, maps Claude names, drops a Claude tool without an equivalent", () => {
    const { names: out, origin } = names.translate(GeminiCliCatalog.registry, [
      "glob",
      "mcp__crm__lookup",
      "Glob",
      "NotebookEdit"
    ])
    expect(out).toEqual(["glob", "mcp__crm__lookup", "list_directory", "glob"])
    // The first entry a name came from is the one reported.
    expect(origin.get("glob")).toBe("glob")
    expect(origin.get("list_directory")).toBe("Glob")
  })
})

describe("otherCliNames.registryOf", () => {
  it("is the catalog without a registry, the registry itself when it has the built-ins, else a merge built once", () => {
    expect(names.registryOf(undefined)).toEqual(Result.succeed(GeminiCliCatalog.registry))
    expect(names.registryOf(GeminiCliCatalog.registry)).toEqual(Result.succeed(GeminiCliCatalog.registry))
    const merged = names.registryOf(crm)
    expect(Result.isSuccess(merged) && merged.success.byName.has("mcp__crm__lookup")).toBe(true)
    expect(Result.isSuccess(merged) && merged.success.byName.has("read_file")).toBe(true)
    expect(names.registryOf(crm)).toBe(merged)
  })
})

describe("otherCliNames.resolveIn", () => {
  it("refuses lists that are not strings with the resolution's message", () => {
    const refused = OtherCliNames.resolveIn(
      names,
      { disabledTools: [42] as unknown as ReadonlyArray<string> },
      {},
      ToolPolicy.resolveToolPolicyUnknown
    )
    expect(Result.isFailure(refused) && refused.failure).toMatch(/disabledTools|string/)
  })

  it("says `invalid lists` when the resolution accepts what the translation cannot read", () => {
    const refused = OtherCliNames.resolveIn(
      names,
      { allowedTools: [null] as unknown as ReadonlyArray<string> },
      {},
      (registry) => ToolPolicy.resolveToolPolicy(registry, { disabledTools: [] }, { conditions: {}, headless: true })
    )
    expect(refused).toEqual(Result.fail("invalid lists"))
  })

  it("passes the translated lists and the session on to the resolution", () => {
    const seen: Array<unknown> = []
    const resolved = OtherCliNames.resolveIn(
      names,
      { disabledTools: ["Glob"], allowedTools: ["Read", "Web*"], conditions: { beta: true } },
      { mcpServers: ["bridge"], permissionMode: "default", canUseTool: true, headless: false },
      (registry, agent, ctx) => {
        seen.push(agent, ctx)
        return ToolPolicy.resolveToolPolicyUnknown(registry, agent, ctx)
      }
    )
    expect(seen).toEqual([
      { disabledTools: ["list_directory", "glob"] },
      {
        conditions: { beta: true },
        headless: false,
        permissionMode: "default",
        canUseTool: true,
        allowedTools: ["read_file", "read_many_files", "google_web_search", "web_fetch"],
        mcpServers: ["bridge"]
      }
    ])
    expect(Result.isSuccess(resolved) && resolved.success).toMatchObject({
      headless: false,
      extra: ["bridge"],
      allowed: ["read_file", "read_many_files", "google_web_search", "web_fetch"]
    })
  })
})
