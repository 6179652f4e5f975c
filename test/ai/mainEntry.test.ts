import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"

// On Effect 4 `effect/ai` ships inside `effect`, so it cannot be missing; what stays true is that
// the main entry never loads it (only `effect-chat-bridge/effect-ai` does). A resolve hook, inlined
// as a data: URL, makes every module of effect/ai unresolvable — by bare specifier or by the
// relative imports inside effect's own dist — as in the v3 test with `@effect/ai` uninstalled.
const hook = `export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context)
  if (/\\/node_modules\\/effect\\/dist\\/ai\\//.test(resolved.url)) {
    const error = new Error("Cannot find module '" + specifier + "' (effect/ai is hidden by test/ai/mainEntry.test.ts)")
    error.code = "ERR_MODULE_NOT_FOUND"
    throw error
  }
  return resolved
}`
const hideEffectAi = `data:text/javascript,${
  encodeURIComponent(
    `import { register } from "node:module"; register(${
      JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)
    })`
  )
}`

/** Imports `entry` in a fresh Node process where no effect/ai module can be resolved. */
const importWithoutEffectAi = (entry: string) =>
  new Promise<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resolve) => {
    const script = `const m = await import(${JSON.stringify(entry)}); console.log(Object.keys(m).sort().join(","))`
    execFile(
      process.execPath,
      ["--import", "tsx", "--import", hideEffectAi, "--input-type=module", "-e", script],
      { timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
    )
  })

describe("effect/ai stays out of the main entry", () => {
  it("the main entry loads without effect/ai", async () => {
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
    expect(entry.stderr).toContain("effect/ai is hidden")
  }, 120_000)
})
