/**
 * A validated set of tool descriptors — the one source of truth the policy, the settings catalog
 * and the drift guard read. Built only through `make` (or its sync forms), so every consumer can
 * rely on the set-level rules having been checked once.
 *
 * @summary A validated set of tool descriptors: what the policy, the settings catalog and the drift guard read.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ToolDescriptor from "./ToolDescriptor.ts"

/**
 * Marks values built by {@link make} (and its sync forms); {@link isRegistry} tests for it.
 *
 * @category models
 * @since 1.0.0
 */
export const TypeId: unique symbol = Symbol.for("effect-chat-bridge/Registry")
/**
 * The type of the {@link Registry} brand.
 *
 * @category models
 * @since 1.0.0
 */
export type TypeId = typeof TypeId

/**
 * Conditions a registry may use without declaring them. `workspace-has-git` is evaluated by
 * `Conditions.detectConditions` (and so by ClaudeLocal and ClaudeAgent from their working
 * directory); `agent-has-channel` is the application's to evaluate (it knows its channels) and
 * counts as false until it passes it in `conditions`. Declare other names with
 * `MakeOptions.conditions`.
 *
 * @category models
 * @since 1.0.0
 */
export const knownConditions: ReadonlyArray<string> = ["workspace-has-git", "agent-has-channel"]

/**
 * Pair groups of the Claude Code catalog.
 *
 * @category models
 * @since 1.0.0
 */
export const knownPairGroups: ReadonlyArray<string> = ["bash", "mcpResource", "planMode", "taskCluster", "worktree"]

/**
 * Extra names an application may declare for its own descriptors.
 *
 * @category config
 * @since 1.0.0
 */
export interface MakeOptions {
  /** Condition names accepted besides {@link knownConditions} (your application evaluates them). */
  readonly conditions?: ReadonlyArray<string>
  /** Pair-group names accepted besides {@link knownPairGroups}. */
  readonly pairGroups?: ReadonlyArray<string>
}

/**
 * A validated registry with the indexes the policy and the catalog view need.
 *
 * @category models
 * @since 1.0.0
 */
export interface Registry {
  /** The brand {@link isRegistry} checks. */
  readonly [TypeId]: TypeId
  /** In the order given to `make`. */
  readonly descriptors: ReadonlyArray<ToolDescriptor.ToolDescriptor>
  /** Descriptors by runtime name. */
  readonly byName: ReadonlyMap<string, ToolDescriptor.ToolDescriptor>
  /** Pair group → its members, in registry order. */
  readonly groups: ReadonlyMap<string, ReadonlyArray<ToolDescriptor.ToolDescriptor>>
  /** MCP servers that have at least one descriptor, sorted. */
  readonly mcpServers: ReadonlyArray<string>
  /** Every condition name this registry accepts (known and declared), sorted. */
  readonly conditions: ReadonlyArray<string>
  /** Every pair-group name this registry accepts (known and declared), sorted. */
  readonly pairGroups: ReadonlyArray<string>
}

/**
 * True for values built by `make`.
 *
 * @category guards
 * @since 1.0.0
 */
export const isRegistry = (u: unknown): u is Registry => typeof u === "object" && u !== null && TypeId in u

/**
 * The Schema of a whole registry: the descriptors plus the rules about the set.
 *
 * @category schemas
 * @since 1.0.0
 */
export const schema = (options: MakeOptions = {}) => {
  const conditions = new Set([...knownConditions, ...(options.conditions ?? [])])
  const pairGroups = new Set([...knownPairGroups, ...(options.pairGroups ?? [])])
  return Schema.Array(ToolDescriptor.ToolDescriptor).check(
    Schema.makeFilter((descriptors) => {
      const issues: Array<Schema.FilterIssue> = []
      const seen = new Map<string, number>()
      descriptors.forEach((d, i) => {
        const first = seen.get(d.name)
        if (first !== undefined) {
          issues.push({ path: [i, "name"], issue: `duplicate tool name ${d.name} (first at index ${first})` })
        } else {
          seen.set(d.name, i)
        }
        if (d.condition !== undefined && !conditions.has(d.condition)) {
          issues.push({
            path: [i, "condition"],
            issue: `unknown condition ${d.condition} (known: ${[...conditions].join(", ")})`
          })
        }
        if (d.pairGroup !== undefined && !pairGroups.has(d.pairGroup)) {
          issues.push({
            path: [i, "pairGroup"],
            issue: `unknown pairGroup ${d.pairGroup} (known: ${[...pairGroups].join(", ")})`
          })
        }
      })
      return issues
    }, { identifier: "Registry" })
  )
}

