import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as CatalogView from "../../src/registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as CodexCliCatalog from "../../src/registry/CodexCliCatalog.ts"
import * as CodexDriftGuard from "../../src/registry/CodexDriftGuard.ts"
import * as Registry from "../../src/registry/Registry.ts"

describe("CodexCliCatalog", () => {
  it("the Codex catalog validates; its settings view shows exec_command, apply_patch and view_image in every locale", () => {
    expect(CodexCliCatalog.registry.descriptors).toHaveLength(24)
    const sections = CatalogView.view(CodexCliCatalog.registry, { disabledTools: ["apply_patch"] })
    expect(sections.map((s) => [s.category, s.entries.map((e) => e.id)])).toEqual([
      ["shell", ["group:bash"]],
      ["file", ["apply_patch"]],
      ["media", ["view_image"]]
    ])
    expect(sections[1]!.entries[0]).toMatchObject({ label: "Edit files", enabled: false })
    const zh = CatalogView.view(CodexCliCatalog.registry, { disabledTools: [] }, { locale: "zh-TW" })
    expect(zh[0]!.entries[0]!.label).toBe("Shell 指令")
    const cn = CatalogView.view(CodexCliCatalog.registry, { disabledTools: [] }, { locale: "zh-CN" })
    expect(cn[2]!.entries[0]!.label).toBe("查看图片")
  })

  it("every Claude Code equivalent names a Claude Code catalog tool, every key and control a Codex tool", () => {
    const codex = new Set<string>(CodexCliCatalog.descriptors.map((d) => d.name))
    for (const [tool, claude] of Object.entries(CodexCliCatalog.claudeEquivalents)) {
      expect(codex.has(tool), tool).toBe(true)
      for (const name of claude ?? []) expect(ClaudeCodeCatalog.registry.byName.has(name), name).toBe(true)
    }
    for (const tool of Object.keys(CodexCliCatalog.controls)) expect(codex.has(tool), tool).toBe(true)
    // Every tool the catalog lets a user or the catalog switch off has a switch.
    for (const d of CodexCliCatalog.descriptors) {
      if (d.exposure === "user" || d.exposure === "disabled") {
        expect(CodexCliCatalog.controls[d.name], d.name).toBeDefined()
      }
    }
    expect(CodexCliCatalog.fromClaudeNames(["Bash", "Edit", "Write", "NotebookEdit", "mcp__gtb__x", "web_search"]))
      .toEqual(["apply_patch", "exec_command", "mcp__gtb__x", "web_search"])
  })

  it("the Codex catalog merges with an application's MCP tools", () =>
    Effect.gen(function*() {
      const merged = yield* CodexCliCatalog.makeRegistry([
        Registry.mcpTool({ server: "crm", wireName: "lookup", category: "search" })
      ])
      expect(merged.mcpServers).toEqual(["crm"])
      const dup = yield* Effect.result(CodexCliCatalog.makeRegistry([CodexCliCatalog.descriptors[0]]))
      expect(Result.isFailure(dup)).toBe(true)
    }).pipe(Effect.runSync))
})

describe("CodexDriftGuard", () => {
  it("reads a Responses request's built-in names: functions, hosted tools and namespaces, not MCP servers", () => {
    const body = {
      tools: [
        { type: "function", name: "exec_command" },
        { type: "custom", name: "apply_patch" },
        { type: "web_search" },
        { type: "namespace", name: "multi_agent_v1", tools: [{ type: "function", name: "spawn_agent" }] },
        { type: "namespace", name: "mcp__gtb", tools: [{ type: "function", name: "lookup" }] }
      ]
    }
    expect(CodexDriftGuard.toolNamesOfRequest(body)).toEqual([
      "apply_patch",
      "exec_command",
      "spawn_agent",
      "web_search"
    ])
    expect(CodexDriftGuard.toolNamesOfRequest("not a body")).toEqual([])
  })

  it("reports a renamed and an added built-in and a removed feature", () => {
    const names = CodexCliCatalog.descriptors.map((d) => d.name as string)
      .map((n) => n === "view_image" ? "view_picture" : n)
    const features = new Set([
      "shell_tool",
      "unified_exec",
      "multi_agent",
      "multi_agent_v2",
      "request_permissions_tool"
    ])
    const report = CodexDriftGuard.diff(
      CodexCliCatalog.registry,
      [...names, "summon_pixel"],
      new Set([...features, "send_message_to_user_async", ...CodexCliCatalog.alwaysDisabledFeatures]),
      "0.0.0-drifted"
    )
    expect(report).toMatchObject({
      ok: false,
      missing: ["summon_pixel", "view_picture"],
      stale: ["view_image"],
      unknownFeatures: ["goals", "view_image"]
    })
    expect(CodexDriftGuard.formatReport(report).split("\n")).toEqual([
      "missing: Codex CLI built-in summon_pixel has no catalog entry — classify it",
      "missing: Codex CLI built-in view_picture has no catalog entry — classify it",
      "stale: catalog entry view_image is not a built-in of the installed Codex CLI",
      "feature: goals is not a feature of the installed Codex CLI",
      "feature: view_image is not a feature of the installed Codex CLI"
    ])
    expect(CodexDriftGuard.parseFeatures("apps   stable   true\nsearch_tool    removed   false\n")).toEqual(
      new Set(["apps"])
    )
  })

  it.effect(
    "the catalog matches the tools the installed @openai/codex sends",
    () =>
      Effect.gen(function*() {
        const report = yield* CodexDriftGuard.check(CodexCliCatalog.registry)
        expect(CodexDriftGuard.formatReport(report)).toMatch(/catalog in sync/)
        expect(report).toMatchObject({
          ok: true,
          missing: [],
          stale: [],
          unknownFeatures: [],
          version: CodexCliCatalog.cliVersion
        })
        expect(report.cliTools).toHaveLength(24)
        expect(report.cliTools).toContain("exec_command")
      }).pipe(Effect.provide(NodeFileSystem.layer)),
    120_000
  )
})
