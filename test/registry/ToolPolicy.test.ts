import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, ParseResult } from "effect"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.js"
import * as Registry from "../../src/registry/Registry.js"
import * as ToolPolicy from "../../src/registry/ToolPolicy.js"

const registry = Registry.unsafeMake([
  ...ClaudeCodeCatalog.descriptors,
  Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" }),
  Registry.mcpTool({ server: "memory", wireName: "remember", category: "context" }),
  Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" }),
  Registry.mcpTool({ server: "skills", wireName: "old_tool", category: "context", exposure: "disabled" })
])

const resolve = (disabledTools: ReadonlyArray<string>, ctx: Partial<ToolPolicy.PolicyContext> = {}) =>
  Either.getOrThrow(
    ToolPolicy.resolveToolPolicy(registry, { disabledTools }, { conditions: {}, headless: false, ...ctx })
  )

const names = (p: (d: (typeof registry.descriptors)[number]) => boolean) =>
  registry.descriptors.filter(p).map((d) => d.name)

describe("resolveToolPolicy: rules", () => {
  it("nothing disabled, not headless, git workspace (snapshot)", () => {
    const policy = resolve([], { conditions: { "workspace-has-git": true } })
    expect(policy).toEqual({
      disallowedTools: [
        "Artifact",
        "ClaudeDesign",
        "CronCreate",
        "CronDelete",
        "CronList",
        "Monitor",
        "NotebookEdit",
        "OfferChromeSetup",
        "Projects",
        "PushNotification",
        "ReadNotifications",
        "RemoteTrigger",
        "ScheduleWakeup",
        "SendFeedback",
        "SetGoal",
        "ShowOnboardingRolePicker",
        "TodoWrite",
        "WebFetch",
        "WebSearch",
        "mcp__skills__old_tool",
        "propose_skills"
      ],
      allowedTools: ["mcp__memory__recall", "mcp__memory__remember", "mcp__skills__search_skills"],
      mountedServers: ["memory", "skills"],
      responderTools: ["AskUserQuestion", "EnterPlanMode", "EnterWorktree", "ExitPlanMode"]
    })
  })

  it("the shipped catalog alone disallows exactly its disabled tools plus the worktree pair without git", () => {
    const policy = Either.getOrThrow(
      ToolPolicy.resolveToolPolicy(ClaudeCodeCatalog.registry, { disabledTools: [] }, {
        conditions: {},
        headless: false
      })
    )
    expect(policy.disallowedTools).toEqual(
      [...names((d) => d.exposure === "disabled" && d.kind === "sdk"), "EnterWorktree", "ExitWorktree"].sort()
    )
    expect(policy.allowedTools).toEqual([])
    expect(policy.mountedServers).toEqual([])
  })

  it("disabled tools are always disallowed, even when the agent lists nothing", () => {
    expect(resolve([]).disallowedTools).toEqual(expect.arrayContaining(["WebSearch", "WebFetch", "TodoWrite"]))
  })

  it("internal tools named in disabledTools are ignored", () => {
    const policy = resolve(["Agent", "ToolSearch", "mcp__skills__search_skills"])
    expect(policy.disallowedTools).not.toContain("Agent")
    expect(policy.disallowedTools).not.toContain("ToolSearch")
    expect(policy.disallowedTools).not.toContain("mcp__skills__search_skills")
    expect(policy.allowedTools).toContain("mcp__skills__search_skills")
  })

  it("conditional: disallowed iff the condition is false or missing", () => {
    expect(resolve([], { conditions: { "workspace-has-git": true } }).disallowedTools).not.toContain("EnterWorktree")
    expect(resolve([], { conditions: { "workspace-has-git": false } }).disallowedTools).toEqual(
      expect.arrayContaining(["EnterWorktree", "ExitWorktree"])
    )
    expect(resolve([], { conditions: {} }).disallowedTools).toEqual(
      expect.arrayContaining(["EnterWorktree", "ExitWorktree"])
    )
  })

  it("user: disallowed when named; pair atomicity pulls in the internal sibling", () => {
    const policy = resolve(["Bash", "Read"])
    expect(policy.disallowedTools).toEqual(expect.arrayContaining(["Bash", "BashOutput", "Read"]))
    expect(policy.disallowedTools).not.toContain("Edit")
    expect(resolve([]).disallowedTools).not.toContain("BashOutput")
  })

  it("disabled MCP tools leave allowedTools and enter disallowedTools", () => {
    const policy = resolve(["mcp__memory__remember"])
    expect(policy.disallowedTools).toContain("mcp__memory__remember")
    expect(policy.allowedTools).toEqual(["mcp__memory__recall", "mcp__skills__search_skills"])
  })

  it("unknown mcp__ names and wildcards pass through", () => {
    const policy = resolve(["mcp__docs__search", "mcp__docs__*"])
    expect(policy.disallowedTools).toEqual(expect.arrayContaining(["mcp__docs__search", "mcp__docs__*"]))
    expect(policy.mountedServers).toEqual(["memory", "skills"])
  })

  it("a wildcard over a registry or extra server unmounts it and drops its allow entries", () => {
    const policy = resolve(["mcp__memory__*", "mcp__gtb__*"], { mcpServers: ["gtb"] })
    expect(policy.disallowedTools).toEqual(expect.arrayContaining(["mcp__memory__*", "mcp__gtb__*"]))
    expect(policy.allowedTools).toEqual(["mcp__skills__search_skills"])
    expect(policy.mountedServers).toEqual(["skills"])
  })

  it("extra servers (the bridge) are mounted and auto-approved by wildcard; single opt-outs still win", () => {
    const policy = resolve(["mcp__gtb__add"], { mcpServers: ["gtb"] })
    expect(policy.allowedTools).toContain("mcp__gtb__*")
    expect(policy.disallowedTools).toContain("mcp__gtb__add")
    expect(policy.mountedServers).toEqual(["gtb", "memory", "skills"])
  })

  it("names that are neither user tools nor mcp__ references are ignored", () => {
    expect(resolve(["Nope", "Bash(rm:*)", "mcp__", "mcp__a b__c", "WebSearch"]).disallowedTools).toEqual(
      resolve([]).disallowedTools
    )
  })

  it("headless disallows the tools that need an interactive responder (and their pair siblings)", () => {
    const policy = resolve([], { headless: true, conditions: { "workspace-has-git": true } })
    expect(policy.disallowedTools).toEqual(
      expect.arrayContaining(["AskUserQuestion", "EnterPlanMode", "ExitPlanMode", "EnterWorktree", "ExitWorktree"])
    )
    expect(policy.responderTools).toEqual([])
  })

  it("CLI flags: one comma-joined argument per list, empty lists omitted", () => {
    const policy = resolve(["mcp__docs__*"], { mcpServers: ["gtb"] })
    const flags = ToolPolicy.toCliFlags(policy)
    expect(flags[0]).toBe("--disallowedTools")
    expect(flags[1]!.split(",")).toEqual(policy.disallowedTools)
    expect(flags.slice(2)).toEqual([
      "--allowedTools",
      "mcp__gtb__*,mcp__memory__recall,mcp__memory__remember,mcp__skills__search_skills"
    ])
    expect(ToolPolicy.toCliFlags({ disallowedTools: [], allowedTools: [], mountedServers: [], responderTools: [] }))
      .toEqual([])
  })
})

