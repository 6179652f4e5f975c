import { describe, expect, it } from "@effect/vitest"
import { applyOverrides } from "../../../src/internal/claude/overrides.ts"

interface Options {
  readonly model?: string | undefined
  readonly permissionMode?: string | undefined
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  readonly cwd?: string
}

describe("applyOverrides", () => {
  it("no override gives the very same options back", () => {
    const options: Options = { model: "opus", cwd: "/w" }
    expect(applyOverrides(options, {})).toBe(options)
  })

  it("a model override replaces the model; null goes back to the CLI's default (no model at all)", () => {
    const options: Options = { model: "opus", cwd: "/w", env: { A: "1" } }
    expect(applyOverrides(options, { model: "sonnet" })).toEqual({ model: "sonnet", cwd: "/w", env: { A: "1" } })
    const reset = applyOverrides(options, { model: null })
    expect(reset).toEqual({ cwd: "/w", env: { A: "1" } })
    expect("model" in reset).toBe(false)
  })

  it("other overrides keep the configured model, or its absence", () => {
    expect(applyOverrides<Options>({ model: "opus" }, { permissionMode: "plan" })).toEqual({
      model: "opus",
      permissionMode: "plan"
    })
    const noModel = applyOverrides<Options>({ cwd: "/w" }, { permissionMode: "acceptEdits" })
    expect(noModel).toEqual({ cwd: "/w", permissionMode: "acceptEdits" })
    expect("model" in noModel).toBe(false)
  })

  it("a thinking budget becomes MAX_THINKING_TOKENS next to the other env; null unsets it", () => {
    const options: Options = { env: { PATH: "/bin", MAX_THINKING_TOKENS: "100" } }
    expect(applyOverrides(options, { maxThinkingTokens: 2048 }).env).toEqual({
      PATH: "/bin",
      MAX_THINKING_TOKENS: "2048"
    })
    const unset = applyOverrides(options, { maxThinkingTokens: null }).env
    expect(unset).toEqual({ PATH: "/bin", MAX_THINKING_TOKENS: undefined })
    expect(applyOverrides<Options>({}, { maxThinkingTokens: 0 }).env).toEqual({ MAX_THINKING_TOKENS: "0" })
    // Without a budget override the env is left as configured.
    expect(applyOverrides(options, { model: "x" }).env).toBe(options.env)
  })
})
