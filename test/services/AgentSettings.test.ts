import * as Effect from "effect/Effect"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as AgentSettingsMemory from "../../src/layers/AgentSettingsMemory.ts"
import * as AgentSettingsSqlite from "../../src/layers/AgentSettingsSqlite.ts"
import { agentSettingsSuite } from "../support/agentSettingsSuite.ts"

/** A fresh folder for one test, removed when its scope closes. */
const testFolder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "agent-settings-test-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

agentSettingsSuite("memory", (effect) => Effect.provide(effect, AgentSettingsMemory.layerMemory))

agentSettingsSuite(
  "SQLite file",
  (effect) =>
    Effect.flatMap(
      testFolder,
      (dir) => Effect.provide(effect, AgentSettingsSqlite.layerSqlite({ filename: path.join(dir, "agents.sqlite") }))
    )
)
