import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import { formatIssues, formatMessage } from "./issues.ts"

const registry = Registry.unsafeMake([
  ...ClaudeCodeCatalog.descriptors,
  Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" }),
  Registry.mcpTool({ server: "memory", wireName: "remember", category: "context" }),
  Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" }),
  Registry.mcpTool({ server: "skills", wireName: "old_tool", category: "context", exposure: "disabled" })
])

const resolve = (disabledTools: ReadonlyArray<string>, ctx: Partial<ToolPolicy.PolicyContext> = {}) =>
  Result.getOrThrow(
    ToolPolicy.resolveToolPolicy(registry, { disabledTools }, { conditions: {}, headless: false, ...ctx })
  )

const names = (p: (d: (typeof registry.descriptors)[number]) => boolean) =>
  registry.descriptors.filter(p).map((d) => d.name)

describe("resolveToolPolicy: rules", () => {
  it("typed input: a context without conditions is one whose conditions are all false; unknown input goes through resolveToolPolicyUnknown", () => {
    const registry = ClaudeCodeCatalog.registry
    // As documented: a missing condition counts as false, so no `conditions` at all is valid too.
    const missing = ToolPolicy.resolveToolPolicy(registry, { disabledTools: [] }, { headless: true })
    const empty = ToolPolicy.resolveToolPolicy(registry, { disabledTools: [] }, { conditions: {}, headless: true })
    expect(Result.isSuccess(missing)).toBe(true)
    expect(missing).toEqual(empty)
    const typed = ToolPolicy.resolveToolPolicy(registry, { disabledTools: ["WebFetch"] }, {
      conditions: {},
      headless: true
    })
    const untyped = ToolPolicy.resolveToolPolicyUnknown(
      registry,
      JSON.parse("{\"disabledTools\":[\"WebFetch\"]}") as unknown,
      JSON.parse("{\"conditions\":{},\"headless\":true}") as unknown
    )
    expect(untyped).toEqual(typed)
  })

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
      responderTools: ["AskUserQuestion", "EnterPlanMode", "EnterWorktree", "ExitPlanMode"],
      ignored: [],
      withheld: []
    })
  })

  it("the shipped catalog alone disallows exactly its disabled tools plus the worktree pair without git", () => {
    const policy = Result.getOrThrow(
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
    expect(policy.ignored.map((i) => [i.entry, i.kind])).toEqual([
      ["Agent", "always-on"],
      ["ToolSearch", "always-on"],
      ["mcp__skills__search_skills", "always-on"]
    ])
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

  it("malformed entries are reported, never applied; unknown bare names pass through, reported", () => {
    const policy = resolve(["Nope", "Bash(rm:*)", "mcp__", "mcp__docs__", "mcp__a b__c", "a,b", "WebSearch"])
    expect(policy.disallowedTools).toEqual([...resolve([]).disallowedTools, "Nope"].sort())
    expect(policy.ignored.map((i) => [i.entry, i.kind])).toEqual([
      ["Nope", "unknown"],
      ["Bash(rm:*)", "malformed"],
      ["mcp__", "malformed"],
      ["mcp__docs__", "malformed"],
      ["mcp__a b__c", "malformed"],
      ["a,b", "malformed"]
    ])
    for (const i of policy.ignored) if (i.kind === "malformed") expect(i.message).toContain(JSON.stringify(i.entry))
  })

  it("the forms the issue found dropped: each is passed through, expanded or reported", () => {
    const long = `mcp__docs__${"t".repeat(70)}`
    const policy = resolve(["mcp___x__read", long, "mcp__docs__x.y", "mcp__a.b__c/d", "mcp__docs__*x", "mcp__docs"])
    expect(policy.disallowedTools).toEqual(
      expect.arrayContaining([
        "mcp___x__read",
        long,
        "mcp__docs__x_y",
        "mcp__a_b__c_d",
        "mcp__docs__*x",
        "mcp__docs__*"
      ])
    )
    expect(policy.ignored).toEqual([])
  })

  it("mcp__* passes through when no MCP tool is always on; otherwise it is expanded and reported", () => {
    const plain = Registry.unsafeMake([
      ...ClaudeCodeCatalog.descriptors,
      Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" })
    ])
    const passed = Result.getOrThrow(
      ToolPolicy.resolveToolPolicy(plain, { disabledTools: ["mcp__*"] }, {
        conditions: {},
        headless: true,
        mcpServers: ["gtb"]
      })
    )
    expect(passed.disallowedTools).toEqual(expect.arrayContaining(["mcp__*", "mcp__memory__recall"]))
    expect(passed.mountedServers).toEqual([])
    expect(passed.allowedTools).toEqual([])
    expect(passed.ignored).toEqual([])

    const expanded = resolve(["mcp__*"], { mcpServers: ["gtb"] })
    expect(expanded.disallowedTools).not.toContain("mcp__*")
    expect(expanded.disallowedTools).toEqual(
      expect.arrayContaining(["mcp__memory__recall", "mcp__memory__remember", "mcp__memory__*", "mcp__gtb__*"])
    )
    expect(expanded.disallowedTools).not.toContain("mcp__skills__search_skills")
    expect(expanded.allowedTools).toEqual(["mcp__skills__search_skills"])
    expect(expanded.mountedServers).toEqual(["skills"])
    expect(expanded.ignored).toEqual([
      expect.objectContaining({
        entry: "mcp__*",
        kind: "partly-applied",
        applied: [
          "mcp__gtb__*",
          "mcp__memory__*",
          "mcp__memory__recall",
          "mcp__memory__remember",
          "mcp__skills__old_tool"
        ],
        servers: ["gtb", "memory"]
      })
    ])
  })

  it("server wildcards never unmount or disallow internal tools", () => {
    for (const entry of ["mcp__skills__*", "mcp__skills", "mcp__sk*", "mcp__skills__search*"]) {
      const policy = resolve([entry])
      expect(policy.mountedServers).toContain("skills")
      expect(policy.allowedTools).toContain("mcp__skills__search_skills")
      expect(policy.disallowedTools.some((n) => n.startsWith("mcp__skills__") && n !== "mcp__skills__old_tool"))
        .toBe(false)
      expect(policy.ignored.map((i) => i.entry)).toEqual([entry])
    }
  })

  it("wildcards respect pair groups, and an internal sibling of a user tool blocks its group", () => {
    for (const entry of ["Bas*", "*Output", "BashOutput"]) {
      expect(resolve([entry]).disallowedTools).toEqual(expect.arrayContaining(["Bash", "BashOutput"]))
    }
    // A wildcard that reaches always-on tools too is expanded: Task* matches the internal taskCluster.
    const tasks = resolve(["Task*"])
    expect(tasks.disallowedTools).not.toContain("TaskCreate")
    expect(tasks.ignored).toEqual([expect.objectContaining({ entry: "Task*", kind: "always-on" })])
    // `*` turns off every toggleable tool and keeps every always-on one.
    const all = resolve(["*"], { conditions: { "workspace-has-git": true } })
    expect(all.disallowedTools).toEqual(expect.arrayContaining(["Bash", "BashOutput", "Read", "Workflow"]))
    expect(all.disallowedTools).not.toContain("Agent")
    expect(all.disallowedTools).not.toContain("*")
    expect(all.ignored[0]!.kind).toBe("partly-applied")
  })

  it("gated tools are on and never auto-approved; opting out of them is refused", () => {
    const gated = Registry.unsafeMake([
      ...ClaudeCodeCatalog.descriptors,
      Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" }),
      Registry.mcpTool({ server: "skills", wireName: "install_skill", category: "context", exposure: "gated" })
    ])
    const policy = Result.getOrThrow(
      ToolPolicy.resolveToolPolicy(gated, { disabledTools: ["mcp__skills__install_skill"] }, {
        conditions: {},
        headless: true
      })
    )
    expect(policy.allowedTools).toEqual(["mcp__skills__search_skills"])
    expect(policy.disallowedTools).not.toContain("mcp__skills__install_skill")
    expect(policy.mountedServers).toEqual(["skills"])
    expect(ToolPolicy.checkOptOuts(gated, ["mcp__skills__install_skill", "Bash"]).map((i) => i.entry)).toEqual([
      "mcp__skills__install_skill"
    ])
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
    expect(
      ToolPolicy.toCliFlags({
        disallowedTools: [],
        allowedTools: [],
        mountedServers: [],
        responderTools: [],
        ignored: [],
        withheld: []
      })
    ).toEqual([])
  })
})

const paths = (e: Schema.SchemaError) => formatIssues(e).map((i) => i.path)

describe("resolveToolPolicy: invalid input", () => {
  it("a wrongly shaped agent is a ParseError naming the path", () => {
    const r = ToolPolicy.resolveToolPolicyUnknown(registry, { disabledTools: ["Bash", 3] }, {
      conditions: {},
      headless: false
    })
    expect(Result.isFailure(r)).toBe(true)
    if (Result.isSuccess(r)) throw new Error("expected a SchemaError")
    expect(Schema.isSchemaError(r.failure)).toBe(true)
    expect(paths(r.failure)).toEqual([["disabledTools", 1]])
    // Effect 4 names the rejected value only with `reportInput`, which the policy's decoders set.
    expect(r.failure.message).toBe("Expected string, got 3\n  at [\"disabledTools\"][1]")
  })

  it("a wrongly shaped context is a ParseError naming the path", () => {
    for (
      const [ctx, path] of [
        [{ conditions: { "workspace-has-git": "yes" }, headless: false }, ["conditions", "workspace-has-git"]],
        [{ conditions: {} }, ["headless"]],
        [{ conditions: {}, headless: true, mcpServers: ["bad__name"] }, ["mcpServers", 0]]
      ] as const
    ) {
      const r = ToolPolicy.resolveToolPolicyUnknown(registry, { disabledTools: [] }, ctx)
      if (Result.isSuccess(r)) throw new Error("expected a SchemaError")
      expect(paths(r.failure)).toEqual([path])
    }
    expect(Result.isFailure(ToolPolicy.resolveToolPolicyUnknown(registry, null, null))).toBe(true)
    expect(Result.isFailure(ToolPolicy.resolveToolPolicyUnknown(registry, "Bash", undefined))).toBe(true)
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
    Result.getOrThrow(ToolPolicy.resolveToolPolicy(registry, agent, ctx))
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
      const { ignored, ...lists } = run({ disabledTools: [...agent.disabledTools].reverse() }, ctx)
      expect({ ...lists }).toEqual((({ ignored: _, ...rest }) => rest)(p))
      expect([...ignored].reverse()).toEqual(p.ignored)
      const disallowed = new Set(p.disallowedTools)
      expect(p.allowedTools.filter((n) => disallowed.has(n))).toEqual([])
      expect(p.responderTools.filter((n) => disallowed.has(n))).toEqual([])
    }))
  })

  it("never throws on arbitrary input", () => {
    fc.assert(fc.property(fc.anything(), fc.anything(), (agent, ctx) => {
      const r = ToolPolicy.resolveToolPolicyUnknown(registry, agent, ctx)
      expect(Result.isResult(r)).toBe(true)
    }))
  })
})

