import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { claudeBinary, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

describe("examples/effect-ai.ts", () => {
  it.live("an unchanged effect/ai program runs on the real claude CLI, offline", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        if ((req.body.tools ?? []).some((t) => t.name === "StructuredOutput")) {
          return {
            toolUses: [{
              name: "StructuredOutput",
              input: { city: "Lisbon", celsius: 24, advice: "Sunglasses." }
            }]
          }
        }
        const results = Fake.toolResults(req)
        if (results.length === 0) return { toolUses: [{ name: "mcp__gtb__get_weather", input: { city: "Lisbon" } }] }
        const weather = JSON.parse(results[0]!.content) as { celsius: number; sky: string }
        return { text: `It is ${weather.celsius}°C and ${weather.sky} in Lisbon.` }
      })
      const box = yield* sandbox(api.url)
      const out = yield* Effect.callback<{ code: number | null; stdout: string; stderr: string }>((resume) => {
        const child = execFile(
          process.execPath,
          ["--import", "tsx", "examples/effect-ai.ts"],
          {
            env: { ...process.env, ...box.env, CLAUDE_BINARY: claudeBinary, CLAUDE_CWD: box.cwd },
            timeout: 120_000
          },
          (error, stdout, stderr) =>
            resume(Effect.succeed({ code: error ? (error.code as number) : 0, stdout, stderr }))
        )
        return Effect.sync(() => child.kill())
      })
      expect(out.stderr).toBe("")
      expect(out.code).toBe(0)
      expect(out.stdout).toContain("  tool get_weather({\"city\":\"Lisbon\"})")
      expect(out.stdout).toContain("  result {\"city\":\"Lisbon\",\"celsius\":24,\"sky\":\"sunny\"}")
      expect(out.stdout).toContain("claude: It is 24°C and sunny in Lisbon.")
      expect(out.stdout).toContain("report: {\"city\":\"Lisbon\",\"celsius\":24,\"advice\":\"Sunglasses.\"}")
      // The structured request carried the first answer, and the system prompt of the layer.
      const structured = api.messageRequests().at(-1)!
      expect(Fake.lastUserText(structured)).toContain("It is 24°C and sunny in Lisbon.")
      expect(JSON.stringify(structured.body.system)).toContain("Answer briefly")
      // Two CLI runs plus a cold tsx start: slow on a loaded machine.
    }), 150_000)
})
