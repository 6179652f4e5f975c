import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"

describe("examples/quickstart.ts (npm start)", () => {
  it("runs offline with no credentials and answers with a tool's result", () => {
    const env: Record<string, string | undefined> = { ...process.env }
    for (const k of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "AI_PROVIDER"]) delete env[k]
    const out = execFileSync(process.execPath, ["--import", "tsx", "examples/quickstart.ts"], {
      env,
      encoding: "utf8",
      timeout: 60_000
    })
    expect(out).toContain("provider: scripted (offline)")
    expect(out).toContain("tool get_weather({\"city\":\"Atlantis\"}) ✗ no weather station in Atlantis")
    // 64 is computed by the to_fahrenheit tool from get_weather's 18°C; the model only relays it.
    expect(out).toMatch(/model: In Paris it is 18°C \(64°F\).*no weather station in Atlantis/)
  })
})
