import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import * as TestClock from "effect/testing/TestClock"
import { execFile } from "node:child_process"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { vi } from "vitest"
import * as AgentSettingsSqlite from "../../src/layers/AgentSettingsSqlite.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as AgentSettings from "../../src/services/AgentSettings.ts"

/** A fresh folder for one test, removed when its scope closes. */
const testFolder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "agent-settings-sqlite-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs `effect` with the settings service on `filename`; the database is closed afterwards. */
const withSettings = <A, E>(filename: string, effect: Effect.Effect<A, E, AgentSettings.AgentSettings>) =>
  Effect.provide(effect, AgentSettingsSqlite.layerSqlite({ filename }))

/** Runs raw SQL on `filename` through a separate connection, closed afterwards. */
const withRawSql = <A, E>(filename: string, effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(effect, SqliteClient.layer({ filename }))

const failure = <A, E>(exit: Exit.Exit<A, E>): E => {
  assert.isTrue(Exit.isFailure(exit), "expected a failure")
  const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  if (reason?._tag !== "Fail") return assert.fail(`expected a typed failure, got ${String(exit)}`)
  return reason.error
}

/** The schema of the application before the opt-out model: an allow list per agent. */
const legacyFixture = [
  `CREATE TABLE agents (
    id TEXT PRIMARY KEY NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    allowed_tools TEXT NOT NULL DEFAULT '[]'
  )`,
  `INSERT INTO agents (id, name, allowed_tools) VALUES
    ('coder', 'Coder', '["Bash","Read","Edit"]'),
    ('reader', 'Reader', '["Read"]'),
    ('blank', 'Blank', '[]')`
]

describe("AgentSettingsSqlite", () => {
  it.effect("creates agents with disabled_tools TEXT NOT NULL DEFAULT '[]' and records its migrations", () =>
    Effect.gen(function*() {
      const file = path.join(yield* testFolder, "agents.sqlite")
      yield* withSettings(file, Effect.flatMap(AgentSettings.AgentSettings, (s) => s.create("a")))
      const [columns, migrations] = yield* withRawSql(
        file,
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          return [
            yield* sql<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>`
              SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info('agents') ORDER BY cid`,
            yield* sql<{ migration_id: number; name: string }>`
              SELECT migration_id, name FROM effect_chat_bridge_migrations ORDER BY migration_id`
          ] as const
        })
      )
      assert.deepStrictEqual(columns, [
        { name: "id", type: "TEXT", notnull: 1, dflt_value: null, pk: 1 },
        { name: "disabled_tools", type: "TEXT", notnull: 1, dflt_value: "'[]'", pk: 0 }
      ])
      assert.deepStrictEqual(migrations.map((m) => m.migration_id), [1, 2])
      // A row written by someone else without the column gets the default: all tools enabled.
      yield* withRawSql(
        file,
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO agents (id) VALUES ('other')`)
      )
      const other = yield* withSettings(file, Effect.flatMap(AgentSettings.AgentSettings, (s) => s.get("other")))
      assert.deepStrictEqual(other.disabledTools, [])
    }))

  it.effect("migrates a legacy allowed_tools database: rows kept, empty opt-out sets, allowed_tools retired", () =>
    Effect.gen(function*() {
      const file = path.join(yield* testFolder, "legacy.sqlite")
      yield* withRawSql(
        file,
        Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.forEach(legacyFixture, (stmt) => sql.unsafe(stmt)))
      )
      const listed = yield* withSettings(
        file,
        Effect.gen(function*() {
          const settings = yield* AgentSettings.AgentSettings
          const listed = yield* settings.list
          // The migrated table takes writes, and new agents too.
          yield* settings.disable("reader", ["Bash"])
          yield* settings.create("fresh", ["Grep"])
          return listed
        })
      )
      assert.deepStrictEqual(listed, [
        { agentId: "blank", disabledTools: [] },
        { agentId: "coder", disabledTools: [] },
        { agentId: "reader", disabledTools: [] }
      ])
      const rows = yield* withRawSql(
        file,
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const columns = yield* sql<{ name: string }>`SELECT name FROM pragma_table_info('agents') ORDER BY cid`
          assert.deepStrictEqual(columns.map((c) => c.name), ["id", "name", "disabled_tools"])
          return yield* sql<{ id: string; name: string; disabled_tools: string }>`
            SELECT id, name, disabled_tools FROM agents ORDER BY id`
        })
      )
      assert.deepStrictEqual(rows, [
        { id: "blank", name: "Blank", disabled_tools: "[]" },
        { id: "coder", name: "Coder", disabled_tools: "[]" },
        { id: "fresh", name: "", disabled_tools: "[\"Grep\"]" },
        { id: "reader", name: "Reader", disabled_tools: "[\"Bash\"]" }
      ])
    }))

  it.effect("a corrupted disabled_tools value is a CorruptedSettingsError naming the agent; set repairs it", () =>
    Effect.gen(function*() {
      const file = path.join(yield* testFolder, "agents.sqlite")
      const corrupt: ReadonlyArray<readonly [string, string]> = [
        ["not-json", "'[\"Bash\",'"],
        ["object", "'{\"Bash\":true}'"],
        ["number-item", "'[\"Bash\",42]'"],
        ["comma-item", "'[\"Bash,Read\"]'"],
        ["integer", "7"],
        ["blob", "X'5B5D'"]
      ]
      yield* withSettings(
        file,
        Effect.flatMap(
          AgentSettings.AgentSettings,
          (s) => Effect.forEach(["healthy", ...corrupt.map(([id]) => id)], (id) => s.create(id))
        )
      )
      yield* withRawSql(
        file,
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            Effect.forEach(
              corrupt,
              ([id, value]) => sql.unsafe(`UPDATE agents SET disabled_tools = ${value} WHERE id = ?`, [id])
            )
        )
      )
      yield* withSettings(
        file,
        Effect.gen(function*() {
          const settings = yield* AgentSettings.AgentSettings
          for (const [id] of corrupt) {
            for (const op of [settings.get(id), settings.disable(id, ["Grep"]), settings.enable(id, ["Bash"])]) {
              const error = failure(yield* Effect.exit(op))
              assert.instanceOf(error, AgentSettings.CorruptedSettingsError, id)
              assert.strictEqual((error as AgentSettings.CorruptedSettingsError).agentId, id)
              assert.include((error as AgentSettings.CorruptedSettingsError).message, JSON.stringify(id))
            }
          }
          const listError = failure(yield* Effect.exit(settings.list))
          assert.instanceOf(listError, AgentSettings.CorruptedSettingsError)
          assert.deepStrictEqual((yield* settings.get("healthy")).disabledTools, [], "other agents still work")

          yield* settings.setDisabledTools("not-json", ["Read"])
          assert.deepStrictEqual((yield* settings.disable("not-json", ["Grep"])).disabledTools, ["Grep", "Read"])
        })
      )
      const stored = yield* withRawSql(
        file,
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ v: string }>`SELECT disabled_tools AS v FROM agents WHERE id = 'number-item'`
        )
      )
      assert.deepStrictEqual(stored, [{ v: "[\"Bash\",42]" }], "a failed write leaves the stored value as it was")
    }))

  it.effect("reopening the file sees the data, and migrations do not run twice", () =>
    Effect.gen(function*() {
      const file = path.join(yield* testFolder, "agents.sqlite")
      yield* withSettings(
        file,
        Effect.gen(function*() {
          const settings = yield* AgentSettings.AgentSettings
          yield* settings.create("a", ["Bash"])
          yield* settings.disable("a", ["mcp__test__t1"])
        })
      )
      const seen = yield* withSettings(file, Effect.flatMap(AgentSettings.AgentSettings, (s) => s.list))
      assert.deepStrictEqual(seen, [{ agentId: "a", disabledTools: ["Bash", "mcp__test__t1"] }])
      const migrations = yield* withRawSql(
        file,
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ n: number }>`SELECT count(*) AS n FROM effect_chat_bridge_migrations`)
      )
      assert.deepStrictEqual(migrations, [{ n: 2 }])
    }))

  it.effect(":memory: works and each layer gets its own database", () =>
    Effect.gen(function*() {
      const first = yield* withSettings(
        ":memory:",
        Effect.flatMap(AgentSettings.AgentSettings, (s) => Effect.andThen(s.create("a", ["Bash"]), s.list))
      )
      assert.deepStrictEqual(first, [{ agentId: "a", disabledTools: ["Bash"] }])
      assert.deepStrictEqual(
        yield* withSettings(":memory:", Effect.flatMap(AgentSettings.AgentSettings, (s) => s.list)),
        []
      )
    }))

  it.effect("the default file is under XDG_DATA_HOME (or ~/.local/share), its directory created", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      assert.strictEqual(
        AgentSettingsSqlite.defaultFilename({ XDG_DATA_HOME: "/data" }, "/home/u"),
        "/data/effect-chat-bridge/agents.sqlite"
      )
      assert.strictEqual(
        AgentSettingsSqlite.defaultFilename({}, "/home/u"),
        "/home/u/.local/share/effect-chat-bridge/agents.sqlite"
      )
      assert.strictEqual(
        AgentSettingsSqlite.defaultFilename({ XDG_DATA_HOME: "relative/dir" }, "/home/u"),
        "/home/u/.local/share/effect-chat-bridge/agents.sqlite"
      )

      const xdg = path.join(folder, "xdg")
      const previous = process.env["XDG_DATA_HOME"]
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.env["XDG_DATA_HOME"] = xdg
        }),
        () =>
          Effect.sync(() => {
            if (previous === undefined) delete process.env["XDG_DATA_HOME"]
            else process.env["XDG_DATA_HOME"] = previous
          })
      )
      yield* Effect.provide(
        Effect.flatMap(AgentSettings.AgentSettings, (s) => s.create("a")),
        AgentSettingsSqlite.layerSqlite()
      )
      const file = path.join(xdg, "effect-chat-bridge", "agents.sqlite")
      assert.isTrue(nodeFs.existsSync(file))
      assert.strictEqual(nodeFs.statSync(path.dirname(file)).mode & 0o777, 0o700)
      assert.deepStrictEqual(yield* withSettings(file, Effect.flatMap(AgentSettings.AgentSettings, (s) => s.list)), [
        { agentId: "a", disabledTools: [] }
      ])
    }))

  it.effect("a file that cannot be opened is an AgentSettingsStorageError, not a crash", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const missingDir = yield* Effect.exit(
        Layer.build(AgentSettingsSqlite.layerSqlite({ filename: path.join(folder, "no", "such", "agents.sqlite") }))
      )
      const notADatabase = path.join(folder, "garbage.sqlite")
      nodeFs.writeFileSync(
        notADatabase,
        "this is not a SQLite database, just text long enough to have a header".repeat(20)
      )
      const garbage = yield* Effect.exit(Layer.build(AgentSettingsSqlite.layerSqlite({ filename: notADatabase })))
      for (const exit of [missingDir, garbage]) {
        const error = failure(exit)
        assert.instanceOf(error, AgentSettings.AgentSettingsStorageError)
        assert.strictEqual((error as AgentSettings.AgentSettingsStorageError).operation, "open")
      }
      assert.isFalse(nodeFs.existsSync(path.join(folder, "no")), "an explicit path's directory is not created")
    }))

  it.effect("writers in two other processes and this one, on the same file at the same time, lose nothing", () =>
    Effect.gen(function*() {
      const file = path.join(yield* testFolder, "shared.sqlite")
      const count = 150
      yield* withSettings(file, Effect.flatMap(AgentSettings.AgentSettings, (s) => s.create("shared")))
      const script = path.join(import.meta.dirname, "agentSettingsWriter.ts")
      // Everyone starts writing at the same moment, after the children's tsx start-up.
      const startAt = Date.now() + 4_000
      const runWriter = (prefix: string) =>
        Effect.callback<string, Error>((resume) => {
          const child = execFile(
            process.execPath,
            ["--import", "tsx", script, file, "shared", prefix, String(count), String(startAt)],
            { encoding: "utf8", timeout: 60_000 },
            (error, stdout, stderr) =>
              resume(error ? Effect.fail(new Error(`${error.message}\n${stderr}`)) : Effect.succeed(stdout))
          )
          return Effect.sync(() => child.kill("SIGKILL"))
        })
      const names = (prefix: string) => Array.from({ length: count }, (_, i) => `mcp__${prefix}__t${i}`)
      const inProcess = withSettings(
        file,
        Effect.gen(function*() {
          const settings = yield* AgentSettings.AgentSettings
          yield* Effect.sleep(Math.max(0, startAt - Date.now()))
          yield* Effect.forEach(names("main"), (n) => settings.disable("shared", [n]), {
            concurrency: "unbounded",
            discard: true
          })
        })
      ).pipe(TestClock.withLive)
      const [a, b] = yield* Effect.all([runWriter("a"), runWriter("b"), inProcess], { concurrency: "unbounded" })
      assert.strictEqual(a.trim(), `done ${count}`)
      assert.strictEqual(b.trim(), `done ${count}`)
      const { disabledTools } = yield* withSettings(
        file,
        Effect.flatMap(AgentSettings.AgentSettings, (s) => s.get("shared"))
      )
      assert.strictEqual(disabledTools.length, 3 * count)
      assert.deepStrictEqual(disabledTools, [...names("a"), ...names("b"), ...names("main")].sort())
    }))
})

// On the Effect 4 line the store needs no optional peer: `node:sqlite` comes with Node ≥ 22.19.
// What is left of the peer check: a Node without `node:sqlite` is a storage error naming what to
// install, not a crash at import.
describe("AgentSettingsSqlite without its optional peer", () => {
  it.effect("building the layer fails with a storage error naming the package to install", () =>
    Effect.gen(function*() {
      const Fresh = yield* Effect.promise(async () => {
        vi.resetModules()
        vi.doMock("node:sqlite", () => {
          throw new Error("No such built-in module: node:sqlite")
        })
        return await import("../../src/layers/AgentSettingsSqlite.ts")
      })
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          vi.doUnmock("node:sqlite")
          vi.resetModules()
        })
      )
      const exit = yield* Layer.build(Fresh.layerSqlite({ filename: ":memory:" })).pipe(Effect.scoped, Effect.exit)
      assert.isTrue(Exit.isFailure(exit))
      const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      const failure = reason?._tag === "Fail" ? reason.error : undefined
      assert.strictEqual(failure?._tag, "AgentSettingsStorageError")
      assert.strictEqual(failure?.operation, "open")
      assert.include(failure?.message, "Node >= 22.19 is required")
      assert.isDefined(failure?.cause)
    }))
})
