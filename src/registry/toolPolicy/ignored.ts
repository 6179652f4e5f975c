/**
 * The `ignored` report: what the policy says about an opt-out it cannot apply as written — an
 * unknown name (with the registry name it most likely means), an always-on tool, a wildcard that
 * also matches always-on tools.
 */
import type { IgnoredOptOut } from "./model.ts"
import type { Plan } from "./plan.ts"

/** What an expanded wildcard turned off: every tool (pair groups included) and every server. */
export const wildcardReport = (
  plan: Plan,
  entry: string,
  keptOn: ReadonlyArray<string>,
  tools: ReadonlyArray<string>,
  servers: ReadonlyArray<string>
): IgnoredOptOut => {
  const kept = `(${keptOn.join(", ")})`
  if (tools.length === 0 && servers.length === 0) {
    return {
      entry,
      kind: "always-on",
      message: `${entry} only matches tools that are always on ${kept}; it turns nothing off`
    }
  }
  const off = new Set<string>()
  for (const n of tools) for (const m of plan.groupOf.get(n) ?? [n]) off.add(m)
  const whole = servers.length === 0
    ? ""
    : ` and every tool of the server${servers.length === 1 ? "" : "s"} ${servers.join(", ")}, which ${
      servers.length === 1 ? "is" : "are"
    } not mounted`
  const rest = servers.length === 0 ? "tools" : "on other servers, tools"
  return {
    entry,
    kind: "partly-applied",
    message: `${entry} also matches tools that are always on ${kept}; it turns off ${off.size} tool${
      off.size === 1 ? "" : "s"
    } the registry knows${whole}; ${rest} the registry does not know stay on`,
    applied: [...off, ...servers.map((s) => `mcp__${s}__*`)].sort(),
    ...(servers.length === 0 ? {} : { servers })
  }
}

export const unknownName = (plan: Plan, entry: string): IgnoredOptOut => {
  const suggestion = nearestBuiltin(plan, entry)
  const what = `${entry} is not a tool the registry knows`
  return suggestion === undefined
    ? { entry, kind: "unknown", message: `${what}; it is passed on as written and turns off only a tool of that name` }
    : {
      entry,
      kind: "unknown",
      message: `${what}: did you mean ${suggestion}?${
        suggestion.toLowerCase() === entry.toLowerCase() ? " Tool names are case-sensitive." : ""
      }`,
      suggestion
    }
}

/** The registry built-in an unknown bare name most likely means (see `NearestName.nearest`), cached. */
const nearestBuiltin = (plan: Plan, entry: string): string | undefined => {
  if (plan.suggestions.has(entry)) return plan.suggestions.get(entry)
  const best = plan.builtins.nearest(entry)
  if (plan.suggestions.size > 1_000) plan.suggestions.clear()
  plan.suggestions.set(entry, best)
  return best
}

export const alwaysOn = (entry: string, exposure: string): IgnoredOptOut => ({
  entry,
  kind: "always-on",
  message: `${entry} is ${exposure === "conditional" ? "a conditional" : `an ${exposure}`} tool, which is always ${
    exposure === "conditional" ? "decided by its condition" : "on"
  }; remove it from the opt-outs`
})
