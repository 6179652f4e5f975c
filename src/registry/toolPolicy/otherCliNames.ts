/**
 * What the Gemini CLI and Codex CLI compiles share: the registry a policy is checked against (the
 * other CLI's catalog plus the caller's MCP tools), and an opt-out list in that CLI's names —
 * Claude Code names become their equivalents (a wildcard also those of the Claude tools it
 * matches); a Claude Code tool without an equivalent has nothing to turn off; any other name
 * passes as it is (and is reported unknown by the compile if the CLI has no such tool).
 */
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as ClaudeCodeCatalog from "../ClaudeCodeCatalog.ts"
import * as Registry from "../Registry.ts"
import type { ToolDescriptor } from "../ToolDescriptor.ts"
import type { PermissionMode, ToolPolicy } from "./model.ts"

/** The parts of a CLI's catalog module the compile needs. */
export interface OtherCatalog {
  readonly descriptors: ReadonlyArray<ToolDescriptor>
  readonly registry: Registry.Registry
  readonly equivalentsOf: (claudeName: string) => ReadonlyArray<string>
}

/** A `*` pattern as a regular expression over whole names. */
export const globOf = (pattern: string): RegExp =>
  new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\/-]/g, "\\$&")).join(".*")}$`)

export const makeNames = (catalog: OtherCatalog) => {
  /** Claude Code name → its equivalents in the catalog's CLI (only names that have some). */
  const fromClaude: ReadonlyMap<string, ReadonlyArray<string>> = new Map(
    ClaudeCodeCatalog.descriptors.map((d) => [d.name as string, catalog.equivalentsOf(d.name)] as const)
      .filter(([, names]) => names.length > 0)
  )
  const merged = new WeakMap<Registry.Registry, Result.Result<Registry.Registry, Schema.SchemaError>>()

  /** The registry for `registry`: itself when it has the CLI's built-ins, else the catalog plus its MCP tools. */
  const registryOf = (registry: Registry.Registry | undefined) => {
    if (registry === undefined) return Result.succeed(catalog.registry)
    if (catalog.descriptors.every((d) => registry.byName.has(d.name))) return Result.succeed(registry)
    const cached = merged.get(registry)
    if (cached !== undefined) return cached
    const mcp: ReadonlyArray<ToolDescriptor> = registry.descriptors.filter((d) => d.kind === "mcp")
    const made = Registry.makeResult([...catalog.descriptors, ...mcp], {
      conditions: registry.conditions,
      pairGroups: registry.pairGroups
    })
    merged.set(registry, made)
    return made
  }

  /** The opt-outs `entries` in the CLI's names, each with the entry it came from. */
  const translate = (registry: Registry.Registry, entries: ReadonlyArray<string>) => {
    const names: Array<string> = []
    const origin = new Map<string, string>()
    const add = (name: string, entry: string) => {
      names.push(name)
      if (!origin.has(name)) origin.set(name, entry)
    }
    for (const entry of entries) {
      if (registry.byName.has(entry) || entry.startsWith("mcp__")) add(entry, entry)
      else if (fromClaude.has(entry)) { for (const name of fromClaude.get(entry)!) add(name, entry) }
      else if (ClaudeCodeCatalog.registry.byName.has(entry)) continue
      else {
        if (entry.includes("*")) {
          const glob = globOf(entry)
          for (const [claude, mapped] of fromClaude) {
            if (glob.test(claude)) {
              for (const name of mapped) add(name, entry)
            }
          }
        }
        add(entry, entry)
      }
    }
    return { names, origin }
  }

  return { registryOf, translate } as const
}

/** The lists of a compile's input. */
export interface ListsInput {
  readonly registry?: Registry.Registry | undefined
  readonly disabledTools?: ReadonlyArray<string> | undefined
  readonly allowedTools?: ReadonlyArray<string> | undefined
  readonly conditions?: Readonly<Record<string, boolean>> | undefined
}

/** What a compile knows of the session the policy is for. */
export interface SessionInput {
  readonly mcpServers?: ReadonlyArray<string> | undefined
  readonly permissionMode?: PermissionMode | undefined
  readonly canUseTool?: boolean | undefined
  readonly headless?: boolean | undefined
}

/** `ToolPolicy`'s resolution, passed in (the compiles are re-exported by `ToolPolicy.ts`). */
export type Resolve = (
  registry: Registry.Registry,
  agent: unknown,
  ctx: unknown
) => Result.Result<ToolPolicy, Schema.SchemaError>

/** A policy resolved in a CLI's names, with what the compile goes on from. */
export interface Resolved {
  readonly registry: Registry.Registry
  readonly policy: ToolPolicy
  /** `policy.ignored`, each entry named as the caller wrote it. */
  readonly ignored: ReadonlyArray<ToolPolicy["ignored"][number]>
  /** The opt-outs in the CLI's names, and the entry each came from. */
  readonly disabled: { readonly names: ReadonlyArray<string>; readonly origin: ReadonlyMap<string, string> }
  /** The `allowedTools` in the CLI's names, without wildcards. */
  readonly allowed: ReadonlyArray<string>
  readonly headless: boolean
  /** The session's extra MCP servers (the bridge). */
  readonly extra: ReadonlyArray<string>
}

/**
 * Resolves the policy in the CLI's names. Fails with the message of what is invalid.
 */
export const resolveIn = (
  names: ReturnType<typeof makeNames>,
  input: ListsInput,
  session: SessionInput,
  resolve: Resolve
): Result.Result<Resolved, string> => {
  const registry = names.registryOf(input.registry)
  if (Result.isFailure(registry)) return Result.fail(registry.failure.message)
  const reg = registry.success
  // Not strings: the resolution's decoder says what is wrong, with the input as written.
  const raw = [input.disabledTools ?? [], input.allowedTools ?? []]
  if (!raw.every((list) => Array.isArray(list) && list.every((e) => typeof e === "string"))) {
    const refused = resolve(reg, { disabledTools: input.disabledTools }, {
      conditions: {},
      headless: true,
      ...(input.allowedTools === undefined ? {} : { allowedTools: input.allowedTools })
    })
    return Result.fail(Result.isFailure(refused) ? refused.failure.message : "invalid lists")
  }
  const disabled = names.translate(reg, input.disabledTools ?? [])
  const allowed = names.translate(reg, input.allowedTools ?? []).names.filter((n) => !n.includes("*"))
  const extra = session.mcpServers ?? []
  const resolved = resolve(reg, { disabledTools: disabled.names }, {
    conditions: { ...input.conditions },
    headless: session.headless ?? true,
    ...(session.permissionMode === undefined ? {} : { permissionMode: session.permissionMode }),
    ...(session.canUseTool === true ? { canUseTool: true } : {}),
    ...(allowed.length === 0 ? {} : { allowedTools: [...new Set(allowed)].slice(0, 64) }),
    ...(extra.length === 0 ? {} : { mcpServers: extra })
  })
  if (Result.isFailure(resolved)) return Result.fail(resolved.failure.message)
  const policy = resolved.success
  const ignored = policy.ignored.map((i) => ({ ...i, entry: disabled.origin.get(i.entry) ?? i.entry }))
  return Result.succeed({
    registry: reg,
    policy,
    ignored,
    disabled,
    allowed,
    headless: session.headless ?? true,
    extra
  })
}
