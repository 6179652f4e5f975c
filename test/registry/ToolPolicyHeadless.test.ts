import { describe, expect, it } from "@effect/vitest"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { denialMessage } from "../../src/internal/policy/headlessTools.ts"
import * as CatalogView from "../../src/registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"

// A headless run offers only tools it can be allowed to use: what Claude Code asks about is
// withheld unless something can answer or approve it.
const resolve = (ctx: Partial<ToolPolicy.PolicyContext> = {}, disabledTools: ReadonlyArray<string> = []) =>
  Result.getOrThrow(
    ToolPolicy.resolveToolPolicy(ClaudeCodeCatalog.registry, { disabledTools }, {
      conditions: {},
      headless: true,
      ...ctx
    })
  )

const withheldTools = (policy: ToolPolicy.ToolPolicy) => policy.withheld.map((w) => w.tool)
const interactive = ["AskUserQuestion", "EnterPlanMode", "ExitPlanMode"]

describe("ToolPolicy on headless sessions", () => {
  it("the default (no canUseTool, permission mode default) withholds Bash, Edit and Write, with reasons", () => {
    const policy = resolve()
    expect(withheldTools(policy)).toEqual(["AskUserQuestion", "Bash", "Edit", "EnterPlanMode", "ExitPlanMode", "Write"])
    expect(policy.disallowedTools).toEqual(expect.arrayContaining(["Bash", "BashOutput", "Edit", "Write"]))
    for (const kept of ["Read", "Glob", "Grep", "Agent", "ToolSearch"]) {
      expect(policy.disallowedTools).not.toContain(kept)
    }
    expect(policy.withheld.find((w) => w.tool === "Bash")!.reason).toBe(
      "Claude Code asks before each Bash call and no one can answer on a headless run (permission mode default, " +
        "no canUseTool, not in allowedTools); to offer it, decide calls with canUseTool, allow it with " +
        "toolPolicy.allowedTools, or use permission mode bypassPermissions"
    )
    expect(policy.withheld.find((w) => w.tool === "Edit")!.reason).toContain("or use permission mode acceptEdits")
    expect(policy.withheld.find((w) => w.tool === "AskUserQuestion")!.reason).toContain("interactive responder")
  })

  it("acceptEdits offers the file tools; Bash still asks", () => {
    const policy = resolve({ permissionMode: "acceptEdits" })
    expect(withheldTools(policy)).toEqual([...interactive.slice(0, 1), "Bash", ...interactive.slice(1)])
    expect(policy.disallowedTools).not.toContain("Edit")
    expect(policy.disallowedTools).not.toContain("Write")
  })

  for (const mode of ["bypassPermissions", "auto"] as const) {
    it(`${mode} offers every tool that asks`, () => {
      const policy = resolve({ permissionMode: mode })
      for (const tool of ["Bash", "Edit", "Write"]) expect(policy.disallowedTools).not.toContain(tool)
      expect(withheldTools(policy)).toEqual(mode === "auto" ? interactive : [])
    })
  }

  for (const mode of ["plan", "dontAsk", "manual"] as const) {
    it(`${mode} withholds them as the default does`, () => {
      expect(withheldTools(resolve({ permissionMode: mode }))).toEqual(withheldTools(resolve()))
    })
  }

  it("an unknown permission mode is refused, naming the modes there are (ToolPolicy.PermissionMode)", () => {
    const decoded = Schema.decodeUnknownExit(ToolPolicy.PermissionMode)("yolo")
    expect(String(decoded)).toContain(
      "Expected \"default\" | \"acceptEdits\" | \"auto\" | \"bypassPermissions\" | \"dontAsk\" | \"plan\" | \"manual\""
    )
    const ctx = { headless: true, permissionMode: "yolo" } as unknown as ToolPolicy.PolicyContext
    const refused = ToolPolicy.resolveToolPolicy(ClaudeCodeCatalog.registry, { disabledTools: [] }, ctx)
    expect(Result.isFailure(refused) && String(refused.failure)).toContain("got \"yolo\"\n  at [\"permissionMode\"]")
    // The Agent SDK's set is the same schema without `manual`.
    expect(Schema.is(ToolPolicy.AgentSdkPermissionMode)("manual")).toBe(false)
    expect(ToolPolicy.AgentSdkPermissionMode.literals.every(Schema.is(ToolPolicy.PermissionMode))).toBe(true)
  })

  it("canUseTool answers the prompts: tools that ask are offered, interactive ones still are not", () => {
    const policy = resolve({ canUseTool: true })
    expect(withheldTools(policy)).toEqual(interactive)
    for (const tool of ["Bash", "BashOutput", "Edit", "Write"]) expect(policy.disallowedTools).not.toContain(tool)
  })

  it("allowedTools auto-approves by name: offered and on the allow-list; an opt-out still wins", () => {
    const policy = resolve({ allowedTools: ["Edit"] })
    expect(policy.disallowedTools).not.toContain("Edit")
    expect(policy.allowedTools).toContain("Edit")
    expect(withheldTools(policy)).toContain("Bash")
    const optedOut = resolve({ allowedTools: ["Edit"] }, ["Edit"])
    expect(optedOut.disallowedTools).toContain("Edit")
    expect(optedOut.allowedTools).not.toContain("Edit")
  })

  it("a session that is not headless withholds nothing", () => {
    const policy = resolve({ headless: false })
    expect(policy.withheld).toEqual([])
    expect(policy.disallowedTools).not.toContain("Bash")
  })

  it("a denial names the safe fix first", () => {
    expect(denialMessage(["Bash"])).toBe(
      "The claude CLI denied Bash: stop offering it (add it to toolPolicy.disabledTools); to let it run, decide " +
        "calls with canUseTool, auto-approve with toolPolicy.allowedTools, or choose a permissionMode that allows it"
    )
  })
})

describe("CatalogView on a headless session", () => {
  it("switches that stay on but are withheld say why; without a session nothing is marked", () => {
    const agent = { disabledTools: ["Write"] }
    const entries = CatalogView.view(ClaudeCodeCatalog.registry, agent, {
      session: { conditions: {}, headless: true }
    }).flatMap((s) => s.entries)
    const byId = new Map(entries.map((e) => [e.id, e]))
    expect(byId.get("group:bash")!.enabled).toBe(true)
    expect(byId.get("group:bash")!.withheld).toContain("Claude Code asks before each Bash call")
    expect(byId.get("Edit")!.withheld).toContain("permission mode acceptEdits")
    expect(byId.get("Read")!.withheld).toBeUndefined()
    const plain = CatalogView.view(ClaudeCodeCatalog.registry, agent).flatMap((s) => s.entries)
    expect(plain.filter((e) => e.withheld !== undefined)).toEqual([])
  })
})
