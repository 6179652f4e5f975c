import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import {
  describeClaude,
  describeFailure,
  exampleClaudeBinary,
  providerFromEnv
} from "../../examples/support/providers.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { claudeBinary, oldestClaudeBinary } from "../support/claudeCli.ts"
import * as FakeOpenAi from "../support/FakeOpenAi.ts"

const scripted = { name: "scripted (offline)", layer: Scripted.layer({ script: [Scripted.text("offline")] }) }
const pick = (env: Record<string, string>) => providerFromEnv({ scripted, env }).name
const buildFailure = (env: Record<string, string>) => {
  const exit = Effect.runSyncExit(Effect.scoped(Layer.build(providerFromEnv({ scripted, env }).layer)))
  return Exit.isFailure(exit) ? describeFailure(exit.cause) : "built"
}

describe("examples/support/providers.ts (providerFromEnv)", () => {
  it("prefers AI_PROVIDER, then credentials in order, then the offline fallback", () => {
    expect(pick({})).toBe("scripted (offline)")
    expect(pick({ GEMINI_API_KEY: "g", OPENAI_API_KEY: "o", ANTHROPIC_API_KEY: "a" })).toMatch(/^anthropic/)
    expect(pick({ GEMINI_API_KEY: "g", OPENAI_API_KEY: "o" })).toMatch(/^openai/)
    expect(pick({ OPENAI_BASE_URL: "http://127.0.0.1:11434/v1", OPENAI_MODEL: "llama3" })).toBe(
      "openai (llama3, custom base URL)"
    )
    expect(pick({ GEMINI_API_KEY: "g" })).toMatch(/^gemini/)
    expect(pick({ AI_PROVIDER: "gemini", ANTHROPIC_API_KEY: "a" })).toMatch(/^gemini/)
    expect(pick({ AI_PROVIDER: "scripted", ANTHROPIC_API_KEY: "a" })).toBe("scripted (offline)")
    // An unusable choice is a layer that fails when built (one `error: …` line), not a throw.
    expect(buildFailure({ AI_PROVIDER: "claude-local" })).toMatch(/claude-local is not available/)
    expect(buildFailure({ AI_PROVIDER: "bard" })).toMatch(/AI_PROVIDER must be one of scripted, .* \(got "bard"\)/)
  })

  it.live("the chosen HTTP layer works end to end (OpenAI-compatible server on loopback)", () =>
    Effect.gen(function*() {
      const api = yield* FakeOpenAi.make(() => ({ text: "from the fake" }))
      const env = { OPENAI_BASE_URL: api.url, OPENAI_MODEL: "local-model" }
      const choice = providerFromEnv({ scripted, env })
      const answer = yield* Effect.flatMap(ChatClient, (c) => c.chat("hi")).pipe(
        Effect.provide(
          choice.layer.pipe(
            Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
          )
        )
      )
      expect(answer).toBe("from the fake")
      expect(api.completionRequests()[0]!.body.model).toBe("local-model")
    }))

  it.live("examples run the pinned claude, not the oldest CLI npm puts first on PATH, and say which", () =>
    Effect.gen(function*() {
      // The PATH of npm scripts and npx starts with node_modules/.bin, whose `claude` is the oldest CLI.
      expect(exampleClaudeBinary({ PATH: `${process.cwd()}/node_modules/.bin:${process.env["PATH"]}` })).toBe(
        claudeBinary
      )
      expect(exampleClaudeBinary({ CLAUDE_BINARY: oldestClaudeBinary })).toBe(oldestClaudeBinary)
      expect(yield* describeClaude(claudeBinary)).toMatch(/^claude CLI: .+ \(2\.1\.\d+ \(Claude Code\)\)$/)
      expect(yield* describeClaude("/no/such/claude")).toContain("version unknown")
    }))
})
