/**
 * A Codex thread's token totals as its rollout file in `CODEX_HOME/sessions` last recorded them.
 * `turn.completed` reports usage summed over the whole thread; a client that resumes a thread it
 * did not start subtracts these to count only its own turns.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { ThreadUsage } from "./events.ts"

/** How deep `sessions/` nests rollout files (year/month/day). */
const MaxDepth = 4

const findRollout = (dir: string, suffix: string, depth: number): string | undefined => {
  let entries: Array<fs.Dirent>
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return undefined
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name)
    if (entry.isFile() && entry.name.startsWith("rollout-") && entry.name.endsWith(suffix)) return full
    if (entry.isDirectory() && depth < MaxDepth) {
      const found = findRollout(full, suffix, depth + 1)
      if (found !== undefined) return found
    }
  }
  return undefined
}

/** The last `token_count` totals of `threadId`'s rollout; `undefined` when there is none to read. */
export const recordedTotals = (codexHome: string, threadId: string): ThreadUsage | undefined => {
  const file = findRollout(path.join(codexHome, "sessions"), `-${threadId}.jsonl`, 0)
  if (file === undefined) return undefined
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
  const lines = text.split("\n")
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i]!.includes(`"total_token_usage"`)) continue
    try {
      const total = (JSON.parse(lines[i]!) as {
        readonly payload?: { readonly info?: { readonly total_token_usage?: Record<string, unknown> } }
      }).payload?.info?.total_token_usage
      if (total === undefined) continue
      const n = (v: unknown) => (typeof v === "number" ? v : 0)
      return {
        inputTokens: n(total["input_tokens"]),
        cachedInputTokens: n(total["cached_input_tokens"]),
        outputTokens: n(total["output_tokens"])
      }
    } catch {
      // A line cut short by a crash: look further back.
    }
  }
  return undefined
}
