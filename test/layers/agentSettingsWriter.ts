/**
 * A second process writing to a settings database, for the cross-process test:
 * `node --import tsx agentSettingsWriter.ts <file> <agentId> <prefix> <count> <startAt>` waits until
 * `startAt` (epoch ms, so that all writers overlap whatever their start-up times), disables
 * `mcp__<prefix>__t0..count-1` concurrently, one `disable` call each, then prints `done <count>`.
 */
import * as Effect from "effect/Effect"
import * as AgentSettingsSqlite from "../../src/layers/AgentSettingsSqlite.ts"
import * as AgentSettings from "../../src/services/AgentSettings.ts"

const [file, agentId, prefix, count, startAt] = process.argv.slice(2)
if (
  file === undefined || agentId === undefined || prefix === undefined || count === undefined || startAt === undefined
) {
  throw new Error("usage: agentSettingsWriter.ts <file> <agentId> <prefix> <count> <startAt>")
}
const names = Array.from({ length: Number(count) }, (_, i) => `mcp__${prefix}__t${i}`)

const program = Effect.gen(function*() {
  const settings = yield* AgentSettings.AgentSettings
  yield* Effect.sleep(Math.max(0, Number(startAt) - Date.now()))
  yield* Effect.forEach(names, (name) => settings.disable(agentId, [name]), { concurrency: "unbounded", discard: true })
  yield* Effect.sync(() => process.stdout.write(`done ${names.length}\n`))
})

Effect.runPromise(Effect.provide(program, AgentSettingsSqlite.layerSqlite({ filename: file }))).catch((error) => {
  process.stderr.write(`${String(error)}\n`)
  process.exitCode = 1
})
