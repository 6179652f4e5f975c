import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as AgentSettingsSqlite from "../../src/layers/AgentSettingsSqlite.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import { AgentSettings } from "../../src/services/AgentSettings.ts"
import { ClaudeSessionStore } from "../../src/services/ClaudeSessionStore.ts"

// Files that hold conversations are private under the usual umask, whichever layer opens them.
let umask = 0
beforeAll(() => {
  umask = process.umask(0o022)
})
afterAll(() => {
  process.umask(umask)
})

const modeOf = (file: string) => fs.statSync(file).mode & 0o777

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-mode-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** The db and its WAL companions while a connection holds them open. */
const modes = (file: string) => ({ db: modeOf(file), wal: modeOf(`${file}-wal`), shm: modeOf(`${file}-shm`) })

const writeRow = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => Effect.andThen(sql`CREATE TABLE IF NOT EXISTS t (x TEXT)`, sql`INSERT INTO t VALUES ('secret prompt')`)
)

const captureWarnings = () => {
  const warnings: Array<string> = []
  const logger = Logger.layer([
    Logger.make(({ logLevel, message }) => {
      if (logLevel === "Warn") warnings.push(String(Array.isArray(message) ? message[0] : message))
    })
  ])
  return { warnings, logger }
}

const private0600 = { db: 0o600, wal: 0o600, shm: 0o600 }

describe("SQLite files are private", () => {
  it.live("SqliteClient creates the db, -wal and -shm 0600 under umask 022", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "cluster.sqlite")
      const seen = yield* Effect.andThen(writeRow, Effect.sync(() => modes(file))).pipe(
        Effect.provide(SqliteClient.layer({ filename: file }))
      )
      expect(seen).toEqual(private0600)
    }).pipe(Effect.scoped))

  it.live("a rollback journal follows the db's 0600", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "journal.sqlite")
      const journal = yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`PRAGMA journal_mode = PERSIST`
        yield* writeRow
        return modeOf(`${file}-journal`)
      }).pipe(Effect.provide(SqliteClient.layer({ filename: file, disableWAL: true })))
      expect({ db: modeOf(file), journal }).toEqual({ db: 0o600, journal: 0o600 })
    }).pipe(Effect.scoped))

  it.live("ClaudeSessionStoreSql.layerSqlite stores transcripts in 0600 files", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "sessions.sqlite")
      const seen = yield* Effect.andThen(
        Effect.flatMap(ClaudeSessionStore, (store) => store.listSessions("p")),
        Effect.sync(() => modes(file))
      ).pipe(Effect.provide(ClaudeSessionStoreSql.layerSqlite({ filename: file })))
      expect(seen).toEqual(private0600)
    }).pipe(Effect.scoped))

  it.live("AgentSettingsSqlite's default file is 0600 in directories it creates 0700", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const xdg = path.join(dir, "data")
      const file = AgentSettingsSqlite.defaultFilename({ XDG_DATA_HOME: xdg })
      const before = process.env["XDG_DATA_HOME"]
      process.env["XDG_DATA_HOME"] = xdg
      const seen = yield* Effect.gen(function*() {
        const settings = yield* AgentSettings
        yield* settings.create("reviewer")
        return modes(file)
      }).pipe(
        Effect.provide(AgentSettingsSqlite.layerSqlite()),
        Effect.ensuring(Effect.sync(() => {
          if (before === undefined) delete process.env["XDG_DATA_HOME"]
          else process.env["XDG_DATA_HOME"] = before
        }))
      )
      expect(seen).toEqual(private0600)
      expect(modeOf(path.dirname(file))).toBe(0o700)
      expect(modeOf(xdg)).toBe(0o700)
    }).pipe(Effect.scoped))

  it.live("an existing 0644 file and a world-writable directory are opened with warnings, left as they are", () =>
    Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "shared")
      fs.mkdirSync(dir)
      fs.chmodSync(dir, 0o777)
      const file = path.join(dir, "old.sqlite")
      fs.writeFileSync(file, "", { mode: 0o644 })
      const { logger, warnings } = captureWarnings()
      yield* writeRow.pipe(Effect.provide(SqliteClient.layer({ filename: file })), Effect.provide(logger))
      expect(warnings).toEqual([
        `${file} has mode 0644: other users can read the conversations it holds; chmod 600 it`,
        `${dir} has mode 0777: other users can replace old.sqlite or its -wal/-shm files; keep it in a ` +
        "directory only you can write to (chmod 700)"
      ])
      expect(modeOf(file)).toBe(0o644)
    }).pipe(Effect.scoped))

  it.live("a private file in an ordinary 0755 directory opens without a warning", () =>
    Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "home")
      fs.mkdirSync(dir, { mode: 0o755 })
      const { logger, warnings } = captureWarnings()
      yield* writeRow.pipe(
        Effect.provide(SqliteClient.layer({ filename: path.join(dir, "a.sqlite") })),
        Effect.provide(logger)
      )
      expect(warnings).toEqual([])
    }).pipe(Effect.scoped))

  it.live("a leftover wider -shm of a private db is narrowed when the next client opens it", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "left.sqlite")
      const first = yield* Layer.build(SqliteClient.layer({ filename: file }))
      yield* writeRow.pipe(Effect.provideContext(first))
      fs.chmodSync(`${file}-shm`, 0o644)
      fs.chmodSync(`${file}-wal`, 0o644)
      const second = yield* SqliteClient.make({ filename: file }).pipe(Effect.provide(Reactivity.layer))
      yield* second`SELECT 1`
      expect(modes(file)).toEqual(private0600)
    }).pipe(Effect.scoped))
})
