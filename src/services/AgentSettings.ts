/**
 * Per-agent tool settings: the opt-out list (`disabledTools`, empty = every `user` tool enabled)
 * that the tool policy reads and a settings UI writes. Agents are created explicitly with
 * `create`; every other operation on an unknown agent is an `AgentNotFoundError`, so a mistyped
 * id never silently becomes a new agent.
 *
 * Implementations: `AgentSettingsSqlite.layerSqlite` (the default, a SQLite file with
 * migrations) and `AgentSettingsMemory.layerMemory` (tests).
 *
 * @summary Per-agent tool opt-outs (`disabledTools`) the policy reads and a settings UI writes.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as CatalogView from "../registry/CatalogView.ts"
import * as ClaudeCodeCatalog from "../registry/ClaudeCodeCatalog.ts"
import type * as Registry from "../registry/Registry.ts"
import * as ToolPolicy from "../registry/ToolPolicy.ts"

/**
 * An agent's id: 1–256 characters, no control characters.
 *
 * @category schemas
 * @since 1.0.0
 */
export const AgentId = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(256),
  Schema.isPattern(/^[^\u0000-\u001f\u007f]*$/, { message: "agent ids cannot contain control characters" })
).pipe(Schema.annotate({ identifier: "AgentId" }))

/**
 * One opt-out, as `ToolPolicy.OptOutEntry` spells it: a tool name (`Bash`, `mcp__notes__read`),
 * a whole MCP server (`mcp__notes`, `mcp__notes__*`) or a `*` wildcard (`mcp__*`). Commas and
 * spaces are refused because the CLI splits its lists on them. Beyond this syntax, writes also
 * refuse entries the policy would not apply (see {@link PolicyRegistry}).
 *
 * @category schemas
 * @since 1.0.0
 */
export const DisabledToolName = ToolPolicy.OptOutEntry.pipe(Schema.annotate({ identifier: "DisabledToolName" }))

/**
 * The registry writes are checked against: an opt-out that the policy would ignore for it (an
 * `internal` tool, a wildcard that only matches always-on tools) or a built-in tool name it does
 * not know (`Bsh`, `bash`: almost always a typo) is refused with an `InvalidSettingsInputError`
 * naming the entry (and, for a typo, the name it most likely means). Defaults to `ClaudeCodeCatalog.registry`; an
 * application with its own MCP tools provides its registry, e.g.
 * `Effect.provideService(AgentSettings.PolicyRegistry, registry)` or
 * `Layer.succeed(AgentSettings.PolicyRegistry, registry)`.
 *
 * @category services
 * @since 1.0.0
 */
export const PolicyRegistry: Context.Reference<Registry.Registry> = Context.Reference<Registry.Registry>(
  "effect-chat-bridge/AgentSettings/PolicyRegistry",
  { defaultValue: (): Registry.Registry => ClaudeCodeCatalog.registry }
)

/**
 * A list of opt-outs as given by callers: any order, duplicates allowed, at most
 * `ToolPolicy.MaxOptOuts` entries.
 *
 * @category schemas
 * @since 1.0.0
 */
export const DisabledTools = Schema.Array(DisabledToolName).check(
  Schema.isMaxLength(ToolPolicy.MaxOptOuts, { message: `an agent has at most ${ToolPolicy.MaxOptOuts} opt-outs` })
)

/**
 * An agent's stored settings. `disabledTools` is sorted and free of duplicates.
 *
 * @category schemas
 * @since 1.0.0
 */
export const Settings = Schema.Struct({
  /** The agent's id. */
  agentId: AgentId,
  /** Tool names (or `mcp__<server>__*` for a whole server) the agent opted out of. */
  disabledTools: DisabledTools
})
/**
 * The type of {@link Settings}.
 *
 * @category models
 * @since 1.0.0
 */
export type Settings = typeof Settings.Type

/**
 * No agent with this id exists (create it with `create`).
 *
 * @category errors
 * @since 1.0.0
 */
export class AgentNotFoundError extends Schema.TaggedError<AgentNotFoundError>()("AgentNotFoundError", {
  /** The id that was looked up. */
  agentId: Schema.String
}) {
  /** Names the missing agent. */
  override get message(): string {
    return `agent ${JSON.stringify(this.agentId)} does not exist`
  }
}

/**
 * `create` was called for an id that already exists.
 *
 * @category errors
 * @since 1.0.0
 */
