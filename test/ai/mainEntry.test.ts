import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"

/** Imports `entry` in a fresh Node process where `@effect/ai` cannot be resolved. */
const importWithoutEffectAi = (entry: string) =>
  new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const script = `const m = await import(${JSON.stringify(entry)}); console.log(Object.keys(m).sort().join(","))`
    execFile(
      process.execPath,
      ["--import", "tsx", "--import", "./test/support/withoutEffectAi.mjs", "--input-type=module", "-e", script],
      { timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
    )
  })

describe("@effect/ai stays optional", () => {
  it("the main entry loads without @effect/ai installed", async () => {
    const main = await importWithoutEffectAi("./src/index.ts")
    expect(main.stderr).toBe("")
    expect(main.code).toBe(0)
    expect(main.stdout).toContain("ChatClient")
    expect(main.stdout).toContain("ClaudeLocal")
    expect(main.stdout).not.toContain("ChatLanguageModel")
  }, 120_000)

  it("the effect-ai entry needs it (so the check above is real)", async () => {
    const entry = await importWithoutEffectAi("./src/effect-ai.ts")
    expect(entry.code).not.toBe(0)
    expect(entry.stderr).toContain("Cannot find package '@effect/ai/")
  }, 120_000)
})
