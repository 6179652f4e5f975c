/**
 * What the AgentSettings layers share: argument validation, the meaning of disable/enable/toggle,
 * and the decoding of stored values. A layer only supplies the storage primitives (`Store`),
 * each of which is atomic on its own, so both layers have the same semantics by construction.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import {
  AgentId,
  type AgentSettingsService,
  CorruptedSettingsError,
  DisabledTools,
  InvalidSettingsInputError,
  PolicyRegistry,
  type Settings
} from "../../services/AgentSettings.ts"
import type {
  AgentAlreadyExistsError,
  AgentNotFoundError,
  AgentSettingsStorageError,
  ReadError
} from "../../services/AgentSettings.ts"

/** Storage primitives; every one runs as a single atomic step. */
export interface Store {
  readonly insert: (
    agentId: string,
    disabledTools: ReadonlyArray<string>
  ) => Effect.Effect<void, AgentAlreadyExistsError | AgentSettingsStorageError>
  readonly read: (agentId: string) => Effect.Effect<ReadonlyArray<string>, ReadError>
  readonly readAll: Effect.Effect<ReadonlyArray<Settings>, CorruptedSettingsError | AgentSettingsStorageError>
  readonly replace: (
    agentId: string,
    disabledTools: ReadonlyArray<string>
  ) => Effect.Effect<void, AgentNotFoundError | AgentSettingsStorageError>
  /** Reads, applies `f` and writes back with no other writer in between. */
  readonly modify: (
    agentId: string,
    operation: string,
    f: (current: ReadonlyArray<string>) => ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<string>, ReadError>
  readonly delete: (agentId: string) => Effect.Effect<void, AgentNotFoundError | AgentSettingsStorageError>
}

/** Sorted, without duplicates: the one stored form, so equal sets compare equal. */
export const normalize = (names: Iterable<string>): ReadonlyArray<string> => Array.from(new Set(names)).sort()

const format = (error: Schema.SchemaError): string => error.message

const StoredDisabledTools = Schema.fromJsonString(DisabledTools)
const decodeStoredResult = Schema.decodeUnknownResult(StoredDisabledTools)

/** The stored JSON text of `disabled_tools`, decoded; anything else names the agent. */
export const decodeStored = (
  agentId: string,
  raw: unknown
): Result.Result<ReadonlyArray<string>, CorruptedSettingsError> =>
  Result.mapBoth(decodeStoredResult(raw), {
    onFailure: (error) => new CorruptedSettingsError({ agentId, detail: format(error) }),
    onSuccess: normalize
  })

/** The JSON text stored for a (validated) list. */
export const encodeStored = (names: ReadonlyArray<string>): string => JSON.stringify(normalize(names))

const fromResult = <A, E>(result: Result.Result<A, E>): Effect.Effect<A, E> => Effect.fromResult(result)

const decodeAgentId = Schema.decodeUnknownResult(AgentId)

const validAgentId = (agentId: unknown) =>
  fromResult(Result.mapError(
    decodeAgentId(agentId),
    (e) => new InvalidSettingsInputError({ message: `invalid agent id: ${format(e)}` })
  ))

const decodeNames = Schema.decodeUnknownResult(Schema.Array(Schema.String))

/**
 * Names to remove: any strings (so entries stored before a rule changed can still be removed),
 * within the policy's bounds, checked first so a huge list costs nothing.
 */
const namesToRemove = (names: unknown) => {
  const tooLarge = ToolPolicy.oversized({ disabledTools: names })
  if (tooLarge !== undefined) return Effect.fail(new InvalidSettingsInputError({ message: tooLarge }))
  return fromResult(Result.mapError(
    decodeNames(names),
    (e) => new InvalidSettingsInputError({ message: `invalid tool names: ${format(e)}` })
  ))
}
/** Names to add: valid syntax, nothing the policy would ignore, and no built-in name the registry does not know. */
const namesToAdd = Effect.fnUntraced(function*(names: ReadonlyArray<string>) {
  const valid = yield* namesToRemove(names)
  const registry = yield* PolicyRegistry
  const refused = ToolPolicy.checkOptOuts(registry, valid)
  if (refused.length > 0) {
    const suggestions: Record<string, string> = {}
    for (const r of refused) if (r.suggestion !== undefined) suggestions[r.entry] = r.suggestion
    return yield* new InvalidSettingsInputError({
      message: `refused opt-outs: ${refused.map((r) => r.message).join("; ")}`,
      entries: refused.map((r) => r.entry),
      ...(Object.keys(suggestions).length > 0 ? { suggestions } : {})
    })
  }
  return valid
})

/** The service over a store; arguments are validated before the store is touched. */
export const makeService = (store: Store): AgentSettingsService => {
  const settings = (agentId: string, disabledTools: ReadonlyArray<string>): Settings => ({ agentId, disabledTools })

  const update = (operation: string, f: (current: Set<string>, names: ReadonlyArray<string>) => void) =>
    Effect.fn(`AgentSettings.${operation}`)(function*(agentId: string, names: ReadonlyArray<string>) {
      const id = yield* validAgentId(agentId)
      const valid = yield* (operation === "enable" ? namesToRemove(names) : namesToAdd(names))
      let over = 0
      const next = yield* store.modify(id, operation, (current) => {
        const set = new Set(current)
        f(set, valid)
        // Over the bound the stored list stays as it was: the policy could not read it back.
        if (set.size > ToolPolicy.MaxOptOuts) {
          over = set.size
          return current
        }
        return normalize(set)
      })
      if (over > 0) {
        return yield* new InvalidSettingsInputError({
          message: `agent ${JSON.stringify(id)} would have ${over} opt-outs; an agent has at most ` +
            `${ToolPolicy.MaxOptOuts} (use mcp__<server>__* for a whole server)`
        })
      }
      return settings(id, next)
    })

  const disable = update("disable", (set, names) => {
    for (const n of names) set.add(n)
  })
  const enable = update("enable", (set, names) => {
    for (const n of names) set.delete(n)
  })

  return {
    create: Effect.fn("AgentSettings.create")(function*(agentId: string, disabledTools: ReadonlyArray<string> = []) {
      const id = yield* validAgentId(agentId)
      const names = normalize(yield* namesToAdd(disabledTools))
      yield* store.insert(id, names)
      return settings(id, names)
    }),
    get: Effect.fn("AgentSettings.get")(function*(agentId: string) {
      const id = yield* validAgentId(agentId)
      return settings(id, yield* store.read(id))
    }),
    list: store.readAll.pipe(Effect.withSpan("AgentSettings.list")),
    setDisabledTools: Effect.fn("AgentSettings.setDisabledTools")(
      function*(agentId: string, names: ReadonlyArray<string>) {
        const id = yield* validAgentId(agentId)
        const next = normalize(yield* namesToAdd(names))
        yield* store.replace(id, next)
        return settings(id, next)
      }
    ),
    disable,
    enable,
    toggle: Effect.fn("AgentSettings.toggle")(
      function*(
        agentId: string,
        entry: { readonly id: string; readonly tools: ReadonlyArray<string> },
        enabled: boolean
      ) {
        if (entry.tools.length === 0) {
          return yield* new InvalidSettingsInputError({ message: `catalog entry ${entry.id} has no tools` })
        }
        return yield* (enabled ? enable : disable)(agentId, entry.tools)
      }
    ),
    remove: Effect.fn("AgentSettings.remove")(function*(agentId: string) {
      const id = yield* validAgentId(agentId)
      yield* store.delete(id)
    })
  }
}
