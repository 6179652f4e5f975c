import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as CatalogView from "../../src/registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as GeminiCliCatalog from "../../src/registry/GeminiCliCatalog.ts"
import * as GeminiDriftGuard from "../../src/registry/GeminiDriftGuard.ts"
import * as Registry from "../../src/registry/Registry.ts"

const here = path.dirname(fileURLToPath(import.meta.url))
const drifted = path.join(here, "fixtures/gemini-drifted")

describe("GeminiCliCatalog", () => {
  it("validates, and its settings view shows the toggleable built-ins with labels in every locale", () => {
    expect(GeminiCliCatalog.registry.descriptors).toHaveLength(27)
    const sections = CatalogView.view(GeminiCliCatalog.registry, { disabledTools: ["write_file"] })
    expect(sections.map((s) => [s.category, s.entries.map((e) => e.id)])).toEqual([
      ["shell", ["run_shell_command"]],
      ["file", ["read_file", "read_many_files", "list_directory", "replace", "write_file"]],
      ["search", ["glob", "grep_search"]]
    ])
    expect(sections[1]!.entries.find((e) => e.id === "write_file")).toMatchObject({
      label: "Write files",
      enabled: false
    })
    const zh = CatalogView.view(GeminiCliCatalog.registry, { disabledTools: [] }, { locale: "zh-TW" })
    expect(zh[0]!.entries[0]!.label).toBe("Shell 指令")
  })

  it("every Claude Code equivalent names a Claude Code catalog tool, every key a Gemini tool", () => {
    const gemini = new Set<string>(GeminiCliCatalog.descriptors.map((d) => d.name))
    for (const [tool, claude] of Object.entries(GeminiCliCatalog.claudeEquivalents)) {
      expect(gemini.has(tool), tool).toBe(true)
      for (const name of claude ?? []) expect(ClaudeCodeCatalog.registry.byName.has(name), name).toBe(true)
    }
  })

  it("merges with an application's MCP tools", () =>
    Effect.gen(function*() {
      const merged = yield* GeminiCliCatalog.makeRegistry([
        Registry.mcpTool({ server: "crm", wireName: "lookup", category: "search" })
      ])
      expect(merged.mcpServers).toEqual(["crm"])
      const dup = yield* Effect.result(GeminiCliCatalog.makeRegistry([GeminiCliCatalog.descriptors[0]]))
      expect(Result.isFailure(dup)).toBe(true)
    }).pipe(Effect.runSync))
})

describe("GeminiDriftGuard", () => {
  it.effect(
    "the catalog matches the installed @google/gemini-cli's ALL_BUILTIN_TOOL_NAMES",
    () =>
      Effect.gen(function*() {
        const report = yield* GeminiDriftGuard.check(GeminiCliCatalog.registry)
        expect(GeminiDriftGuard.formatReport(report)).toMatch(/catalog in sync/)
        expect(report).toMatchObject({ ok: true, missing: [], stale: [], version: GeminiCliCatalog.cliVersion })
        expect(report.cliTools).toHaveLength(27)
        expect(report.cliTools).toContain("run_shell_command")
      }).pipe(Effect.provide(NodeFileSystem.layer)),
    60_000
  )

  it.effect("reports a renamed and an added built-in against a drifted bundle", () =>
    Effect.gen(function*() {
      const report = yield* GeminiDriftGuard.check(GeminiCliCatalog.registry, { packageDir: drifted })
      expect(report).toMatchObject({
        ok: false,
        version: "0.0.0-drifted",
        missing: ["read_text", "summon_pixel"],
        stale: ["read_file"]
      })
      expect(GeminiDriftGuard.formatReport(report).split("\n")).toEqual([
        "missing: Gemini CLI built-in read_text has no catalog entry — classify it",
        "missing: Gemini CLI built-in summon_pixel has no catalog entry — classify it",
        "stale: catalog entry read_file is not a built-in of the installed Gemini CLI"
      ])
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it("parses literals and constants, and refuses a member it cannot resolve", () => {
    const ok = GeminiDriftGuard.parseBuiltinNames(
      `var A_TOOL_NAME = "alpha";\nvar ALL_BUILTIN_TOOL_NAMES = [\n  A_TOOL_NAME,\n  "beta"\n];`
    )
    expect(ok).toEqual(Result.succeed(["alpha", "beta"]))
    expect(GeminiDriftGuard.parseBuiltinNames("no list here")).toEqual(Result.succeed(undefined))
    const bad = GeminiDriftGuard.parseBuiltinNames(`var ALL_BUILTIN_TOOL_NAMES = [MISSING_TOOL_NAME];`)
    expect(Result.isFailure(bad) && bad.failure.message).toMatch(/no string constant MISSING_TOOL_NAME/)
  })
})
