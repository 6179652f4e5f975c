/**
 * GeminiDriftGuard on hand-made packages and bundle texts: every way a package can be unreadable or
 * its list malformed is a `DriftGuardError` naming the file and what is wrong, and the list parser
 * resolves the constants a bundler writes (comments, trailing commas, `$` in names, renamed clashes).
 * The installed CLI and the drifted fixture are checked in `GeminiCliCatalog.test.ts`.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as GeminiCliCatalog from "../../src/registry/GeminiCliCatalog.ts"
import * as GeminiDriftGuard from "../../src/registry/GeminiDriftGuard.ts"
import * as Registry from "../../src/registry/Registry.ts"

/** One Gemini built-in (`read_file`) and an MCP tool, which the guard does not compare. */
const registry = Registry.unsafeMake([
  GeminiCliCatalog.descriptors.find((d) => d.name === "read_file")!,
  Registry.mcpTool({ server: "app", wireName: "ping", category: "search" })
])

/** A package directory with `files` (relative path → content), removed after the test. */
const packageDir = (files: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-gemini-drift-"))
      for (const [name, content] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true })
        fs.writeFileSync(path.join(dir, name), content)
      }
      return dir
    }),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

const checkFailure = (files: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const dir = yield* packageDir(files)
    const error = yield* Effect.flip(GeminiDriftGuard.check(registry, { packageDir: dir }))
    return { dir, error }
  }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer))

const list = (members: string) => `var ALL_BUILTIN_TOOL_NAMES = [${members}];`

describe("GeminiDriftGuard.parseBuiltinNames", () => {
  it("skips comments and a trailing comma, and resolves `$` names and the first declaration", () => {
    const source = `var $X_TOOL_NAME = "dollar";\nvar B = "first";\nvar B = "second";\n` +
      list(`\n  $X_TOOL_NAME, // a comment\n  B,\n  "lit",\n`)
    expect(GeminiDriftGuard.parseBuiltinNames(source)).toEqual(Result.succeed(["dollar", "first", "lit"]))
  })

  it("ignores a declaration after the list", () => {
    const result = GeminiDriftGuard.parseBuiltinNames(`${list("LATE")}\nvar LATE = "late";`, "chunk.js")
    expect(Result.isFailure(result) && result.failure.message).toBe("chunk.js: no string constant LATE")
  })

  it("refuses an unclosed list and a member that is neither a literal nor a constant", () => {
    const open = GeminiDriftGuard.parseBuiltinNames(`var ALL_BUILTIN_TOOL_NAMES = ["a", "b"`, "open.js")
    expect(Result.isFailure(open) && open.failure).toMatchObject({
      _tag: "DriftGuardError",
      message: "open.js: ALL_BUILTIN_TOOL_NAMES is not closed"
    })
    const call = GeminiDriftGuard.parseBuiltinNames(list(`"a", makeName("b")`))
    expect(Result.isFailure(call) && call.failure.message).toBe("bundle: unexpected list member makeName(\"b\")")
  })
})

describe("GeminiDriftGuard.diff and formatReport", () => {
  it("compares only the registry's built-ins and deduplicates the CLI's names", () => {
    const report = GeminiDriftGuard.diff(registry, ["read_file", "read_file", "glob"], "1.2.3")
    expect(report).toEqual({
      version: "1.2.3",
      cliTools: ["glob", "read_file"],
      missing: ["glob"],
      stale: [],
      ok: false
    })
    const inSync = GeminiDriftGuard.diff(registry, ["read_file"])
    expect(inSync).toMatchObject({ ok: true, version: undefined })
    expect(GeminiDriftGuard.formatReport(inSync)).toBe("gemini-cli  tools: 1 built-ins, catalog in sync")
  })
})

describe("GeminiDriftGuard.check", () => {
  it.effect("agrees chunks are read, non-`.js` files skipped, and the version read", () =>
    Effect.gen(function*() {
      const dir = yield* packageDir({
        "package.json": JSON.stringify({ version: "9.9.9" }),
        "bundle/a.js": `var R = "read_file";\n${list(`R, "glob"`)}`,
        "bundle/b.js": list(`"glob", "read_file"`),
        "bundle/c.js": "console.log('no list')",
        "bundle/notes.txt": list(`"ignored"`)
      })
      const report = yield* GeminiDriftGuard.check(registry, { packageDir: dir })
      expect(report).toEqual({
        version: "9.9.9",
        cliTools: ["glob", "read_file"],
        missing: ["glob"],
        stale: [],
        ok: false
      })
    }).pipe(Effect.scoped, Effect.provide(NodeFileSystem.layer)))

  it.effect("refuses chunks that disagree", () =>
    Effect.gen(function*() {
      const { error } = yield* checkFailure({
        "package.json": "{}",
        "bundle/a.js": list(`"read_file"`),
        "bundle/b.js": list(`"read_file", "glob"`)
      })
      expect(error).toMatchObject({
        _tag: "DriftGuardError",
        message: "a.js and b.js disagree on ALL_BUILTIN_TOOL_NAMES: read_file vs read_file,glob"
      })
    }))

  it.effect("refuses a bundle without the list, naming the bundle directory", () =>
    Effect.gen(function*() {
      const { dir, error } = yield* checkFailure({ "package.json": "{}", "bundle/a.js": "var x = 1;" })
      expect(error.message).toBe(`${path.join(dir, "bundle")}: no chunk declares ALL_BUILTIN_TOOL_NAMES`)
    }))

  it.effect("a malformed chunk fails with its file name", () =>
    Effect.gen(function*() {
      const { error } = yield* checkFailure({ "package.json": "{}", "bundle/bad.js": list("NOPE") })
      expect(error.message).toBe("bad.js: no string constant NOPE")
    }))

  it.effect("a missing package.json or bundle directory says what could not be read", () =>
    Effect.gen(function*() {
      const noPackage = yield* checkFailure({ "bundle/a.js": list(`"read_file"`) })
      expect(noPackage.error.message).toMatch(
        new RegExp(`^cannot read ${noPackage.dir.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")}: `)
      )
      const noBundle = yield* checkFailure({ "package.json": "{}" })
      expect(noBundle.error.message.startsWith(`cannot read ${path.join(noBundle.dir, "bundle")}: `)).toBe(true)
    }))
})