const paths = (e: ParseResult.ParseError) => ParseResult.ArrayFormatter.formatErrorSync(e).map((i) => i.path)

describe("resolveToolPolicy: invalid input", () => {
  it("a wrongly shaped agent is a ParseError naming the path", () => {
    const r = ToolPolicy.resolveToolPolicy(registry, { disabledTools: ["Bash", 3] }, {
      conditions: {},
      headless: false
    })
    expect(Either.isLeft(r)).toBe(true)
    if (Either.isRight(r)) throw new Error("expected a ParseError")
    expect(ParseResult.isParseError(r.left)).toBe(true)
    expect(paths(r.left)).toEqual([["disabledTools", 1]])
  })

  it("a wrongly shaped context is a ParseError naming the path", () => {
    for (
      const [ctx, path] of [
        [{ conditions: { "workspace-has-git": "yes" }, headless: false }, ["conditions", "workspace-has-git"]],
        [{ conditions: {} }, ["headless"]],
        [{ conditions: {}, headless: true, mcpServers: ["bad__name"] }, ["mcpServers", 0]]
      ] as const
    ) {
      const r = ToolPolicy.resolveToolPolicy(registry, { disabledTools: [] }, ctx)
      if (Either.isRight(r)) throw new Error("expected a ParseError")
      expect(paths(r.left)).toEqual([path])
    }
    expect(Either.isLeft(ToolPolicy.resolveToolPolicy(registry, null, null))).toBe(true)
    expect(Either.isLeft(ToolPolicy.resolveToolPolicy(registry, "Bash", undefined))).toBe(true)
  })
})

