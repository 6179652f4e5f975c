import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runTsx } from "../support/runTsx.ts"

// Every example ends with `printFailure`: a failure is one `error: …` line on stderr and exit 1,
// never Effect's stack trace. Three examples on three different failures.
const run = (example: string, env: Record<string, string | undefined>) =>
  Effect.runPromise(runTsx(`examples/${example}`, env))

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

  it("quickstart.ts with an unknown AI_PROVIDER lists the providers it knows", async () => {
    expectOneLine(
      await run("quickstart.ts", { AI_PROVIDER: "bard" }),
      /^error: AI_PROVIDER must be one of scripted, anthropic, openai, gemini, claude-local, claude-agent \(got "bard"\)$/
    )
  }, 120_000)

  it("image.ts given a file that does not exist names the file and the reason", async () => {
    const missing = path.join(os.tmpdir(), "no-such-image.png")
    expectOneLine(
      await Effect.runPromise(runTsx("examples/image.ts", {}, [missing])),
      /^error: ImageFileError: cannot read the image ".*no-such-image\.png": pass a PNG, JPEG, GIF or WebP file \(ENOENT/
    )
  }, 120_000)

  it("cluster-client.ts on a SQLite file it cannot open adds the driver's reason to the SqlError", async () => {
    expectOneLine(
      await run("cluster-client.ts", { CLUSTER_SQLITE_FILE: "/nonexistent/dir/cluster.db" }),
      /^error: SqlError: Failed to open database \/nonexistent\/dir\/cluster\.db \(unable to open database file\)$/
    )
  }, 120_000)

  it(
    "claude-local.ts with a CLAUDE_PERMISSION_MODE it does not know names the variable, its value and the choices",
    async () => {
      expectOneLine(
        await run("claude-local.ts", { CLAUDE_PERMISSION_MODE: "yolo" }),
        /^error: ConfigError: CLAUDE_PERMISSION_MODE="yolo" is not valid: Expected "default" \| "acceptEdits" \| .*"manual"$/
      )
    },
    120_000
  )
})
