import { describe, expect, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

// Every example ends with `printFailure`: a failure is one `error: …` line on stderr and exit 1,
// never Effect's stack trace. Three examples on three different failures.
const withoutCredentials = () => {
  const env: Record<string, string | undefined> = { ...process.env }
  for (const k of Object.keys(env)) {
    if (/^(ANTHROPIC|OPENAI|GEMINI|CLAUDE)_/.test(k) || k === "AI_PROVIDER") delete env[k]
  }
  return env
}

const run = (example: string, env: Record<string, string | undefined>, args: ReadonlyArray<string> = []) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", `examples/${example}`, ...args],
      { env: { ...withoutCredentials(), ...env }, timeout: 100_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
    )
  })

const expectOneLine = (out: { code: number; stderr: string }, pattern: RegExp) => {
  expect(out.code, out.stderr).toBe(1)
  const lines = out.stderr.trim().split("\n")
  expect(lines, out.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(pattern)
  expect(out.stderr).not.toMatch(/\n\s+at |FiberFailure|\[cause\]/)
}

describe("examples print a failure as one line", () => {
  it("stream.ts with AI_PROVIDER=gemini and no key names the variable", async () => {
    expectOneLine(await run("stream.ts", { AI_PROVIDER: "gemini" }), /^error: ProviderError: GEMINI_API_KEY is not set/)
  }, 120_000)

  it("image.ts with AI_PROVIDER=anthropic and no key names the variable", async () => {
    expectOneLine(
      await run("image.ts", { AI_PROVIDER: "anthropic" }),
      /^error: ProviderError: ANTHROPIC_API_KEY is not set/
    )
  }, 120_000)

  it("claude-local.ts with a CLAUDE_BINARY that does not exist names the path and the variable", async () => {
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), "no-claude-"))
    const missing = path.join(folder, "claude")
    const out = await run("claude-local.ts", { CLAUDE_BINARY: missing }).finally(() =>
      fs.rmSync(folder, { recursive: true, force: true })
    )
    expectOneLine(out, /^error: /)
    expect(out.stderr).toContain(missing)
    expect(out.stderr).toContain("CLAUDE_BINARY")
  }, 120_000)
})
