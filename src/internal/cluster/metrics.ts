/**
 * The cluster conversations' metrics (re-exported by `ClaudeConversationRunner`), each labelled
 * with the `runner` that records it, and the session store wrapper that times its calls.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { ClaudeSessionStoreService } from "../../services/ClaudeSessionStore.ts"

/** Conversations whose entity is active on this runner. */
export const conversations = Metric.gauge("claude_cluster_conversations", {
  description: "Conversations whose entity is active on this runner"
})

/** Conversations activated here whose previous activation did not end cleanly (a dead runner). */
export const failovers = Metric.counter("claude_cluster_failovers", {
  description: "Conversations activated here after their previous runner died or lost the shard",
  incremental: true
})

/** Turns delivered again after they had started on a runner that did not finish them. */
export const redeliveredTurns = Metric.counter("claude_cluster_redelivered_turns", {
  description: "Turns delivered again after their runner died before finishing them",
  incremental: true
})

/** Seconds per session store call made by hosted conversations, labelled `operation`. */
export const storeLatency = Metric.histogram("claude_cluster_store_seconds", {
  boundaries: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  description: "Seconds per session store call made by hosted conversations"
})

/** Adds `value` to a gauge or counter, with attributes. */
export const track = (
  metric: Metric.Metric<number, unknown>,
  attributes: Readonly<Record<string, string>>,
  value: number
): Effect.Effect<void> => Metric.update(Metric.withAttributes(metric, attributes), value)

/** The store, with each call's latency recorded in {@link storeLatency}. */
export const instrumented = (store: ClaudeSessionStoreService): ClaudeSessionStoreService => {
  const timed = <A, E>(operation: string, effect: Effect.Effect<A, E>) =>
    Effect.suspend(() => {
      const start = performance.now()
      return Effect.ensuring(
        effect,
        Effect.suspend(() => track(storeLatency, { operation }, (performance.now() - start) / 1000))
      )
    })
  return {
    append: (key, entries) => timed("append", store.append(key, entries)),
    load: (key) => timed("load", store.load(key)),
    listSessions: (projectKey) => timed("listSessions", store.listSessions(projectKey)),
    listSubkeys: (key) => timed("listSubkeys", store.listSubkeys(key)),
    delete: (key) => timed("delete", store.delete(key))
  }
}
