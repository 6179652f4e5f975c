import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { claudeBinary, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

describe("examples/claude-local.ts", () => {
  it.live("runs a two-turn conversation with two tools through the real claude CLI", () =>
    Effect.gen(function*() {
      // A model that uses both tools, in order, then answers from their results.
      const api = yield* Fake.make((req) => {
        const results = Fake.toolResults(req)
        const asked = Fake.lastUserText(req)
        if (asked.includes("Lisbon") && results.length === 0) {
          return { toolUses: [{ name: "mcp__gtb__get_weather", input: { city: "Lisbon" } }] }
        }
        if (results.length === 1 && results[0]!.content.includes("celsius")) {
          const c = JSON.parse(results[0]!.content).celsius
          return { toolUses: [{ name: "mcp__gtb__to_fahrenheit", input: { celsius: c } }] }
        }
        if (results.length === 1) return { text: `It is ${results[0]!.content}°F in Lisbon.` }
        return { text: "Yes, Lisbon is warmer than Paris." }
      })
      const box = yield* sandbox(api.url)
      const out = yield* Effect.callback<{ code: number | null; stdout: string; stderr: string }>((resume) => {
        const child = execFile(
          process.execPath,
          ["--import", "tsx", "examples/claude-local.ts"],
          {
            env: { ...process.env, ...box.env, CLAUDE_BINARY: claudeBinary, CLAUDE_CWD: box.cwd },
            timeout: 100_000
          },
          (error, stdout, stderr) =>
            resume(Effect.succeed({ code: error ? (error.code as number) : 0, stdout, stderr }))
        )
        return Effect.sync(() => child.kill())
      })
      expect(out.stderr).toBe("")
      expect(out.code).toBe(0)
      expect(out.stdout).toContain(
        "tool get_weather({\"city\":\"Lisbon\"}) → {\"city\":\"Lisbon\",\"celsius\":24,\"sky\":\"sunny\"}"
      )
      expect(out.stdout).toContain("tool to_fahrenheit({\"celsius\":24}) → 75")
      expect(out.stdout).toContain("claude: It is 75°F in Lisbon.")
      expect(out.stdout).toContain("claude: Yes, Lisbon is warmer than Paris.")
      expect(out.stdout.split("\n")[0]).toMatch(
        new RegExp(`^claude CLI: ${claudeBinary.replace(/[.*+?^$()|[\]\\]/g, "\\$&")} \\(2\\.1\\.`)
      )
      expect(api.messageRequests()[0]!.body.system).toEqual(
        expect.arrayContaining([expect.objectContaining({ text: expect.stringContaining("Answer briefly") })])
      )
    }), 120_000)
})