const build = (descriptors: ReadonlyArray<ToolDescriptor.ToolDescriptor>, options: MakeOptions): Registry => {
  const byName = new Map<string, ToolDescriptor.ToolDescriptor>()
  const groups = new Map<string, Array<ToolDescriptor.ToolDescriptor>>()
  const servers = new Set<string>()
  for (const d of descriptors) {
    byName.set(d.name, d)
    if (d.pairGroup !== undefined) {
      const members = groups.get(d.pairGroup)
      if (members === undefined) groups.set(d.pairGroup, [d])
      else members.push(d)
    }
    if (d.mcpServer !== undefined) servers.add(d.mcpServer)
  }
  return {
    [TypeId]: TypeId,
    descriptors,
    byName,
    groups,
    mcpServers: [...servers].sort(),
    conditions: [...new Set([...knownConditions, ...(options.conditions ?? [])])].sort(),
    pairGroups: [...new Set([...knownPairGroups, ...(options.pairGroups ?? [])])].sort()
  }
}

/**
 * Validates `descriptors` as a whole; a `SchemaError` names the offending entry (its index) and field.
 * Use `[...ClaudeCodeCatalog.descriptors, ...yours]` to merge application tools with the catalog.
 *
 * @category constructors
 * @since 1.0.0
 */
export const makeResult = (
  descriptors: ReadonlyArray<ToolDescriptor.ToolDescriptorInput>,
  options: MakeOptions = {}
): Result.Result<Registry, Schema.SchemaError> =>
  Result.map(
    // `reportInput`: Effect 4 names the rejected value only when asked; Effect 3 always did.
    Schema.decodeUnknownResult(schema(options))(descriptors, {
      errors: "all",
      onExcessProperty: "error",
      reportInput: true
    }),
    (ds) => build(ds, options)
  )

/**
 * Effect form of {@link makeResult}: fails with a `SchemaError` naming the offending entry and field.
 *
 * **Example** (The Claude Code catalog plus an MCP tool)
 *
 * ```ts
 * import { ClaudeCodeCatalog, Registry } from "effect-chat-bridge"
 *
 * const registry = Registry.make([
 *   ...ClaudeCodeCatalog.descriptors,
 *   Registry.mcpTool({ server: "crm", wireName: "lookup_customer", category: "search" })
 * ])
 * ```
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: (
  descriptors: ReadonlyArray<ToolDescriptor.ToolDescriptorInput>,
  options?: MakeOptions
) => Effect.Effect<Registry, Schema.SchemaError> = Effect.fn("Registry.make")(function*(descriptors, options) {
  return yield* Effect.fromResult(makeResult(descriptors, options))
})

/**
 * For static data known to be valid (the shipped catalog): throws the `SchemaError` otherwise.
 *
 * @category constructors
 * @since 1.0.0
 */
export const unsafeMake = (
  descriptors: ReadonlyArray<ToolDescriptor.ToolDescriptorInput>,
  options: MakeOptions = {}
): Registry => Result.getOrThrowWith(makeResult(descriptors, options), (e) => e)

/**
 * What an application says about one of its MCP tools; `mcpTool` fills in the rest.
 *
 * @category config
 * @since 1.0.0
 */
export interface McpToolOptions {
  /** The MCP server name (no `__`, no leading or trailing `_`). */
  readonly server: string
  /** The tool's name on that server. */
  readonly wireName: string
  /** The settings-UI section. */
  readonly category: ToolDescriptor.Category
  /** Default `user` (shown and toggleable). */
  readonly exposure?: ToolDescriptor.Exposure
  /** Required iff `exposure` is `conditional`. */
  readonly condition?: string
  /** Members of a pair group are enabled and disabled together. */
  readonly pairGroup?: string
  /** The tool needs someone to answer it: blocked on headless turns. */
  readonly interactive?: boolean
  /** Default `tools.mcp.<server>.<wire>.label`. */
  readonly labelKey?: string
  /** Default `tools.mcp.<server>.<wire>.description`. */
  readonly descriptionKey?: string
  /** One line saying why the tool has this classification. */
  readonly reason?: string
}

/**
 * An MCP tool descriptor (`mcp__<server>__<wire>`), `user` exposure by default, with i18n keys
 * `tools.mcp.<server>.<wire>.label` / `.description` unless given.
 *
 * @category constructors
 * @since 1.0.0
 */
export const mcpTool = (options: McpToolOptions): ToolDescriptor.ToolDescriptorInput => {
  const key = `tools.mcp.${options.server}.${options.wireName}`
  return {
    name: ToolDescriptor.mcpToolName(options.server, options.wireName),
    category: options.category,
    exposure: options.exposure ?? "user",
    kind: "mcp",
    mcpServer: options.server,
    mcpWireName: options.wireName,
    labelKey: options.labelKey ?? `${key}.label`,
    descriptionKey: options.descriptionKey ?? `${key}.description`,
    ...(options.condition === undefined ? {} : { condition: options.condition }),
    ...(options.pairGroup === undefined ? {} : { pairGroup: options.pairGroup }),
    ...(options.interactive === undefined ? {} : { interactive: options.interactive }),
    ...(options.reason === undefined ? {} : { reason: options.reason })
  }
}
