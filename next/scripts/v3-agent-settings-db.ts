// Writes `test/layers/fixtures/agentSettings.v3.sqlite`: a settings database made by the Effect 3
// line's store (the repository root's `AgentSettingsSqlite.layerSqlite`, on `@effect/sql-sqlite-node`),
// which `test/layers/AgentSettingsSqliteV3File.test.ts` opens (a copy) with the Effect 4 store (issue 31:
// existing database files keep working).
//
// Run from the repository root with the root's Node and tsx (Effect 3 lives in the root's
// node_modules; this file imports it by path so that `next/node_modules`' Effect 4 is not picked up):
//
//   npx tsx next/scripts/v3-agent-settings-db.ts
//
// The agents here and `v3Agents` in the test must be the same.
import { existsSync, rmSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as Effect from "../../node_modules/effect/dist/esm/Effect.js"
import * as AgentSettingsSqlite from "../../src/layers/AgentSettingsSqlite.js"
import * as AgentSettings from "../../src/services/AgentSettings.js"

const file = fileURLToPath(new URL("../test/layers/fixtures/agentSettings.v3.sqlite", import.meta.url))
for (const suffix of ["", "-wal", "-shm", "-journal"]) {
  if (existsSync(file + suffix)) rmSync(file + suffix)
}

const program = Effect.gen(function*() {
  const settings = yield* AgentSettings.AgentSettings
  yield* settings.create("blank")
  yield* settings.create("coder", ["WebFetch", "WebSearch"])
  yield* settings.disable("coder", ["mcp__docs__*"])
  yield* settings.create("reviewer", ["Write", "Edit", "Bash"])
  yield* settings.enable("reviewer", ["Bash"])
  yield* settings.create("notes-user", ["mcp__notes__read", "mcp__notes__write", "mcp__*"])
  yield* settings.create("to-be-removed", ["Grep"])
  yield* settings.remove("to-be-removed")
  yield* settings.create("unicode ✓ agent", ["Read"])
  return yield* settings.list
})

Effect.runPromise(Effect.provide(program, AgentSettingsSqlite.layerSqlite({ filename: file }))).then(
  (agents) => process.stdout.write(`${JSON.stringify(agents, null, 2)}\n`),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exitCode = 1
  }
)
