import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type * as TS from "typescript"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as DriftGuard from "../../src/registry/DriftGuard.ts"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "../..")
const fixture = path.join(here, "fixtures/sdk-tools.drifted.d.ts")
const bin = path.join(root, "src/registry/bin/check-claude-tools.ts")
// Generous: two cores are shared with other test files, and tsx compiles the bin on first run.
const runBin = (...args: Array<string>) =>
  spawnSync(process.execPath, ["--import", "tsx", bin, ...args], { cwd: root, encoding: "utf8", timeout: 60_000 })

describe("DriftGuard", () => {
  it.effect("passes against the pinned SDK", () =>
    Effect.gen(function*() {
      const report = yield* DriftGuard.check(ClaudeCodeCatalog.registry)
      expect(report).toMatchObject({ ok: true, missing: [], stale: [] })
      expect(report.sdkTools).toHaveLength(43)
      expect(report.sdkTools).toContain("ListMcpResourcesTool")
      expect(report.sdkTools).not.toContain("Mcp")
      // The output union is read too: Bash's output type, not the legacy BashOutput tool.
      expect(report.outputTools).toContain("Bash")
      expect(report.outputTools).toContain("SetGoal")
      expect(report.outputTools).not.toContain("Mcp")
      expect(report.outputTools.length).toBeGreaterThan(40)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("reports an added and a removed tool against a drifted .d.ts", () =>
    Effect.gen(function*() {
      const report = yield* DriftGuard.check(ClaudeCodeCatalog.registry, { sdkToolsPath: fixture })
      expect(report.ok).toBe(false)
      // Teleport is new in the input union; Hologram only has an output type.
      expect(report.missing).toEqual(["Hologram", "Teleport"])
      expect(report.stale).toEqual(["NotebookEdit"])
      expect(report.outputTools).toEqual(["Bash", "Edit", "Hologram"])
      const text = DriftGuard.formatReport(report)
      expect(text).toContain("missing: SDK tool Teleport")
      expect(text).toContain("stale: registry entry NotebookEdit")
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("a file without the union, or a missing file, is a DriftGuardError", () =>
    Effect.acquireUseRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "drift-"))),
      (dir) =>
        Effect.gen(function*() {
          const empty = path.join(dir, "empty.d.ts")
          fs.writeFileSync(empty, "export type Other = string\n")
          const e1 = yield* Effect.flip(DriftGuard.check(ClaudeCodeCatalog.registry, { sdkToolsPath: empty }))
          expect(e1._tag).toBe("DriftGuardError")
          expect(e1.message).toContain("no `type ToolInputSchemas`")
          const e2 = yield* Effect.flip(
            DriftGuard.check(ClaudeCodeCatalog.registry, { sdkToolsPath: path.join(dir, "nope.d.ts") })
          )
          expect(e2.message).toContain("cannot read")
        }),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ).pipe(Effect.provide(NodeFileSystem.layer)))

  it("the bin exits 0 on the pinned SDK and 1 on drift, naming both tools", () => {
    const ok = runBin()
    expect(ok.status, ok.stderr).toBe(0)
    expect(ok.stdout).toContain("in sync")
    expect(ok.stderr).toBe("")
    const drift = runBin(fixture)
    expect(drift.status).toBe(1)
    expect(drift.stderr).toContain("Teleport")
    expect(drift.stderr).toContain("NotebookEdit")
    const broken = runBin(path.join(here, "does-not-exist.d.ts"))
    expect(broken.status).toBe(2)
    expect(broken.stderr).toContain("check-claude-tools: cannot read")
  }, 180_000)
})

describe("DriftGuard.parseToolInputSchemas and the report", () => {
  // The same compiler the guard loads lazily.
  const ts = createRequire(import.meta.url)("typescript") as typeof TS

  it("a union of one member (no `|`) is read as that member; other aliases are skipped", () => {
    const parsed = DriftGuard.parseToolInputSchemas(
      ts,
      "export type Other = FooInput | BarInput\nexport type ToolInputSchemas = BashInput\n"
    )
    expect(Result.getOrThrow(parsed)).toEqual(["BashInput"])
  })

  it("a member that is not a plain type name (a literal type, a qualified name) is a DriftGuardError naming it", () => {
    const literal = DriftGuard.parseToolInputSchemas(ts, "type ToolInputSchemas = BashInput | { x: 1 }", "t.d.ts")
    expect(Result.isFailure(literal) && literal.failure.message).toBe(
      "t.d.ts: unexpected ToolInputSchemas member { x: 1 }"
    )
    const qualified = DriftGuard.parseToolInputSchemas(ts, "type ToolInputSchemas = ns.BashInput | GrepInput")
    expect(Result.isFailure(qualified) && qualified.failure.message).toContain("member ns.BashInput")
  })

  it("aliases and skipped members are applied by diff; an in-sync report formats as one summary line", () => {
    const registry = {
      ...ClaudeCodeCatalog.registry,
      descriptors: ClaudeCodeCatalog.registry.descriptors.filter((d) => ["Edit", "Bash"].includes(d.name))
    }
    const report = DriftGuard.diff(registry, ["FileEditInput", "BashInput", "McpInput", "ToolOutputSchemas"], [
      "FileEditOutput",
      "McpOutput"
    ])
    expect(report).toEqual({ sdkTools: ["Bash", "Edit"], outputTools: ["Edit"], missing: [], stale: [], ok: true })
    expect(DriftGuard.formatReport(report)).toBe(
      "claude-agent-sdk tools: 2 typed tools (1 with an output type), registry in sync"
    )
  })
})
