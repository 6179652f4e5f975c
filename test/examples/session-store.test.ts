import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import { claudeBinary, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const first = "My favourite colour is teal. Remember it."
const second = "What is my favourite colour?"
const third = "And what did I ask you just before?"

/** How often `text` occurs in a request's messages (the history the model is given). */
const occurrences = (req: Fake.FakeRequest, text: string) =>
  JSON.stringify(req.body.messages ?? []).split(text).length - 1

describe("examples/session-store.ts", () => {
  it.live(
    "continues one conversation on three empty config dirs: from a SQLite store, then from a snapshot",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make((req) => {
          const asked = Fake.lastUserText(req)
          if (asked.includes(first)) return { text: "Noted: teal." }
          if (asked.includes(second)) return { text: "It is teal." }
          return { text: "You asked for your favourite colour." }
        })
        const box = yield* sandbox(api.url)
        const out = yield* Effect.callback<{ code: number | null; stdout: string; stderr: string }>((resume) => {
          const child = execFile(
            process.execPath,
            ["--import", "tsx", "examples/session-store.ts"],
            {
              env: { ...process.env, ...box.env, CLAUDE_BINARY: claudeBinary, CLAUDE_CWD: box.cwd },
              timeout: 150_000
            },
            (error, stdout, stderr) =>
              resume(Effect.succeed({ code: error ? (error.code as number) : 0, stdout, stderr }))
          )
          return Effect.sync(() => child.kill())
        })
        expect(out.stderr).toBe("")
        expect(out.code).toBe(0)
        expect(out.stdout).toContain("claude: Noted: teal.")
        expect(out.stdout).toContain("claude: It is teal.")
        expect(out.stdout).toContain("claude: You asked for your favourite colour.")
        expect(out.stdout).toMatch(/-- snapshot: \d+ entries, \d+ bytes of JSON/)
        // Each later turn's request carries the earlier turns exactly once: the history came along.
        const asking = (text: string) => api.messageRequests().filter((r) => Fake.lastUserText(r).includes(text))
        const [turn2] = asking(second)
        const [turn3] = asking(third)
        expect(occurrences(turn2!, first)).toBe(1)
        expect(occurrences(turn3!, first)).toBe(1)
        expect(occurrences(turn3!, second)).toBe(1)
        // The three "machines" and the store file were temporary folders of the run: all gone.
        expect(fs.readdirSync(box.env["TMPDIR"]!).filter((name) => name.startsWith("machine-"))).toEqual([])
      }),
    180_000
  )
})
