/**
 * A thread's recorded totals, read back from its rollout file under `CODEX_HOME/sessions`: found at
 * any nesting Codex uses, the last complete `total_token_usage` line wins, nothing read when there
 * is nothing to read.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Threads from "../../../src/internal/codexCli/threads.ts"

const tokenCount = (usage: Record<string, unknown>) =>
  JSON.stringify({ type: "event_msg", payload: { type: "token_count", info: { total_token_usage: usage } } })

/** A fresh CODEX_HOME with `files` (relative to `sessions/`) written, removed after `body`. */
const withHome = (files: Record<string, string>, body: (home: string) => void) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-threads-"))
  try {
    for (const [name, text] of Object.entries(files)) {
      const file = path.join(home, "sessions", name)
      fs.mkdirSync(path.dirname(file), { recursive: true })
      fs.writeFileSync(file, text)
    }
    body(home)
  } finally {
    fs.rmSync(home, { recursive: true, force: true })
  }
}

describe("codexCli threads", () => {
  it("nothing to read: no sessions directory, or no rollout of that thread", () => {
    withHome({}, (home) => expect(Threads.recordedTotals(home, "t-1")).toBeUndefined())
    withHome({
      "2026/12/04/notes-t-1.jsonl": tokenCount({ input_tokens: 1 }),
      "2026/12/04/rollout-2026-t-2.jsonl": tokenCount({ input_tokens: 2 }),
      "2026/12/04/rollout-2026-t-1.json": tokenCount({ input_tokens: 3 })
    }, (home) => expect(Threads.recordedTotals(home, "t-1")).toBeUndefined())
  })

  it("takes the last complete totals, skipping a cut-short line and lines with no totals", () => {
    withHome(
      {
        "2026/12/04/rollout-2026-12-04T10-00-00-t-1.jsonl": [
          tokenCount({ input_tokens: 10, cached_input_tokens: 2, output_tokens: 1 }),
          tokenCount({ input_tokens: 50, cached_input_tokens: "many", output_tokens: 7 }),
          JSON.stringify({ type: "event_msg", payload: { type: "note", text: "\"total_token_usage\" is mentioned" } }),
          `{"type":"event_msg","payload":{"info":{"total_token_usage":{"input_tok`
        ].join("\n")
      },
      (home) =>
        expect(Threads.recordedTotals(home, "t-1")).toEqual({ inputTokens: 50, cachedInputTokens: 0, outputTokens: 7 })
    )
  })

  it("a rollout with no totals at all reads as nothing", () => {
    withHome({
      "2026/12/04/rollout-x-t-1.jsonl": [JSON.stringify({ type: "session_meta" }), "{\"total_token_usage\": cut"].join(
        "\n"
      )
    }, (home) => expect(Threads.recordedTotals(home, "t-1")).toBeUndefined())
  })

  it("looks as deep as year/month/day and one more level, no deeper", () => {
    withHome({
      "a/b/c/d/rollout-x-t-deep.jsonl": tokenCount({ input_tokens: 4 }),
      "a/b/c/d/e/rollout-x-t-deeper.jsonl": tokenCount({ input_tokens: 5 })
    }, (home) => {
      expect(Threads.recordedTotals(home, "t-deep")).toEqual({ inputTokens: 4, cachedInputTokens: 0, outputTokens: 0 })
      expect(Threads.recordedTotals(home, "t-deeper")).toBeUndefined()
    })
  })
})
