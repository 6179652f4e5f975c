/**
 * Issue 31: a settings database written by the Effect 3 line (`@effect/sql-sqlite-node`, made by
 * `next/scripts/v3-agent-settings-db.ts` at f3dc6f3cecdf) opens with the Effect 4 store. The fixture is copied first,
 * so the committed file is never written to.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { createHash } from "node:crypto"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as AgentSettingsSqlite from "../../src/layers/AgentSettingsSqlite.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as AgentSettings from "../../src/services/AgentSettings.ts"

const fixture = path.join(import.meta.dirname, "fixtures", "agentSettings.v3.sqlite")

/** What `next/scripts/v3-agent-settings-db.ts` (at f3dc6f3cecdf) stored (its `list` output). */
const v3Agents: ReadonlyArray<AgentSettings.Settings> = [
  { agentId: "blank", disabledTools: [] },
  { agentId: "coder", disabledTools: ["WebFetch", "WebSearch", "mcp__docs__*"] },
  { agentId: "notes-user", disabledTools: ["mcp__*", "mcp__notes__read", "mcp__notes__write"] },
  { agentId: "reviewer", disabledTools: ["Edit", "Write"] },
  { agentId: "unicode ✓ agent", disabledTools: ["Read"] }
]

const sha256 = (file: string) => createHash("sha256").update(nodeFs.readFileSync(file)).digest("hex")

/** A copy of the v3 fixture in a fresh folder, removed when the test's scope closes. */
const v3Copy = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "agent-settings-v3-"))),
    (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
  ),
  (dir) => {
    const file = path.join(dir, "agents.sqlite")
    nodeFs.copyFileSync(fixture, file)
    return file
  }
)

const withSettings = <A, E>(filename: string, effect: Effect.Effect<A, E, AgentSettings.AgentSettings>) =>
  Effect.provide(effect, AgentSettingsSqlite.layerSqlite({ filename }))

const withRawSql = <A, E>(filename: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(effect, SqliteClient.layer({ filename }))

const recordedMigrations = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ migration_id: number; name: string }>`
      SELECT migration_id, name FROM effect_chat_bridge_migrations ORDER BY migration_id`
)

describe("AgentSettingsSqlite on a database file of the Effect 3 line", () => {
  it.effect("reads every stored agent's settings back unchanged, runs no migration again", () =>
    Effect.gen(function*() {
      const before = sha256(fixture)
      const file = yield* v3Copy
      assert.deepStrictEqual(yield* withRawSql(file, recordedMigrations), [
        { migration_id: 1, name: "create_agents" },
        { migration_id: 2, name: "disabled_tools_replaces_allowed_tools" }
      ])
      const [listed, each] = yield* withSettings(
        file,
        Effect.gen(function*() {
          const settings = yield* AgentSettings.AgentSettings
          return [yield* settings.list, yield* Effect.forEach(v3Agents, (a) => settings.get(a.agentId))] as const
        })
      )
      assert.deepStrictEqual(listed, v3Agents)
      assert.deepStrictEqual(each, v3Agents)
      assert.deepStrictEqual(yield* withRawSql(file, recordedMigrations), [
        { migration_id: 1, name: "create_agents" },
        { migration_id: 2, name: "disabled_tools_replaces_allowed_tools" }
      ])
      assert.strictEqual(sha256(fixture), before, "the committed fixture is untouched")
    }))

  it.effect("takes new writes next to the stored agents, and they survive a reopen", () =>
    Effect.gen(function*() {
      const file = yield* v3Copy
      yield* withSettings(
        file,
        Effect.gen(function*() {
          const settings = yield* AgentSettings.AgentSettings
          yield* settings.create("v4-agent", ["Bash", "mcp__gtb__*"])
          yield* settings.disable("coder", ["Grep"])
          yield* settings.enable("notes-user", ["mcp__*"])
          yield* settings.setDisabledTools("blank", ["Write"])
          yield* settings.remove("reviewer")
        })
      )
      const reopened = yield* withSettings(file, Effect.flatMap(AgentSettings.AgentSettings, (s) => s.list))
      assert.deepStrictEqual(reopened, [
        { agentId: "blank", disabledTools: ["Write"] },
        { agentId: "coder", disabledTools: ["Grep", "WebFetch", "WebSearch", "mcp__docs__*"] },
        { agentId: "notes-user", disabledTools: ["mcp__notes__read", "mcp__notes__write"] },
        { agentId: "unicode ✓ agent", disabledTools: ["Read"] },
        { agentId: "v4-agent", disabledTools: ["Bash", "mcp__gtb__*"] }
      ])
      // Stored in the v3 form: a JSON array text, sorted.
      const raw = yield* withRawSql(
        file,
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ v: unknown }>`SELECT disabled_tools AS v FROM agents WHERE id = 'v4-agent'`
        )
      )
      assert.deepStrictEqual(raw, [{ v: "[\"Bash\",\"mcp__gtb__*\"]" }])
    }))

  it.effect("a later migration runs forward on it, after the v3 ones", () =>
    Effect.gen(function*() {
      const file = yield* v3Copy
      const loader: Migrator.Loader = Effect.map(AgentSettingsSqlite.migrations, (ms) => [
        ...ms,
        [
          3,
          "add_probe",
          Effect.succeed(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`ALTER TABLE agents ADD COLUMN probe TEXT`))
        ] as const
      ])
      const ran = yield* withRawSql(
        file,
        Migrator.make({})({ loader, table: AgentSettingsSqlite.migrationsTable })
      )
      assert.deepStrictEqual(ran, [[3, "add_probe"]])
      assert.deepStrictEqual(
        (yield* withRawSql(file, recordedMigrations)).map((m) => m.migration_id),
        [1, 2, 3]
      )
      const listed = yield* withSettings(
        file,
        Effect.gen(function*() {
          const settings = yield* AgentSettings.AgentSettings
          yield* settings.disable("blank", ["Bash"])
          return yield* settings.list
        })
      )
      assert.deepStrictEqual(listed, [{ agentId: "blank", disabledTools: ["Bash"] }, ...v3Agents.slice(1)])
    }))
})
