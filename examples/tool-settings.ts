/**
 * Stores an agent's tool switches in SQLite and prints the `claude` CLI flags they become: what a
 * settings dialog does when the user flips switches, and what a session does when it starts.
 *
 * Run: npx tsx examples/tool-settings.ts [database-file]
 * (or set AGENT_SETTINGS_DB). Without either, the database is a file in a fresh temporary
 * directory, removed when the example ends: trying it never writes into your home directory.
 * The location is printed first. An application would use `AgentSettingsSqlite.layerSqlite()`,
 * whose default is `$XDG_DATA_HOME/effect-chat-bridge/agents.sqlite`.
 */
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as AgentSettingsSqlite from "../src/layers/AgentSettingsSqlite.ts"
import * as CatalogView from "../src/registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../src/registry/ClaudeCodeCatalog.ts"
import * as ToolPolicy from "../src/registry/ToolPolicy.ts"
import * as AgentSettings from "../src/services/AgentSettings.ts"
import { runExample } from "./support/providers.ts"

const chosen = process.argv[2] ?? process.env["AGENT_SETTINGS_DB"]

/** The database file: the one given, or one in a temporary directory that is removed at the end. */
const database = Effect.acquireRelease(
  Effect.sync(() =>
    chosen === undefined
      ? { filename: join(mkdtempSync(join(tmpdir(), "tool-settings-")), "agents.sqlite"), temporary: true }
      : { filename: chosen, temporary: false }
  ),
  ({ filename, temporary }) =>
    temporary ? Effect.sync(() => rmSync(join(filename, ".."), { recursive: true, force: true })) : Effect.void
)

// `Layer.unwrap` gives the layer the scope of its build, so the temporary directory outlives
// the database connection opened inside it (finalizers run in reverse order).
const Settings = Layer.unwrap(
  Effect.gen(function*() {
    const { filename, temporary } = yield* database
    yield* Console.log(
      temporary
        ? `database: ${filename} (temporary, removed on exit; pass a file or set AGENT_SETTINGS_DB to keep it)`
        : `database: ${filename}`
    )
    return AgentSettingsSqlite.layerSqlite({ filename })
  })
)
const registry = ClaudeCodeCatalog.registry

/** The switch with this id in the agent's catalog view. */
const entry = (settings: AgentSettings.Settings, id: string) =>
  Effect.suspend(() => {
    const found = CatalogView.view(registry, settings).flatMap((s) => s.entries).find((e) => e.id === id)
    return found === undefined ? Effect.die(new Error(`no catalog entry ${id}`)) : Effect.succeed(found)
  })

const program = Effect.gen(function*() {
  const settings = yield* AgentSettings.AgentSettings
  // Create the agent, or start over from no opt-outs when an earlier run created it.
  const agent = yield* settings.create("docs-writer").pipe(
    Effect.catchTag("AgentAlreadyExistsError", () => settings.setDisabledTools("docs-writer", []))
  )
  yield* Console.log(`created ${agent.agentId}: disabledTools = ${JSON.stringify(agent.disabledTools)}`)

  // The settings dialog: the shell switch (the whole `bash` pair group) and Write off, then Write
  // back on; plus an opt-out of a whole MCP server the catalog does not know.
  yield* settings.toggle(agent.agentId, yield* entry(agent, "group:bash"), false)
  yield* settings.toggle(agent.agentId, yield* entry(agent, "Write"), false)
  yield* settings.toggle(agent.agentId, yield* entry(agent, "Write"), true)
  const updated = yield* settings.disable(agent.agentId, ["mcp__docs__*"])
  yield* Console.log(`after toggles: disabledTools = ${JSON.stringify(updated.disabledTools)}`)
  for (const section of CatalogView.view(registry, updated)) {
    yield* Console.log(
      `  ${section.label}: ${section.entries.map((e) => `${e.label} ${e.enabled ? "on" : "off"}`).join(", ")}`
    )
  }

  // A headless `claude -p` session with the bridge's tools mounted as `gtb`.
  const policy = yield* AgentSettings.resolveToolPolicyFor(agent.agentId, {
    conditions: { "workspace-has-git": false },
    headless: true,
    mcpServers: ["gtb"]
  })
  yield* Console.log(`claude flags: ${JSON.stringify(ToolPolicy.toCliFlags(policy))}`)
  // No one answers permission prompts on it: what Claude Code would ask about is not offered.
  yield* Console.log(`withheld on this session: ${policy.withheld.map((w) => w.tool).join(", ")}`)
})

program.pipe(Effect.provide(Settings), runExample)
