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
