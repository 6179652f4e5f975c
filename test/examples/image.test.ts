import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Buffer } from "node:buffer"
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeAnthropic from "../support/FakeMessagesApi.ts"
import * as FakeOpenAi from "../support/FakeOpenAi.ts"
import { pngBase64 } from "../support/media.ts"

const withoutCredentials = () => {
  const env: Record<string, string | undefined> = { ...process.env }
  for (const k of Object.keys(env)) {
    if (/^(ANTHROPIC|OPENAI|GEMINI|CLAUDE)_/.test(k) || k === "AI_PROVIDER") delete env[k]
  }
  return env
}

const runExample = (env: Record<string, string | undefined>, args: ReadonlyArray<string> = []) =>
  Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "examples/image.ts", ...args],
      { env, timeout: 60_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }))
    )
    return Effect.sync(() => child.kill())
  })

const userBlocks = (
  req: FakeAnthropic.FakeRequest
) => (req.body.messages!.at(-1)!.content as ReadonlyArray<Record<string, unknown>>)

describe("examples/image.ts", () => {
  it.effect("runs offline: the Scripted model decodes the generated PNG it was sent", () =>
    Effect.gen(function*() {
      const out = yield* runExample(withoutCredentials())
      expect(out.stderr).toBe("")
      expect(out.stdout).toContain("provider: scripted (offline)")
      expect(out.stdout).toContain("model: A 64×48 image, solid #e03c31.")
    }))

  it.effect("a file of a type no provider takes is refused with the typed error's message", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "image-example-"))
      writeFileSync(join(dir, "scan.bmp"), "BM")
      const out = yield* runExample(withoutCredentials(), [join(dir, "scan.bmp")])
      expect(out.stderr).toContain("not sent (MediaType)")
      expect(out.stdout).not.toContain("model:")
      rmSync(dir, { recursive: true })
    }))

  it.live("AI_PROVIDER=anthropic sends the generated PNG as an image block", () =>
    Effect.gen(function*() {
      const api = yield* FakeAnthropic.make(() => ({ text: "A red rectangle." }))
      const out = yield* runExample({
        ...withoutCredentials(),
        AI_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-test",
        ANTHROPIC_BASE_URL: api.url
      })
      expect(out.stderr).toBe("")
      expect(out.stdout).toContain("model: A red rectangle.")
      const [text, image] = userBlocks(api.messageRequests()[0]!)
      expect(text).toEqual({ type: "text", text: "What does this image show? Answer in one sentence." })
      expect(image).toMatchObject({ type: "image", source: { type: "base64", media_type: "image/png" } })
      const bytes = Buffer.from((image!["source"] as { data: string }).data, "base64")
      expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG")
      expect(bytes.readUInt32BE(16)).toBe(64)
    }))

  it.live("AI_PROVIDER=openai sends a file given on the command line as a data URL", () =>
    Effect.gen(function*() {
      const api = yield* FakeOpenAi.make(() => ({ text: "A pixel." }))
      const dir = mkdtempSync(join(tmpdir(), "image-example-"))
      writeFileSync(join(dir, "pixel.png"), Buffer.from(pngBase64, "base64"))
      const out = yield* runExample({
        ...withoutCredentials(),
        AI_PROVIDER: "openai",
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: api.url
      }, [join(dir, "pixel.png")])
      expect(out.stderr).toBe("")
      expect(out.stdout).toContain("model: A pixel.")
      expect(api.completionRequests()[0]!.body.messages!.at(-1)).toEqual({
        role: "user",
        content: [
          { type: "text", text: "What does this image show? Answer in one sentence." },
          { type: "image_url", image_url: { url: `data:image/png;base64,${pngBase64}` } }
        ]
      })
      rmSync(dir, { recursive: true })
    }))
})
