/**
 * The typed extension options (`thinking`, `tools`, `agents`, `sandbox`, `plugins`, `skills`):
 * their schema check, what the tool policy leaves out of them and reports, and the CLI flags and
 * Agent SDK options they become.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { cliFlags, sdkOptions } from "../../../src/internal/claude/codeRun.ts"
import * as Extensions from "../../../src/internal/claude/extensions.ts"
import * as ProviderPolicy from "../../../src/internal/claude/providerPolicy.ts"
import { queryOptions } from "../../../src/internal/claudeAgent/query.ts"
import * as ClaudeCodeCatalog from "../../../src/registry/ClaudeCodeCatalog.ts"
import * as ToolPolicy from "../../../src/registry/ToolPolicy.ts"

const policyOf = (disabledTools: ReadonlyArray<string>, extensions: Extensions.Extensions) =>
  Extensions.extendPolicy(extensions)(
    ToolPolicy.resolveValidated(ClaudeCodeCatalog.registry, { disabledTools }, { conditions: {}, headless: true })
  )

describe("Claude Code extension options", () => {
  it("invalid options are refused with what is wrong", () => {
    expect(Extensions.invalid({})).toBeUndefined()
    expect(Extensions.invalid({ thinking: { type: "enabled", budgetTokens: 0 } })).toContain("budgetTokens")
    expect(Extensions.invalid({ maxThinkingTokens: 1.5 })).toContain("maxThinkingTokens")
    expect(Extensions.invalid({ skills: ["bad name"] })).toContain("skills")
    expect(Extensions.invalid({ agents: { "a b": { description: "d", prompt: "p" } } })).toContain("agents")
    expect(Extensions.invalid({ plugins: [{ path: "/p", skipMcpDiscovery: false }] })).toBeUndefined()
    expect(Extensions.invalid({ plugins: [{ path: "/p", skipMcpDiscovery: false }], settingSources: ["user"] }))
      .toContain("settingSources")
  })

  it("a subagent's and the tools list's denied tools are left out and reported as denied", () => {
    const extensions: Extensions.Extensions = {
      tools: ["Read", "Bash"],
      agents: { reviewer: { description: "Reviews", prompt: "Review.", tools: ["Read", "Bash", "mcp__docs__get"] } }
    }
    const policy = policyOf(["Bash", "mcp__docs__*"], extensions)
    expect(policy.ignored.map((i) => [i.kind, i.entry])).toEqual([
      ["denied", "tools: Bash"],
      ["denied", "agents.reviewer.tools: Bash"],
      ["denied", "agents.reviewer.tools: mcp__docs__get"]
    ])
    expect(Extensions.toolsFor(extensions.tools, policy)).toEqual(["Read"])
    expect(Extensions.agentsFor(extensions.agents, policy)).toEqual({
      reviewer: { description: "Reviews", prompt: "Review.", tools: ["Read"] }
    })
    expect(Extensions.toolsFor("default", policy)).toBe("default")
    // Nothing denied: the policy is the same object.
    const open = ToolPolicy.resolveValidated(ClaudeCodeCatalog.registry, { disabledTools: [] }, {
      conditions: {},
      headless: true
    })
    expect(Extensions.extendPolicy({ tools: ["Read"] })(open)).toBe(open)
  })

  it("skills become allow entries, unless the policy denies Skill", () => {
    expect(policyOf([], { skills: "all" }).allowedTools).toContain("Skill")
    const named = policyOf([], { skills: ["pdf", "kit:greet"] })
    expect(named.allowedTools).toEqual(expect.arrayContaining(["Skill(pdf)", "Skill(kit:greet)"]))
    const registry = ClaudeCodeCatalog.registry
    const noSkill = ToolPolicy.resolveValidated(registry, { disabledTools: [] }, { conditions: {}, headless: true })
    const denied = Extensions.extendPolicy({ skills: ["pdf"] })({
      ...noSkill,
      disallowedTools: [...noSkill.disallowedTools, "Skill"]
    })
    expect(denied.allowedTools).not.toContain("Skill(pdf)")
    expect(denied.ignored).toMatchObject([{ kind: "denied", entry: "skills: pdf" }])
  })

  it("the provider policy refuses invalid options and, with strict, a denied tool", () =>
    Effect.gen(function*() {
      const base = {
        provider: "p",
        registry: ClaudeCodeCatalog.registry,
        disabledTools: ["Bash"],
        conditions: {},
        permissionMode: undefined,
        canUseTool: false,
        allowedTools: undefined,
        servers: []
      }
      const bad = yield* ProviderPolicy.make({ ...base, strict: false, extensions: { maxThinkingTokens: -1 } })
      expect(bad.refused?.message).toContain("maxThinkingTokens")
      const strict = yield* ProviderPolicy.make({ ...base, strict: true, extensions: { tools: ["Bash"] } })
      expect(strict.refused?.message).toContain("tools: Bash")
      const lax = yield* ProviderPolicy.make({ ...base, strict: false, extensions: { tools: ["Bash", "Read"] } })
      const policy = yield* lax.resolve([])
      expect(policy.ignored).toMatchObject([{ kind: "denied", entry: "tools: Bash" }])
    }).pipe(Effect.runPromise))

  it("CLI flags: thinking, the tools preset, plugins (MCP discovery off by default), filtered agents", () => {
    const policy = policyOf(["Bash"], {})
    const flags = cliFlags(
      {
        thinking: { type: "enabled", budgetTokens: 2048 },
        tools: ["Read", "Bash"],
        plugins: [{ path: "/a" }, { path: "/b", skipMcpDiscovery: false }],
        agents: { r: { description: "d", prompt: "p", tools: ["Bash", "Grep"] } }
      },
      undefined,
      policy
    )
    expect(flags).toEqual(expect.arrayContaining([
      "--max-thinking-tokens=2048",
      "--tools=Read",
      "--plugin-dir-no-mcp=/a",
      "--plugin-dir=/b",
      `--agents=${JSON.stringify({ r: { description: "d", prompt: "p", tools: ["Grep"] } })}`
    ]))
    expect(cliFlags({ thinking: { type: "disabled" }, tools: "default" }, undefined)).toEqual(
      expect.arrayContaining(["--thinking=disabled", "--tools=default"])
    )
    expect(cliFlags({ maxThinkingTokens: 512 }, undefined)).toContain("--max-thinking-tokens=512")
    expect(cliFlags({ tools: [] }, undefined)).toContain("--tools=")
  })

  it("Agent SDK options: thinking, the tools preset, plugins, a sandbox with failIfUnavailable on", () => {
    expect(sdkOptions({
      thinking: { type: "adaptive" },
      maxThinkingTokens: 100,
      tools: "default",
      plugins: [{ path: "/a" }, { path: "/b", skipMcpDiscovery: false }]
    }, undefined)).toMatchObject({
      thinking: { type: "adaptive" },
      maxThinkingTokens: 100,
      tools: { type: "preset", preset: "claude_code" },
      plugins: [
        { type: "local", path: "/a", skipMcpDiscovery: true },
        { type: "local", path: "/b", skipMcpDiscovery: false }
      ]
    })
    expect(Extensions.sdkSandbox({ enabled: true, network: { allowedDomains: ["example.com"] } })).toEqual({
      enabled: true,
      failIfUnavailable: true,
      network: { allowedDomains: ["example.com"], deniedDomains: undefined }
    })
    expect(Extensions.sandboxSettings({ enabled: true, failIfUnavailable: false })).toEqual({
      enabled: true,
      failIfUnavailable: false
    })
    expect(Extensions.mcpDiscovery({ plugins: [{ path: "/a" }] })).toBe(false)
  })

  it("ClaudeAgent: the sandbox as the SDK option, or in the library's own settings file when it writes one", () => {
    const policy = Extensions.noPolicy
    const perQuery = {
      params: {
        prompt: "hi",
        resume: Option.none(),
        fork: false,
        responseFormat: undefined,
        partialMessages: false,
        budgetUsd: undefined
      },
      policy,
      fromPolicy: ToolPolicy.toAgentSdkOptions(policy, { permissionMode: "default", headless: true }),
      bounded: { disallowedChunks: [], allowedTools: [], settings: undefined },
      settingsPath: undefined,
      canUseTool: undefined,
      controller: new AbortController(),
      onSpawn: () => undefined
    }
    const sandboxed = { sandbox: { enabled: true } }
    expect(queryOptions(sandboxed, perQuery).sandbox).toEqual({ enabled: true, failIfUnavailable: true })
    // The SDK refuses a sandbox beside a settings file path: the library put it in the file.
    expect(queryOptions(sandboxed, { ...perQuery, settingsPath: "/tmp/settings.json" }).sandbox).toBeUndefined()
    expect(queryOptions({}, perQuery).strictMcpConfig).toBe(true)
    expect(queryOptions({ plugins: [{ path: "/p", skipMcpDiscovery: false }] }, perQuery).strictMcpConfig).toBe(false)
  })
})