describe("toAgentSdkOptions", () => {
  const hookInput = (tool: string, permission_mode?: string) => ({
    hook_event_name: "PreToolUse" as const,
    tool_name: tool,
    tool_input: {},
    tool_use_id: "t1",
    session_id: "s",
    transcript_path: "/dev/null",
    cwd: "/",
    ...(permission_mode === undefined ? {} : { permission_mode })
  })
  const signal = new AbortController().signal

  it.effect("sets the lists, mounted servers only, strict MCP config, and a headless PreToolUse hook", () =>
    Effect.gen(function*() {
      const policy = resolve(["mcp__memory__*"], { conditions: { "workspace-has-git": true } })
      const options = ToolPolicy.toAgentSdkOptions(policy, {
        permissionMode: "default",
        headless: true,
        mcpServers: {
          skills: { type: "http", url: "http://127.0.0.1:1/mcp" },
          memory: { type: "http", url: "http://127.0.0.1:2/mcp" }
        }
      })
      expect(options.disallowedTools).toEqual(policy.disallowedTools)
      expect(options.allowedTools).toEqual(["mcp__skills__search_skills"])
      expect(Object.keys(options.mcpServers ?? {})).toEqual(["skills"])
      expect(options.strictMcpConfig).toBe(true)
      const matcher = options.hooks?.PreToolUse?.[0]
      expect(matcher?.matcher).toBe("AskUserQuestion|EnterPlanMode|EnterWorktree|ExitPlanMode")
      const hook = matcher!.hooks[0]!
      const denied = yield* Effect.promise(() => hook(hookInput("AskUserQuestion"), "t1", { signal }))
      expect(denied).toEqual({
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "deny",
          permissionDecisionReason: ToolPolicy.headlessDenialReason("AskUserQuestion", "default")
        }
      })
      expect(yield* Effect.promise(() => hook(hookInput("Read"), "t1", { signal }))).toEqual({})
      expect(yield* Effect.promise(() => hook(hookInput("AskUserQuestion", "bypassPermissions"), "t1", { signal })))
        .toEqual({})
    }))

  it.effect("bypassPermissions as the configured mode lets responder tools through; no hook when interactive", () =>
    Effect.gen(function*() {
      const policy = resolve([], { conditions: { "workspace-has-git": true } })
      const bypass = ToolPolicy.toAgentSdkOptions(policy, { permissionMode: "bypassPermissions", headless: true })
      const hook = bypass.hooks!.PreToolUse![0]!.hooks[0]!
      expect(yield* Effect.promise(() => hook(hookInput("EnterPlanMode"), "t1", { signal }))).toEqual({})
      expect(ToolPolicy.toAgentSdkOptions(policy, { permissionMode: "default", headless: false }).hooks).toBeUndefined()
    }))
})