export class AgentAlreadyExistsError extends Schema.TaggedError<AgentAlreadyExistsError>()(
  "AgentAlreadyExistsError",
  {
    /** The id that is taken. */
    agentId: Schema.String
  }
) {
  /** Names the existing agent. */
  override get message(): string {
    return `agent ${JSON.stringify(this.agentId)} already exists`
  }
}

/**
 * The stored settings of an agent are not a valid `disabledTools` list (edited by hand, written
 * by another program). `setDisabledTools` overwrites the value without reading it, which repairs
 * the agent.
 *
 * @since 2.0.0
 * @category errors
 */
export class CorruptedSettingsError extends Schema.TaggedError<CorruptedSettingsError>()("CorruptedSettingsError", {
  /** The agent whose stored value is invalid. */
  agentId: Schema.String,
  /** What is wrong with the stored value (free text; this error has no sub-kinds). */
  detail: Schema.String
}) {
  /** Names the agent and what is wrong. */
  override get message(): string {
    return `stored settings of agent ${JSON.stringify(this.agentId)} are corrupted: ${this.detail}`
  }
}

/**
 * An argument is not valid (agent id, tool name, policy context); nothing was written. A tool
 * name the registry does not know is refused with the registry name it most likely means in
 * `suggestions` (`{ Bsh: "Bash" }`), for a settings screen to offer.
 *
 * @category errors
 * @since 1.0.0
 */
export class InvalidSettingsInputError extends Schema.TaggedError<InvalidSettingsInputError>()(
  "InvalidSettingsInputError",
  {
    /** Which argument is invalid and why. */
    message: Schema.String,
    /** The refused opt-out entries, when the argument was a list of them. */
    entries: Schema.optional(Schema.Array(Schema.String)),
    /** Refused unknown entry → the registry tool name it most likely means (when one is close). */
    suggestions: Schema.optional(Schema.Record(Schema.String, Schema.String))
  }
) {}

/**
 * The database was busy or could not be reached (a lock held too long, a lost connection).
 * Retryable: the same call may succeed once the other writer is done.
 *
 * @since 2.0.0
 * @category errors
 */
