import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")

describe("examples/tool-policy.ts", () => {
  it("prints the policy and the CLI flags for the sample agent", () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "examples/tool-policy.ts"], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000
    })
    expect(r.stderr).toBe("")
    expect(r.status).toBe(0)
    const line = (label: string) =>
      r.stdout.split("\n").find((l) => l.startsWith(`${label}: `))?.slice(label.length + 2)
    const disallowed = line("disallowedTools")!.split(", ")
    expect(disallowed).toEqual(
      expect.arrayContaining([
        "Bash",
        "BashOutput",
        "WebSearch",
        "AskUserQuestion",
        "mcp__docs__*",
        "mcp__memory__remember"
      ])
    )
    expect(disallowed).not.toContain("Read")
    expect(line("allowedTools")).toBe("mcp__gtb__*, mcp__memory__recall")
    expect(line("mountedServers")).toBe("gtb, memory")
    const flags = JSON.parse(line("claude flags")!) as Array<string>
    expect(flags).toEqual([
      "--disallowedTools",
      disallowed.join(","),
      "--allowedTools",
      "mcp__gtb__*,mcp__memory__recall"
    ])
  })
})
