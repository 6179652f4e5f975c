/**
 * The behaviour every `AgentSettings` layer must have, run against each layer by its own test
 * file (test/services/AgentSettings.test.ts runs both).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as References from "effect/References"
import type * as Scope from "effect/Scope"
import * as CatalogView from "../../src/registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import * as AgentSettings from "../../src/services/AgentSettings.ts"

/** Runs `effect` against a fresh, empty store of the layer under test. */
export type WithFreshStore = <A, E>(
  effect: Effect.Effect<A, E, AgentSettings.AgentSettings>
) => Effect.Effect<A, E | AgentSettings.AgentSettingsStorageError, Scope.Scope>

/** A registry with an application pair group of two `user` MCP tools and an internal sibling. */
export const notesRegistry = Registry.unsafeMake(
  [
    ...ClaudeCodeCatalog.descriptors,
    Registry.mcpTool({ server: "notes", wireName: "read", category: "context", pairGroup: "notes" }),
    Registry.mcpTool({ server: "notes", wireName: "write", category: "context", pairGroup: "notes" }),
    Registry.mcpTool({
      server: "notes",
      wireName: "index",
      category: "context",
      pairGroup: "notes",
      exposure: "internal"
    }),
    Registry.mcpTool({ server: "notes", wireName: "search", category: "context" })
  ],
  { pairGroups: ["notes"] }
)

const entryById = (registry: Registry.Registry, agent: ToolPolicy.AgentToolSettings, id: string) => {
  const entry = CatalogView.view(registry, agent).flatMap((s) => s.entries).find((e) => e.id === id)
  assert.isDefined(entry, `catalog entry ${id}`)
  return entry!
}

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  assert.strictEqual(reason?._tag, "Fail", `expected a typed failure, got ${String(reason)}`)
  return (reason as { readonly error: E }).error
}

const headless: ToolPolicy.PolicyContext = { conditions: {}, headless: true }

