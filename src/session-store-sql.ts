/**
 * `effect-chat-bridge/session-store-sql`: the `ClaudeSessionStore` on any `effect/sql` client —
 * a SQLite file through this library's `node:sqlite` client (the embedded default), or
 * PostgreSQL through `@effect/sql-pg` (installed by the application: `npm i @effect/sql-pg`) when
 * conversations move between machines. `SqliteClient` is that `node:sqlite` client, for an
 * application that shares one SQLite file between the store and its own tables (or the cluster's).
 * A separate entry point, so the main entry does not pull in `effect/sql`.
 *
 * Needs: nothing more for SQLite; `@effect/sql-pg` ^4 for PostgreSQL.
 *
 * @summary `ClaudeSessionStoreSql` and `SqliteClient`: Claude Code sessions in SQLite or PostgreSQL.
 * @since 1.0.0
 * @module effect-chat-bridge/session-store-sql
 */
export * as ClaudeSessionStoreSql from "./layers/ClaudeSessionStoreSql.ts"
export * as SqliteClient from "./layers/SqliteClient.ts"
