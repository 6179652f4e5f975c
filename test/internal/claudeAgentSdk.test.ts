import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { agentEnvironment, loadAgentSdk } from "../../src/internal/claudeAgentSdk.js"

describe("agentEnvironment", () => {
  it("keeps what the CLI needs, drops the rest, then applies the caller's changes", () => {
    const env = agentEnvironment(
      {
        PATH: "/bin",
        HOME: "/home/me",
        LC_ALL: "C",
        ANTHROPIC_API_KEY: "k",
        CLAUDE_CONFIG_DIR: "/cfg",
        HTTPS_PROXY: "http://proxy",
        DATABASE_URL: "postgres://secret",
        GITHUB_TOKEN: "ghp_secret",
        CLAUDECODE: "1",
        AWS_REGION: undefined
      },
      { HOME: "/tmp/home", EXTRA: "yes", CLAUDE_CONFIG_DIR: undefined }
    )
    expect(env).toEqual({
      PATH: "/bin",
      HOME: "/tmp/home",
      LC_ALL: "C",
      ANTHROPIC_API_KEY: "k",
      HTTPS_PROXY: "http://proxy",
      EXTRA: "yes"
    })
  })
})

describe("loadAgentSdk", () => {
  it.effect("loads the installed SDK", () =>
    Effect.gen(function*() {
      const sdk = yield* loadAgentSdk()
      expect(typeof sdk.query).toBe("function")
    }))

  it.effect("a missing package is a config ProviderError with an install hint", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(loadAgentSdk("@anthropic-ai/no-such-agent-sdk"))
      expect(error).toMatchObject({ _tag: "ProviderError", kind: "config", provider: "claude-agent", retryable: false })
      expect(error.message).toContain("npm install @anthropic-ai/claude-agent-sdk")
    }))

  it.effect("a module without `query` is rejected the same way", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(loadAgentSdk("node:path"))
      expect(error.kind).toBe("config")
      expect(error.message).toContain("no `query` export")
    }))
})