export const agentSettingsSuite = (name: string, withFreshStore: WithFreshStore) =>
  describe(`AgentSettings behaviour: ${name}`, () => {
    it.effect("round trip: create, get, disable, enable, set, list, remove", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        assert.deepStrictEqual(yield* settings.create("writer"), { agentId: "writer", disabledTools: [] })
        assert.deepStrictEqual(yield* settings.get("writer"), { agentId: "writer", disabledTools: [] })
        yield* settings.create("reviewer", ["Write", "Edit", "Write"])

        const disabled = yield* settings.disable("writer", ["Write", "Bash", "mcp__docs__*"])
        assert.deepStrictEqual(disabled.disabledTools, ["Bash", "Write", "mcp__docs__*"])
        assert.deepStrictEqual(yield* settings.disable("writer", ["Bash"]), disabled, "disabling twice is a no-op")
        const enabled = yield* settings.enable("writer", ["Bash", "Glob"])
        assert.deepStrictEqual(enabled.disabledTools, ["Write", "mcp__docs__*"])
        assert.deepStrictEqual(yield* settings.get("writer"), enabled)

        assert.deepStrictEqual(
          (yield* settings.setDisabledTools("writer", ["Grep", "Read", "Grep"])).disabledTools,
          ["Grep", "Read"]
        )
        assert.deepStrictEqual(yield* settings.list, [
          { agentId: "reviewer", disabledTools: ["Edit", "Write"] },
          { agentId: "writer", disabledTools: ["Grep", "Read"] }
        ])
        yield* settings.remove("reviewer")
        assert.deepStrictEqual((yield* settings.list).map((s) => s.agentId), ["writer"])
      })))

    it.effect("unknown agents are AgentNotFoundError, duplicates AgentAlreadyExistsError", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        const ops: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          settings.get("ghost"),
          settings.disable("ghost", ["Bash"]),
          settings.enable("ghost", ["Bash"]),
          settings.setDisabledTools("ghost", []),
          settings.remove("ghost")
        ]
        for (const op of ops) {
          const error = failure(yield* Effect.exit(op))
          assert.instanceOf(error, AgentSettings.AgentNotFoundError)
          assert.strictEqual((error as AgentSettings.AgentNotFoundError).agentId, "ghost")
        }
        yield* settings.create("a", ["Bash"])
        const dup = failure(yield* Effect.exit(settings.create("a")))
        assert.instanceOf(dup, AgentSettings.AgentAlreadyExistsError)
        assert.deepStrictEqual((yield* settings.get("a")).disabledTools, ["Bash"], "the existing agent is untouched")
        assert.deepStrictEqual(
          yield* settings.list,
          [{ agentId: "a", disabledTools: ["Bash"] }],
          "no ghost was created"
        )
      })))

    it.effect("invalid ids and tool names are InvalidSettingsInputError and write nothing", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        yield* settings.create("a", ["Read"])
        const bad: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          settings.create(""),
          settings.create("line\nbreak"),
          settings.disable("a", ["Read", "Bash,Write"]),
          settings.disable("a", ["Bash", ""]),
          settings.setDisabledTools("a", ["Grep", "has space"]),
          settings.disable("a", ["Read", "mcp__docs__"]),
          settings.disable("a", ["Read", "Agent"]),
          settings.create("b", ["ToolSearch*"]),
          settings.toggle("a", { id: "empty", tools: [] }, false)
        ]
        for (const op of bad) {
          assert.instanceOf(failure(yield* Effect.exit(op)), AgentSettings.InvalidSettingsInputError)
        }
        assert.deepStrictEqual(yield* settings.list, [{ agentId: "a", disabledTools: ["Read"] }])
      })))

    it.effect("entries the policy would drop are refused, naming them; wildcards and MCP names are kept", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        yield* settings.create("a")
        const refused = failure(
          yield* Effect.exit(settings.disable("a", ["Bash", "Agent", "mcp__x__", "EnterWorktree"]))
        )
        assert.instanceOf(refused, AgentSettings.InvalidSettingsInputError)
        assert.deepStrictEqual(
          (refused as AgentSettings.InvalidSettingsInputError).entries,
          ["Agent", "mcp__x__", "EnterWorktree"]
        )
        // Accepted: wildcards (incl. the CLI's mid-name globs), `.` and `/` in MCP names, an
        // internal pair-group sibling of a user tool, servers starting with `_`.
        const kept = [
          "mcp__*",
          "mcp__docs__*x",
          "mcp__docs__a.b/c",
          "BashOutput",
          "mcp___x__read",
          `mcp__d__${"t".repeat(70)}`
        ]
        const after = yield* settings.disable("a", kept)
        assert.deepStrictEqual(after.disabledTools, [...kept].sort())
        // With an application registry, its internal MCP tools are refused too.
        const registry = Registry.unsafeMake([
          ...ClaudeCodeCatalog.descriptors,
          Registry.mcpTool({ server: "skills", wireName: "search_skills", category: "context", exposure: "internal" })
        ])
        const app = yield* Effect.exit(
          settings.disable("a", ["mcp__skills__search_skills"]).pipe(
            Effect.provideService(AgentSettings.PolicyRegistry, registry)
          )
        )
        assert.deepStrictEqual((failure(app) as AgentSettings.InvalidSettingsInputError).entries, [
          "mcp__skills__search_skills"
        ])
        // Removing is always possible.
        assert.deepStrictEqual((yield* settings.enable("a", ["Agent", ...kept])).disabledTools, [])
      })))

    it.effect("a mistyped built-in is refused, naming the tool it most likely means; nothing is written", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        yield* settings.create("a", ["Read"])
        const refused = failure(yield* Effect.exit(settings.disable("a", ["Bsh", "WebSerch", "bash", "Nope", "Grep"])))
        assert.instanceOf(refused, AgentSettings.InvalidSettingsInputError)
        const error = refused as AgentSettings.InvalidSettingsInputError
        assert.deepStrictEqual(error.entries, ["Bsh", "WebSerch", "bash", "Nope"])
        assert.deepStrictEqual(error.suggestions, { Bsh: "Bash", WebSerch: "WebSearch", bash: "Bash" })
        assert.include(error.message, "Bsh is not a tool the registry knows: did you mean Bash?")
        const ops: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
          settings.create("b", ["bash"]),
          settings.setDisabledTools("a", ["Bsh"]),
          settings.disable("a", ["Nope"])
        ]
        for (const op of ops) {
          assert.instanceOf(failure(yield* Effect.exit(op)), AgentSettings.InvalidSettingsInputError)
        }
        assert.deepStrictEqual(yield* settings.list, [{ agentId: "a", disabledTools: ["Read"] }])
        // Unknown MCP names are not typos of a built-in: they are kept.
        assert.deepStrictEqual((yield* settings.disable("a", ["mcp__docs__serch"])).disabledTools, [
          "Read",
          "mcp__docs__serch"
        ])
      })))

    it.effect("toggling a pair-group entry writes every member, and the policy blocks the whole group", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        yield* settings.create("a", ["Grep"])
        const notes = entryById(notesRegistry, { disabledTools: [] }, "group:notes")
        assert.deepStrictEqual(notes.tools, ["mcp__notes__read", "mcp__notes__write"])

        const off = yield* settings.toggle("a", notes, false)
        assert.deepStrictEqual(off.disabledTools, ["Grep", "mcp__notes__read", "mcp__notes__write"])
        assert.isFalse(entryById(notesRegistry, off, "group:notes").enabled)
        assert.isTrue(entryById(notesRegistry, off, "mcp__notes__search").enabled)

        const policy = yield* AgentSettings.resolveToolPolicyFor("a", headless, { registry: notesRegistry })
        for (const tool of ["mcp__notes__read", "mcp__notes__write", "mcp__notes__index", "Grep"]) {
          assert.include(policy.disallowedTools, tool)
        }
        assert.deepStrictEqual(policy.allowedTools, ["mcp__notes__search"])

        const on = yield* settings.toggle("a", notes, true)
        assert.deepStrictEqual(on.disabledTools, ["Grep"], "enabling removes every member, other opt-outs stay")
        assert.isTrue(entryById(notesRegistry, on, "group:notes").enabled)
      })))

    it.effect("the Claude Code catalog's bash switch and resolveToolPolicyFor on the default registry", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        yield* settings.create("a")
        // A session that answers permission prompts: otherwise Bash is withheld whatever the switch says.
        const answered = { ...headless, canUseTool: true }
        const before = yield* AgentSettings.resolveToolPolicyFor("a", answered)
        assert.notInclude(before.disallowedTools, "Bash")
        assert.include((yield* AgentSettings.resolveToolPolicyFor("a", headless)).disallowedTools, "Bash")

        yield* settings.toggle("a", entryById(ClaudeCodeCatalog.registry, { disabledTools: [] }, "group:bash"), false)
        const after = yield* AgentSettings.resolveToolPolicyFor("a", { ...answered, mcpServers: ["gtb"] })
        assert.include(after.disallowedTools, "Bash")
        assert.include(after.disallowedTools, "BashOutput", "the internal group sibling goes with Bash")
        const flags = ToolPolicy.toCliFlags(after)
        assert.strictEqual(flags[0], "--disallowedTools")
        assert.include(flags[1]!.split(","), "Bash")
        assert.deepStrictEqual(flags.slice(2), ["--allowedTools", "mcp__gtb__*"])

        const badCtx = { conditions: {}, headless: true, mcpServers: ["no spaces allowed"] }
        assert.instanceOf(
          failure(yield* Effect.exit(AgentSettings.resolveToolPolicyFor("a", badCtx))),
          AgentSettings.InvalidSettingsInputError
        )
        assert.instanceOf(
          failure(yield* Effect.exit(AgentSettings.resolveToolPolicyFor("ghost", headless))),
          AgentSettings.AgentNotFoundError
        )
      })))

    it.effect("50 concurrent disable calls on one agent lose nothing", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        yield* settings.create("busy", ["Bash"])
        const names = Array.from({ length: 50 }, (_, i) => `mcp__test__t${i}`)
        // Yielding every 16 operations interleaves the 50 fibers, so a read-modify-write that is
        // not atomic loses updates here (much smaller values exhaust the heap on Effect 3.22).
        yield* Effect.forEach(names, (name) => settings.disable("busy", [name]), {
          concurrency: "unbounded",
          discard: true
        }).pipe(Effect.provideService(References.MaxOpsBeforeYield, 16))
        const { disabledTools } = yield* settings.get("busy")
        assert.strictEqual(disabledTools.length, 51)
        assert.deepStrictEqual(disabledTools, [...names, "Bash"].sort())
      })))

    it.effect("concurrent enables and disables of different tools each land", () =>
      withFreshStore(Effect.gen(function*() {
        const settings = yield* AgentSettings.AgentSettings
        const evens = Array.from({ length: 20 }, (_, i) => `mcp__test__t${2 * i}`)
        const odds = Array.from({ length: 20 }, (_, i) => `mcp__test__t${2 * i + 1}`)
        yield* settings.create("busy", evens)
        yield* Effect.all(
          [
            ...evens.map((n) => settings.enable("busy", [n])),
            ...odds.map((n) => settings.disable("busy", [n]))
          ],
          { concurrency: "unbounded", discard: true }
        ).pipe(Effect.provideService(References.MaxOpsBeforeYield, 16))
        assert.deepStrictEqual((yield* settings.get("busy")).disabledTools, [...odds].sort())
      })))
  })
