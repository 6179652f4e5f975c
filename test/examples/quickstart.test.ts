import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFileSync } from "node:child_process"
import { claudeBinary, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { runTsx, withoutCredentials } from "../support/runTsx.ts"

const runQuickstart = (env: Record<string, string | undefined>) => runTsx("examples/quickstart.ts", env)

/** A model that asks for both cities, converts Paris, and answers from the results it got. */
const weatherModel = (toolPrefix: string) => (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults(req)
  if (results.length === 0) {
    return {
      toolUses: [
        { name: `${toolPrefix}get_weather`, input: { city: "Paris" } },
        { name: `${toolPrefix}get_weather`, input: { city: "Atlantis" } }
      ]
    }
  }
  if (results.length === 2) {
    const celsius = JSON.parse(results[0]!.content).celsius
    return { toolUses: [{ name: `${toolPrefix}to_fahrenheit`, input: { celsius } }] }
  }
  return { text: `Paris: ${results[0]!.content}°F. Atlantis could not be found.` }
}

describe("examples/quickstart.ts (npm start)", () => {
  it("runs offline with no credentials and answers with a tool's result", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", "examples/quickstart.ts"], {
      env: withoutCredentials(),
      encoding: "utf8",
      timeout: 100_000
    })
    expect(out).toContain("provider: scripted (offline)")
    expect(out).toContain("tool get_weather({\"city\":\"Atlantis\"}) ✗ no weather station in Atlantis")
    // 64 is computed by the to_fahrenheit tool from get_weather's 18°C; the model only relays it.
    expect(out).toMatch(/model: In Paris it is 18°C \(64°F\).*no weather station in Atlantis/)
  }, 120_000)

  it.live(
    "AI_PROVIDER=anthropic (or gemini) without a key: one line naming the variable, no stack trace",
    () =>
      Effect.gen(function*() {
        for (
          const [provider, variable] of [["anthropic", "ANTHROPIC_API_KEY"], ["gemini", "GEMINI_API_KEY"]] as const
        ) {
          const out = yield* runQuickstart({ AI_PROVIDER: provider })
          expect(out.code, provider).toBe(1)
          const lines = out.stderr.trim().split("\n")
          expect(lines, out.stderr).toHaveLength(1)
          expect(lines[0]).toMatch(new RegExp(`^error: ProviderError: ${variable} is not set: get a key at https://`))
          expect(lines[0]).toContain("ClaudeLocal.layerFromEnv()")
          expect(out.stderr).not.toMatch(/\n\s+at /)
        }
      }),
    120_000
  )

  it.live("AI_PROVIDER=anthropic runs the same program on the Messages API", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(weatherModel(""))
      const out = yield* runQuickstart({
        AI_PROVIDER: "anthropic",
        ANTHROPIC_API_KEY: "sk-ant-test",
        ANTHROPIC_BASE_URL: api.url
      })
      expect(out.stderr).toBe("")
      expect(out.stdout).toContain("provider: anthropic")
      expect(out.stdout).toContain("tool get_weather({\"city\":\"Atlantis\"}) ✗ no weather station in Atlantis")
      expect(out.stdout).toContain("model: Paris: 64°F. Atlantis could not be found.")
      expect(Fake.toolResults(api.messageRequests()[1]!)[1]).toMatchObject({ is_error: true })
    }), 120_000)

  it.live("AI_PROVIDER=claude-local runs it on the real claude CLI through the bridge", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(weatherModel("mcp__gtb__"))
      const box = yield* sandbox(api.url)
      const out = yield* runQuickstart({
        ...box.env,
        AI_PROVIDER: "claude-local",
        CLAUDE_BINARY: claudeBinary,
        CLAUDE_CWD: box.cwd
      })
      expect(out.stderr).toBe("")
      expect(out.stdout).toContain("provider: claude-local")
      expect(out.stdout).toContain("tool to_fahrenheit({\"celsius\":18}) → 64")
      expect(out.stdout).toContain("model: Paris: 64°F. Atlantis could not be found.")
    }), 120_000)

  it.live("AI_PROVIDER=claude-agent runs it through the Claude Agent SDK", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make(weatherModel("mcp__gtb__"))
      const box = yield* sandbox(api.url)
      const out = yield* runQuickstart({
        ...box.env,
        AI_PROVIDER: "claude-agent",
        CLAUDE_BINARY: claudeBinary,
        CLAUDE_CWD: box.cwd
      })
      expect(out.stderr).toBe("")
      expect(out.stdout).toContain("provider: claude-agent")
      expect(out.stdout).toContain("model: Paris: 64°F. Atlantis could not be found.")
    }), 120_000)
})
