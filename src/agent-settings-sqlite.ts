/**
 * `effect-chat-bridge/agent-settings-sqlite`: the `AgentSettings` store on a SQLite file, through
 * Node's built-in `node:sqlite` (Node ≥ 22.19; no native module and, unlike the v3 line, no
 * optional peer). Still a separate entry point, so the main entry does not pull in `effect/sql`
 * and the SQLite client. Building the layer on a Node without `node:sqlite` fails with an
 * `AgentSettingsStorageError` that says which Node is needed.
 *
 * Needs: nothing beyond the main entry's peers.
 *
 * @summary `AgentSettingsSqlite`: per-agent tool settings in a SQLite file (`node:sqlite`, no peer).
 * @since 0.1.0
 * @module effect-chat-bridge/agent-settings-sqlite
 */
export * as AgentSettingsSqlite from "./layers/AgentSettingsSqlite.ts"
