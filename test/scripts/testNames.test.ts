import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)
const repo = resolve(import.meta.dirname, "../..")

/** Runs `scripts/test-names.ts --diff <names> <folder>` and returns its exit code and output. */
const diff = async (names: string, folder: string) => {
  try {
    const { stdout } = await run(process.execPath, [
      "--import",
      "tsx",
      "scripts/test-names.ts",
      "--diff",
      names,
      folder
    ], {
      cwd: repo
    })
    return { code: 0, stdout }
  } catch (error) {
    const failed = error as { readonly code?: number; readonly stdout?: string }
    return { code: failed.code ?? 1, stdout: failed.stdout ?? "" }
  }
}

describe("scripts/test-names.ts --diff", () => {
  it("every test of the Effect 3 line exists here by name, or test/renamedTests.json says why not", async () => {
    const { code, stdout } = await diff("test/v3TestNames.txt", "test")
    assert.strictEqual(code, 0, stdout)
    assert.match(stdout, /, 0 missing;/)
  }, 120_000)

  it("a v3 test with no v4 counterpart is reported and fails the run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "test-names-"))
    try {
      mkdirSync(join(dir, "suite"))
      writeFileSync(join(dir, "suite", "a.test.ts"), `describe("a", () => { it("kept", () => {}) })\n`)
      writeFileSync(join(dir, "names.txt"), "a.test.ts: a > kept\na.test.ts: a > dropped\n")
      const { code, stdout } = await diff(join(dir, "names.txt"), join(dir, "suite"))
      assert.strictEqual(code, 1)
      assert.include(stdout, "missing: a.test.ts: a > dropped")
      assert.include(stdout, "2 v3 tests: 1 ported by name, 0 explained in test/renamedTests.json, 1 missing")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
