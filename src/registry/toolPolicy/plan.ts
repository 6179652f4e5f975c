/**
 * What the policy reads from a registry, computed once per registry and kept with it: the lists
 * resolution walks, the pair groups, the protected and gated servers, the names suggestions are
 * drawn from, and the caches of suggestions and of `baseBlocked`.
 */
import type * as Headless from "../../internal/policy/headlessTools.ts"
import * as NearestName from "../../internal/policy/nearestName.ts"
import type * as Registry from "../Registry.ts"
import type { WithheldTool } from "./model.ts"

/** What the policy reads from a registry, precomputed once per registry. */
export interface Plan {
  readonly disabled: ReadonlyArray<string>
  readonly conditional: ReadonlyArray<readonly [name: string, condition: string]>
  readonly interactive: ReadonlyArray<string>
  /** Tools Claude Code asks permission for, and when. */
  readonly asking: ReadonlyArray<readonly [name: string, asks: Headless.Asks]>
  /** Registry MCP tools that are auto-approved when enabled (every exposure but `gated`). */
  readonly mcp: ReadonlyArray<readonly [name: string, server: string, autoApprove: boolean]>
  readonly groups: ReadonlyArray<ReadonlyArray<string>>
  /** Tool → its pair group's members. */
  readonly groupOf: ReadonlyMap<string, ReadonlyArray<string>>
  /** Tools an opt-out can turn off: `user` and `disabled` ones, and members of a group with a `user` member. */
  readonly toggleable: ReadonlySet<string>
  /** Registry MCP servers with at least one tool an opt-out cannot turn off. */
  readonly protectedServers: ReadonlySet<string>
  /** Registry MCP servers with a `gated` tool: never auto-approved as a whole. */
  readonly gatedServers: ReadonlySet<string>
  /** Registry names without `mcp__`: what a mistyped bare name is compared with. */
  readonly builtins: NearestName.NameIndex
  /** `nearestBuiltin` by entry. */
  readonly suggestions: Map<string, string | undefined>
  readonly names: ReadonlyArray<string>
  /** `baseBlocked` by session shape. */
  readonly base: Map<string, Base>
}

const plans = new WeakMap<Registry.Registry, Plan>()

export const planOf = (registry: Registry.Registry): Plan => {
  const cached = plans.get(registry)
  if (cached !== undefined) return cached
  const groups = Array.from(registry.groups.values(), (members) => members.map((m) => m.name))
  const groupOf = new Map<string, ReadonlyArray<string>>()
  for (const members of groups) for (const n of members) groupOf.set(n, members)
  const ds = registry.descriptors
  const toggleable = new Set<string>()
  for (const d of ds) {
    if (d.exposure === "user" || d.exposure === "disabled") toggleable.add(d.name)
    if (d.exposure === "user" && d.pairGroup !== undefined) {
      for (const m of registry.groups.get(d.pairGroup) ?? []) toggleable.add(m.name)
    }
  }
  const protectedServers = new Set<string>()
  for (const d of ds) if (d.mcpServer !== undefined && !toggleable.has(d.name)) protectedServers.add(d.mcpServer)
  const plan: Plan = {
    disabled: ds.filter((d) => d.exposure === "disabled").map((d) => d.name),
    conditional: ds.filter((d) => d.exposure === "conditional").map((d) => [d.name, d.condition!] as const),
    interactive: ds.filter((d) => d.interactive === true).map((d) => d.name),
    asking: ds.flatMap((d) => d.asks === undefined ? [] : [[d.name, d.asks] as const]),
    mcp: ds.filter((d) => d.kind === "mcp").map((d) => [d.name, d.mcpServer!, d.exposure !== "gated"] as const),
    groups,
    groupOf,
    toggleable,
    protectedServers,
    gatedServers: new Set(ds.flatMap((d) => d.exposure === "gated" && d.mcpServer !== undefined ? [d.mcpServer] : [])),
    names: ds.map((d) => d.name),
    builtins: NearestName.make(ds.filter((d) => !d.name.startsWith("mcp__")).map((d) => d.name)),
    suggestions: new Map(),
    base: new Map()
  }
  plans.set(registry, plan)
  return plan
}

/** What `baseBlocked` (in `ToolPolicy.ts`) gives: the blocked tools, and the headless session's withheld ones. */
export interface Base {
  readonly blocked: ReadonlyArray<string>
  readonly withheld: ReadonlyArray<WithheldTool>
}
