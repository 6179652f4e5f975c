/**
 * `effect-chat-bridge/cluster`: Claude Code conversations as entities of Effect's cluster, so a
 * conversation outlives the runner (process, machine) hosting it. `ClaudeConversation` is the
 * protocol and the caller's client, `ClaudeConversationRunner` hosts conversations on a runner,
 * `ClaudeCluster` gives the socket runner and client layers over SQL storage, with a check that
 * every member shares the shard layout. A separate entry point: it pulls in `effect/cluster`.
 *
 * Needs: nothing more for one machine (SQLite); `@effect/sql-pg` ^4 for many machines.
 *
 * @summary Claude Code conversations on Effect's cluster, across processes and machines.
 * @groupDescription Cluster
 * The conversation entity, the runner that hosts it, and the cluster layers under both.
 * @since 1.0.0
 * @module effect-chat-bridge/cluster
 */
export * as ClaudeCluster from "./layers/ClaudeCluster.ts"
export * as ClaudeConversationRunner from "./layers/ClaudeConversationRunner.ts"
export * as ClaudeConversation from "./services/ClaudeConversation.ts"