describe("resolveToolPolicy: properties", () => {
  const toolNames = registry.descriptors.map((d) => d.name)
  const nameArb = fc.oneof(
    fc.constantFrom(...toolNames),
    fc.constantFrom(
      "mcp__docs__search",
      "mcp__docs__*",
      "mcp__gtb__add",
      "mcp__gtb__*",
      "mcp__memory__*",
      "Unknown",
      ""
    ),
    fc.string()
  )
  const agentArb = fc.record({ disabledTools: fc.array(nameArb, { maxLength: 20 }) })
  const ctxArb = fc.record({
    conditions: fc.dictionary(fc.constantFrom("workspace-has-git", "other"), fc.boolean()),
    headless: fc.boolean(),
    mcpServers: fc.array(fc.constantFrom("gtb", "docs", "memory"), { maxLength: 3 })
  })
  const run = (agent: { disabledTools: ReadonlyArray<string> }, ctx: ToolPolicy.PolicyContext) =>
    Either.getOrThrow(ToolPolicy.resolveToolPolicy(registry, agent, ctx))
  const byName = registry.byName

  it("disabled tools are always disallowed; the user's opt-outs of user tools too", () => {
    fc.assert(fc.property(agentArb, ctxArb, (agent, ctx) => {
      const out = new Set(run(agent, ctx).disallowedTools)
      for (const d of registry.descriptors) if (d.exposure === "disabled") expect(out.has(d.name)).toBe(true)
      for (const n of agent.disabledTools) if (byName.get(n)?.exposure === "user") expect(out.has(n)).toBe(true)
    }))
  })

  it("internal tools are never disallowed unless pulled in by a pair group or headless+interactive", () => {
    fc.assert(fc.property(agentArb, ctxArb, (agent, ctx) => {
      const out = new Set(run(agent, ctx).disallowedTools)
      for (const d of registry.descriptors) {
        if (d.exposure !== "internal" || !out.has(d.name)) continue
        const pulled = d.pairGroup !== undefined &&
          registry.groups.get(d.pairGroup)!.some((m) =>
            m.name !== d.name && m.exposure !== "internal" && out.has(m.name)
          )
        const responder = ctx.headless && registry.groups.get(d.pairGroup ?? "")?.some((m) => m.interactive === true)
        expect(pulled || (ctx.headless && d.interactive === true) || responder === true).toBe(true)
      }
    }))
  })

  it("pair groups are all-or-nothing", () => {
    fc.assert(fc.property(agentArb, ctxArb, (agent, ctx) => {
      const out = new Set(run(agent, ctx).disallowedTools)
      for (const members of registry.groups.values()) {
        const blocked = members.filter((m) => out.has(m.name)).length
        expect(blocked === 0 || blocked === members.length).toBe(true)
      }
    }))
  })

  it("monotonic: more opt-outs never allow more", () => {
    fc.assert(fc.property(agentArb, agentArb, ctxArb, (a, b, ctx) => {
      const small = run(a, ctx)
      const big = run({ disabledTools: [...a.disabledTools, ...b.disabledTools] }, ctx)
      const bigOut = new Set(big.disallowedTools)
      for (const n of small.disallowedTools) expect(bigOut.has(n)).toBe(true)
      const bigAllowed = new Set(big.allowedTools)
      for (const n of bigAllowed) expect(small.allowedTools).toContain(n)
    }))
  })

  it("output lists are sorted, unique, deterministic and independent of input order; allowed ∩ disallowed = ∅", () => {
    fc.assert(fc.property(agentArb, ctxArb, (agent, ctx) => {
      const p = run(agent, ctx)
      for (const list of [p.disallowedTools, p.allowedTools, p.mountedServers, p.responderTools]) {
        expect([...new Set(list)].sort()).toEqual(list)
      }
      expect(run({ disabledTools: [...agent.disabledTools].reverse() }, ctx)).toEqual(p)
      const disallowed = new Set(p.disallowedTools)
      expect(p.allowedTools.filter((n) => disallowed.has(n))).toEqual([])
      expect(p.responderTools.filter((n) => disallowed.has(n))).toEqual([])
    }))
  })

  it("never throws on arbitrary input", () => {
    fc.assert(fc.property(fc.anything(), fc.anything(), (agent, ctx) => {
      const r = ToolPolicy.resolveToolPolicy(registry, agent, ctx)
      expect(Either.isEither(r)).toBe(true)
    }))
  })
})
