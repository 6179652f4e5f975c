import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import * as Fake from "../support/FakeMessagesApi.ts"

const withoutCredentials = () => {
  const env: Record<string, string | undefined> = { ...process.env }
  for (const k of Object.keys(env)) {
    if (/^(ANTHROPIC|OPENAI|GEMINI|CLAUDE)_/.test(k) || k === "AI_PROVIDER") delete env[k]
  }
  return env
}

const runExample = (env: Record<string, string | undefined>) =>
  Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "examples/stream.ts"],
      { env, timeout: 60_000 },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }))
    )
    return Effect.sync(() => child.kill())
  })

describe("examples/stream.ts", () => {
  it.live("offline: prints the streamed text with the tool call between, then usage", () =>
    Effect.gen(function*() {
      const { code, stdout, stderr } = yield* runExample(withoutCredentials())
      expect(stderr).toBe("")
      expect(code).toBe(0)
      const lines = stdout.split("\n")
      expect(lines.slice(0, 6)).toEqual([
        "provider: scripted (offline)",
        "you: What's the weather like in Lisbon?",
        "model: Let me look that up. ",
        "[tool get_weather {\"city\":\"Lisbon\"}]",
        "[result get_weather: {\"city\":\"Lisbon\",\"celsius\":24,\"sky\":\"sunny\"}]",
        "It is 24°C and sunny in Lisbon: a fine day for a walk by the river."
      ])
      expect(lines[6]).toMatch(/^usage: [1-9]\d* in \/ [1-9]\d* out tokens$/)
      expect(lines.slice(7)).toEqual([""])
    }), 90_000)

  it.live("on the Messages API (a local fake): streams over SSE and runs the tool", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) =>
        Fake.toolResults(req).length === 0
          ? { text: "Checking.", toolUses: [{ id: "tu_1", name: "get_weather", input: { city: "Paris" } }] }
          : {
            text: `Paris: ${JSON.parse(Fake.toolResults(req)[0]!.content).celsius}°C.`,
            usage: { input_tokens: 40, output_tokens: 6 }
          }
      )
      const { code, stdout, stderr } = yield* runExample({
        ...withoutCredentials(),
        AI_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-example-test",
        ANTHROPIC_BASE_URL: api.url
      })
      expect(stderr).toBe("")
      expect(code).toBe(0)
      expect(stdout).toContain("model: Checking.\n[tool get_weather {\"city\":\"Paris\"}]\n[result get_weather: ")
      expect(stdout).toContain("]\nParis: 18°C.\n")
      expect(api.messageRequests().map((r) => r.body.stream)).toEqual([true, true])
    }), 90_000)
})