export class StorageUnavailable extends Schema.TaggedError<StorageUnavailable>(
  "effect-chat-bridge/AgentSettingsStorageError/StorageUnavailable"
)("StorageUnavailable", {
  /** What failed, without the settings' contents. */
  message: Schema.String
}) {
  /** Always retryable. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The database could not be opened, migrated, read or written for a reason that stays (a missing
 * directory, a file that is not a database, a client that is not SQLite, a broken schema). Not
 * retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class StorageFailed extends Schema.TaggedError<StorageFailed>(
  "effect-chat-bridge/AgentSettingsStorageError/StorageFailed"
)("StorageFailed", {
  /** What failed, without the settings' contents. */
  message: Schema.String
}) {
  /** Never retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Why the settings storage failed.
 *
 * @since 2.0.0
 * @category schemas
 */
export const AgentSettingsStorageErrorReason: Schema.Union<[typeof StorageUnavailable, typeof StorageFailed]> = Schema
  .Union([StorageUnavailable, StorageFailed])

/**
 * The type of {@link AgentSettingsStorageErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type AgentSettingsStorageErrorReason = typeof AgentSettingsStorageErrorReason.Type

/**
 * The storage failed: the database could not be opened, migrated, read or written. `operation`
 * says which step (`open`, `migrate`, `get`, `disable`, …); the reason says whether trying again
 * may help (`Effect.catchReason("AgentSettingsStorageError", "StorageUnavailable", …)`).
 *
 * @since 2.0.0
 * @category errors
 */
export class AgentSettingsStorageError extends Schema.TaggedError<AgentSettingsStorageError>()(
  "AgentSettingsStorageError",
  {
    /** What was being done, e.g. `open`, `migrate`, `disable`. */
    operation: Schema.String,
    /** What happened. */
    reason: AgentSettingsStorageErrorReason,
    /** The underlying error (for example the SQL error), when there is one. */
    cause: Schema.optional(Schema.Defect())
  }
) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether trying again may succeed; the reason decides. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * Errors of operations that read an existing agent's settings.
 *
 * @category errors
 * @since 1.0.0
 */
export type ReadError = AgentNotFoundError | CorruptedSettingsError | AgentSettingsStorageError

/**
 * The AgentSettings service. Every write is atomic: concurrent writers never lose an update.
 *
 * @category models
 * @since 1.0.0
 */
export interface AgentSettingsService {
  /** Creates an agent with the given opt-outs (none by default). */
  readonly create: (
    agentId: string,
    disabledTools?: ReadonlyArray<string>
  ) => Effect.Effect<Settings, AgentAlreadyExistsError | InvalidSettingsInputError | AgentSettingsStorageError>
  /** Reads an agent's settings. */
  readonly get: (agentId: string) => Effect.Effect<Settings, ReadError | InvalidSettingsInputError>
  /** Every agent, by id. One corrupted agent fails the listing with its `CorruptedSettingsError`. */
  readonly list: Effect.Effect<ReadonlyArray<Settings>, CorruptedSettingsError | AgentSettingsStorageError>
  /** Replaces the opt-outs without reading the previous value (so it also repairs a corrupted agent). */
  readonly setDisabledTools: (
    agentId: string,
    names: ReadonlyArray<string>
  ) => Effect.Effect<Settings, AgentNotFoundError | InvalidSettingsInputError | AgentSettingsStorageError>
  /** Adds `names` to the opt-outs, atomically. */
  readonly disable: (
    agentId: string,
    names: ReadonlyArray<string>
  ) => Effect.Effect<Settings, ReadError | InvalidSettingsInputError>
  /** Removes `names` from the opt-outs, atomically. */
  readonly enable: (
    agentId: string,
    names: ReadonlyArray<string>
  ) => Effect.Effect<Settings, ReadError | InvalidSettingsInputError>
  /**
   * Flips one settings switch: every tool of the catalog entry (all `user` members of a pair
   * group) is enabled or disabled together. Enabling an MCP tool whose whole server the agent
   * opted out of (`mcp__server__*`) leaves the server opt-out, so the tool stays off.
   */
  readonly toggle: (
    agentId: string,
    entry: Pick<CatalogView.CatalogEntry, "id" | "tools">,
    enabled: boolean
  ) => Effect.Effect<Settings, ReadError | InvalidSettingsInputError>
  /** Deletes an agent and its settings. */
  readonly remove: (
    agentId: string
  ) => Effect.Effect<void, AgentNotFoundError | InvalidSettingsInputError | AgentSettingsStorageError>
}

/**
 * Per-agent tool settings. Provided by `AgentSettingsSqlite.layerSqlite` or
 * `AgentSettingsMemory.layerMemory`; every operation fails with a typed error (see the methods of
 * {@link AgentSettingsService}), and an invalid argument is an `InvalidSettingsInputError` with
 * nothing written.
 *
 * @category services
 * @since 1.0.0
 */
export class AgentSettings extends Context.Service<AgentSettings, AgentSettingsService>()(
  "effect-chat-bridge/AgentSettings"
) {}

/**
 * Options of `resolveToolPolicyFor`.
 *
 * @category config
 * @since 1.0.0
 */
export interface ResolveOptions {
  /** The registry the policy is computed from. Defaults to {@link PolicyRegistry}. */
  readonly registry?: Registry.Registry
}

/**
 * The tool policy of a stored agent for a session: its `disabledTools` read through the
 * `AgentSettings` service, resolved against `options.registry` (the Claude Code catalog by
 * default). A context that is not a valid `PolicyContext` is an `InvalidSettingsInputError`.
 *
 * @category accessors
 * @since 1.0.0
 */
export const resolveToolPolicyFor: (
  agentId: string,
  ctx: ToolPolicy.PolicyContext,
  options?: ResolveOptions
) => Effect.Effect<ToolPolicy.ToolPolicy, ReadError | InvalidSettingsInputError, AgentSettings> = Effect.fn(
  "AgentSettings.resolveToolPolicyFor"
)(function*(agentId: string, ctx: ToolPolicy.PolicyContext, options: ResolveOptions = {}) {
  const service = yield* AgentSettings
  const settings = yield* service.get(agentId)
  const registry = options.registry ?? (yield* PolicyRegistry)
  return yield* Effect.fromResult(ToolPolicy.resolveToolPolicy(registry, settings, ctx)).pipe(
    Effect.mapError((error) => new InvalidSettingsInputError({ message: `invalid policy context: ${error.message}` }))
  )
})