describe("resolveToolPolicy: properties of opt-outs (wildcards, malformed names, pair groups, internal tools)", () => {
  // A registry with always-on MCP tools on one server, a toggleable server, a gated tool and an
  // internal member of an app pair group whose other member is a user tool.
  const app = Registry.unsafeMake([
    ...ClaudeCodeCatalog.descriptors,
    Registry.mcpTool({ server: "memory", wireName: "recall", category: "context" }),
    Registry.mcpTool({ server: "memory", wireName: "remember", category: "context" }),
    Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" }),
    Registry.mcpTool({ server: "skills", wireName: "install_skill", category: "context", exposure: "gated" }),
    Registry.mcpTool({ server: "skills", wireName: "rate_skill", category: "context" }),
    Registry.mcpTool({ server: "notes", wireName: "read", category: "context", pairGroup: "notes" }),
    Registry.mcpTool({
      server: "notes",
      wireName: "index",
      category: "context",
      pairGroup: "notes",
      exposure: "internal"
    })
  ], { pairGroups: ["notes"] })
  const names = app.descriptors.map((d) => d.name)
  const glob = (pattern: string) =>
    new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\/-]/g, "\\$&")).join(".*")}$`)
  // Tools no opt-out may turn off: internal/gated/conditional outside a group with a user member.
  const toggleable = new Set<string>()
  for (const d of app.descriptors) {
    if (d.exposure === "user" || d.exposure === "disabled") toggleable.add(d.name)
    if (d.exposure === "user" && d.pairGroup !== undefined) {
      for (const m of app.groups.get(d.pairGroup)!) toggleable.add(m.name)
    }
  }
  const alwaysOn = names.filter((n) => !toggleable.has(n))

  const wildcardArb = fc.oneof(
    fc.constantFrom(
      "*",
      "mcp__*",
      "mcp__skills__*",
      "mcp__skills",
      "mcp__notes__*",
      "mcp__memory",
      "mcp__gtb__*",
      "mcp__do*"
    ),
    fc.tuple(fc.constantFrom(...names), fc.nat(12)).map(([n, k]) => `${n.slice(0, k)}*`),
    fc.tuple(fc.constantFrom(...names), fc.nat(6)).map(([n, k]) => `*${n.slice(n.length - k)}`),
    fc.tuple(fc.constantFrom(...names), fc.nat(8), fc.nat(8)).map(([n, i, j]) =>
      `${n.slice(0, i)}*${n.slice(Math.min(n.length, i + j))}`
    )
  )
  // An entry over 256 characters is no longer reported but refused with the whole input
  // (ToolPolicyBounds.test.ts).
  const malformedArb = fc.oneof(
    fc.constantFrom("", "mcp__", "mcp__x__", "a b", "Bash,Read", "Bash(rm:*)", "mcp__a b__c", "é"),
    fc.string().filter((x) => /[^A-Za-z0-9_./*-]/.test(x))
  )
  const mcpArb = fc.tuple(
    fc.constantFrom("docs", "_x", "a.b", "gtb", "memory", "skills"),
    fc.constantFrom("read", "x.y", "a/b", "t".repeat(70), "search_skills")
  ).map(([server, tool]) => `mcp__${server}__${tool}`)
  const entryArb = fc.oneof(fc.constantFrom(...names), wildcardArb, malformedArb, mcpArb, fc.constantFrom("Nope"))
  const agentArb = fc.record({ disabledTools: fc.array(entryArb, { maxLength: 12 }) })
  const ctxArb = fc.record({
    conditions: fc.dictionary(fc.constantFrom("workspace-has-git", "agent-has-channel"), fc.boolean()),
    headless: fc.boolean(),
    permissionMode: fc.constantFrom(...ToolPolicy.PermissionMode.literals),
    mcpServers: fc.array(fc.constantFrom("gtb", "docs"), { maxLength: 2 })
  })
  const run = (agent: { disabledTools: ReadonlyArray<string> }, ctx: ToolPolicy.PolicyContext) =>
    Result.getOrThrow(ToolPolicy.resolveToolPolicy(app, agent, ctx))
  const params = { numRuns: 300 }

  it("opt-outs never turn off an always-on tool, and no disallow entry matches one the session keeps on", () => {
    fc.assert(
      fc.property(agentArb, ctxArb, (agent, ctx) => {
        const base = new Set(run({ disabledTools: [] }, ctx).disallowedTools)
        const p = run(agent, ctx)
        const out = new Set(p.disallowedTools)
        for (const n of alwaysOn) expect(out.has(n)).toBe(base.has(n))
        // The CLI applies every disallow entry as a glob: none may reach a tool that stays on.
        for (const entry of p.disallowedTools) {
          if (!entry.includes("*")) continue
          for (const n of alwaysOn) if (!base.has(n)) expect(glob(entry).test(n)).toBe(false)
        }
        // Servers with always-on tools stay mounted (notes has none: its internal tool pairs with a user one).
        expect(p.mountedServers).toContain("skills")
      }),
      params
    )
  })

  it("nothing is dropped silently: every entry is applied, reported, or passed through", () => {
    fc.assert(
      fc.property(agentArb, ctxArb, (agent, ctx) => {
        const p = run(agent, ctx)
        const out = new Set(p.disallowedTools)
        const reported = new Map(p.ignored.map((i) => [i.entry, i]))
        for (const entry of agent.disabledTools) {
          const r = reported.get(entry)
          if (r !== undefined) {
            if (r.kind === "malformed") expect(out.has(entry)).toBe(false)
            if (r.kind === "partly-applied") { for (const n of r.applied!) expect(out.has(n)).toBe(true) }
            if (r.kind === "partly-applied") {
              for (const s of r.servers ?? []) expect(p.mountedServers).not.toContain(s)
            }
            if (r.kind === "unknown") expect(out.has(entry)).toBe(true)
            expect(r.message.length).toBeGreaterThan(0)
            continue
          }
          // Applied: the entry itself (in the CLI's spelling) is disallowed, or a registry tool it names.
          let name = entry.startsWith("mcp__") ? entry.replace(/[./]/g, "_") : entry
          if (name.startsWith("mcp__") && !name.includes("*") && !name.includes("__", 5)) name = `${name}__*`
          expect(out.has(name)).toBe(true)
          // Everything toggleable it matches is off, with its whole pair group.
          for (const n of names) if (toggleable.has(n) && glob(name).test(n)) expect(out.has(n)).toBe(true)
        }
      }),
      params
    )
  })

  it("pair groups stay all-or-nothing when reached through wildcards", () => {
    fc.assert(
      fc.property(fc.array(wildcardArb, { maxLength: 6 }), ctxArb, (entries, ctx) => {
        const out = new Set(run({ disabledTools: entries }, ctx).disallowedTools)
        for (const members of app.groups.values()) {
          const blocked = members.filter((m) => out.has(m.name)).length
          expect(blocked === 0 || blocked === members.length).toBe(true)
        }
      }),
      params
    )
  })

  it("malformed entries are reported as malformed and change nothing", () => {
    fc.assert(
      fc.property(agentArb, fc.array(malformedArb, { minLength: 1, maxLength: 4 }), ctxArb, (agent, bad, ctx) => {
        const clean = run(agent, ctx)
        const dirty = run({ disabledTools: [...agent.disabledTools, ...bad] }, ctx)
        expect(dirty.disallowedTools).toEqual(clean.disallowedTools)
        expect(dirty.allowedTools).toEqual(clean.allowedTools)
        expect(dirty.mountedServers).toEqual(clean.mountedServers)
        for (const b of bad) {
          expect(dirty.ignored).toContainEqual(expect.objectContaining({ entry: b, kind: "malformed" }))
        }
      }),
      params
    )
  })

  it("gated tools are never auto-approved and never disallowed by opt-outs", () => {
    fc.assert(
      fc.property(agentArb, ctxArb, (agent, ctx) => {
        const p = run(agent, ctx)
        expect(p.allowedTools).not.toContain("mcp__skills__install_skill")
        expect(p.disallowedTools).not.toContain("mcp__skills__install_skill")
      }),
      params
    )
  })

  it("headless: interactive tools are blocked unless the permission mode is bypassPermissions, for every mode", () => {
    fc.assert(
      fc.property(agentArb, ctxArb, (agent, ctx) => {
        const p = run(agent, { ...ctx, headless: true, conditions: { "workspace-has-git": true } })
        const interactive = app.descriptors.filter((d) => d.interactive === true).map((d) => d.name)
        const out = new Set(p.disallowedTools)
        if (ctx.permissionMode !== "bypassPermissions") { for (const n of interactive) expect(out.has(n)).toBe(true) }
        else {for (const n of interactive) {
            expect(out.has(n)).toBe(
              run(agent, { ...ctx, headless: false, conditions: { "workspace-has-git": true } }).disallowedTools
                .includes(n)
            )
          }}
      }),
      params
    )
  })

  it("checkOptOuts refuses exactly the malformed, always-on and unknown entries resolveToolPolicy reports", () => {
    fc.assert(
      fc.property(agentArb, (agent) => {
        const refused = ToolPolicy.checkOptOuts(app, agent.disabledTools).map((i) => i.entry)
        const reported = run(agent, { conditions: {}, headless: false }).ignored
          .filter((i) => i.kind !== "partly-applied").map((i) => i.entry)
        expect(refused).toEqual(reported)
      }),
      params
    )
  })

  it("hostile inputs (throwing getters, Proxies) are ParseErrors, never throws", () => {
    const throwing = Object.defineProperty({}, "disabledTools", {
      enumerable: true,
      get() {
        throw new Error("boom")
      }
    })
    const proxy = new Proxy({}, {
      get() {
        throw new Error("trap")
      },
      ownKeys() {
        throw new Error("trap")
      },
      has() {
        throw new Error("trap")
      },
      getOwnPropertyDescriptor() {
        throw new Error("trap")
      }
    })
    const listProxy = {
      disabledTools: new Proxy(["Bash"], {
        get() {
          throw new Error("list trap")
        }
      })
    }
    const ctx = { conditions: {}, headless: false }
    for (
      const [agent, c] of [[throwing, ctx], [proxy, ctx], [listProxy, ctx], [{ disabledTools: [] }, proxy]] as const
    ) {
      const r = ToolPolicy.resolveToolPolicyUnknown(app, agent, c)
      expect(Result.isFailure(r)).toBe(true)
      if (Result.isFailure(r)) {
        expect(Schema.isSchemaError(r.failure)).toBe(true)
        expect(formatMessage(r.failure)).toMatch(/could not be read: (boom|trap|list trap)/)
      }
    }
  })
})

describe("boundPolicy", () => {
  const policyOf = (deny: ReadonlyArray<string>, allow: ReadonlyArray<string> = []): ToolPolicy.ToolPolicy => ({
    disallowedTools: deny,
    allowedTools: allow,
    mountedServers: [],
    responderTools: [],
    ignored: [],
    withheld: []
  })

  it("short lists stay inline as one argument each, no settings file", () => {
    const b = Result.getOrThrow(ToolPolicy.boundPolicy(policyOf(["Bash", "Write"], ["mcp__gtb__*"])))
    expect(b).toEqual({ disallowedChunks: [["Bash", "Write"]], allowedTools: ["mcp__gtb__*"], settings: undefined })
    expect(ToolPolicy.toBoundedCliFlags(b, undefined)).toEqual([
      "--disallowedTools",
      "Bash,Write",
      "--allowedTools",
      "mcp__gtb__*"
    ])
  })

  it("property: every name lands exactly once, every argument and the file stay within their bounds", () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,30}$/), { maxLength: 400 }),
        fc.array(fc.stringMatching(/^mcp__[a-z]{1,8}__\*$/), { maxLength: 20 }),
        fc.integer({ min: 40, max: 400 }),
        (deny, allow, argBytes) => {
          const bounds = { argBytes, inlineBytes: argBytes * 3, settingsBytes: 2_000 }
          const r = ToolPolicy.boundPolicy(policyOf(deny, allow), bounds)
          if (Result.isFailure(r)) {
            expect(r.failure.bytes).toBeGreaterThan(0)
            expect(r.failure.message).toContain("wildcards")
            return
          }
          const b = r.success
          const inFile = b.settings?.permissions.deny ?? []
          expect([...inFile, ...b.disallowedChunks.flat()]).toEqual(deny)
          expect([...(b.settings?.permissions.allow ?? []), ...b.allowedTools]).toEqual(allow)
          for (const c of b.disallowedChunks) {
            if (c.length > 1) expect(Buffer.byteLength(c.join(","))).toBeLessThanOrEqual(argBytes)
          }
          if (b.settings !== undefined) {
            expect(Buffer.byteLength(JSON.stringify(b.settings))).toBeLessThanOrEqual(bounds.settingsBytes)
          }
          const inline = b.disallowedChunks.reduce((n, c) => n + Buffer.byteLength(c.join(",")), 0)
          expect(inline).toBeLessThanOrEqual(bounds.inlineBytes)
        }
      ),
      { numRuns: 200 }
    )
  })

  it("beyond the bound: a PolicyTooLargeError that says what to do", () => {
    const deny = Array.from({ length: 200_000 }, (_, i) => `mcp__server__tool_${i}`)
    const r = ToolPolicy.boundPolicy(policyOf(deny))
    expect(Result.isFailure(r)).toBe(true)
    if (Result.isFailure(r)) {
      expect(r.failure._tag).toBe("PolicyTooLargeError")
      expect(r.failure.entries).toBe(200_000)
      expect(r.failure.message).toContain("mcp__<server>__*")
    }
  })
})
