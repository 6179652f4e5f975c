/**
 * `effect-chat-bridge/agent-settings-sqlite`: the `AgentSettings` store on a SQLite file. A
 * separate entry point because it needs the optional peer `@effect/sql-sqlite-node` (and through
 * it the native `better-sqlite3`): the main entry never loads it. Building the layer without the
 * peer fails with an `AgentSettingsStorageError` that names the package to install.
 *
 * @since 0.1.0
 * @module
 */
export * as AgentSettingsSqlite from "./layers/AgentSettingsSqlite.js"
