import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { claudeProcessesIn, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const run = (env: Record<string, string | undefined>) =>
  Effect.callback<{ stdout: string; stderr: string; code: number }>((resume) => {
    // Asynchronous on purpose: the fake API answers from this process's event loop.
    execFile(
      process.execPath,
      ["--import", "tsx", "examples/claude-agent.ts"],
      { env, timeout: 90_000 },
      (error, stdout, stderr) =>
        resume(
          Effect.succeed({ stdout, stderr, code: error === null ? 0 : typeof error.code === "number" ? error.code : 1 })
        )
    )
  })

describe("examples/claude-agent.ts", () => {
  it.live(
    "holds a two-turn conversation with two in-process tools against a fake API",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const question = Fake.lastUserText(req)
          const results = Fake.toolResults(req)
          if (results.length > 0) return { text: `Done: ${results[0]!.content}` }
          if (question.includes("How many")) {
            return { toolUses: [{ name: "mcp__gtb__stock_level", input: { sku: "A-1" } }] }
          }
          if (question.includes("Reorder")) {
            return { toolUses: [{ name: "mcp__gtb__reorder", input: { sku: "A-1", quantity: 10 } }] }
          }
          return { text: "?" }
        })
        const box = yield* sandbox(api.url)
        const env: Record<string, string | undefined> = { ...process.env, ...box.env, CLAUDE_CWD: box.cwd }
        delete env["AI_PROVIDER"]
        const { code, stderr, stdout } = yield* run(env)
        expect({ code, stderr }).toMatchObject({ code: 0 })
        expect(stdout).toContain("tool stock_level(A-1) → 3")
        expect(stdout).toContain(`claude: Done: {"sku":"A-1","units":3}`)
        expect(stdout).toContain("tool reorder(A-1, 10) → now 13")
        expect(stdout).toContain("claude: Done: Ordered 10 of A-1; 13 in stock after delivery")
        expect(stdout).toMatch(/usage: \d+ in \/ \d+ out tokens/)
        // The second turn resumed the first: its request carries the first exchange.
        const last = api.messageRequests().at(-1)!
        expect(JSON.stringify(last.body.messages)).toContain("How many units of A-1")
        expect(claudeProcessesIn(box.cwd)).toEqual([])
      }),
    120_000
  )
})
