/**
 * `AgentSettings` in memory, with the same validation and semantics as the SQLite layer (both are
 * built on the same internal core). For tests and for applications that keep settings elsewhere.
 *
 * @summary `AgentSettings` in memory, with the SQLite layer's semantics: for tests (or settings kept elsewhere).
 * @group Testing
 * @since 0.1.0
 * @module
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as SynchronizedRef from "effect/SynchronizedRef"
import { makeService, normalize, type Store } from "../internal/agentSettings/store.ts"
import {
  AgentAlreadyExistsError,
  AgentNotFoundError,
  AgentSettings,
  type AgentSettingsService
} from "../services/AgentSettings.ts"

type Agents = ReadonlyMap<string, ReadonlyArray<string>>

/**
 * Builds an empty in-memory store. Each primitive is one `SynchronizedRef` step, so a
 * read-modify-write cannot interleave with another write.
 *
 * @category testing
 * @since 1.0.0
 */
export const make: Effect.Effect<AgentSettingsService> = Effect.gen(function*() {
  const ref = yield* SynchronizedRef.make<Agents>(new Map())

  const lookup = (agents: Agents, agentId: string) =>
    Option.match(Option.fromNullishOr(agents.get(agentId)), {
      onNone: () => Effect.fail(new AgentNotFoundError({ agentId })),
      onSome: Effect.succeed
    })

  const set = (agents: Agents, agentId: string, names: ReadonlyArray<string>): Agents =>
    new Map(agents).set(agentId, normalize(names))

  const store: Store = {
    insert: (agentId, names) =>
      SynchronizedRef.updateEffect(ref, (agents) =>
        agents.has(agentId)
          ? Effect.fail(new AgentAlreadyExistsError({ agentId }))
          : Effect.succeed(set(agents, agentId, names))),
    read: (agentId) => Effect.flatMap(SynchronizedRef.get(ref), (agents) => lookup(agents, agentId)),
    readAll: Effect.map(
      SynchronizedRef.get(ref),
      (agents) => Array.from(agents.keys()).sort().map((agentId) => ({ agentId, disabledTools: agents.get(agentId)! }))
    ),
    replace: (agentId, names) =>
      SynchronizedRef.updateEffect(
        ref,
        (agents) => Effect.as(lookup(agents, agentId), set(agents, agentId, names))
      ),
    modify: (agentId, _operation, f) =>
      SynchronizedRef.modifyEffect(ref, (agents) =>
        Effect.map(lookup(agents, agentId), (current) => {
          const next = normalize(f(current))
          return [next, set(agents, agentId, next)] as const
        })),
    delete: (agentId) =>
      SynchronizedRef.updateEffect(ref, (agents) =>
        Effect.map(lookup(agents, agentId), () => {
          const next = new Map(agents)
          next.delete(agentId)
          return next
        }))
  }
  return makeService(store)
})

/**
 * A fresh, empty in-memory `AgentSettings` per layer build.
 *
 * @category testing
 * @since 1.0.0
 */
export const layerMemory: Layer.Layer<AgentSettings> = Layer.effect(AgentSettings, make)
