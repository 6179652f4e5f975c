/**
 * Claude Code's extension points as both Claude providers apply them: the typed options
 * (`thinking`, `tools`, `agents`, `sandbox`, `plugins`, `skills`) checked once against their
 * schemas, and the parts the tool policy also decides (a subagent's tools, the `tools` list, the
 * skills) passed through the resolved policy, which wins. What it leaves out is reported in the
 * policy's `ignored`, like an opt-out it cannot apply.
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as ToolPolicy from "../../registry/ToolPolicy.ts"
import {
  AgentDefinition,
  type ClaudeCodeOptions,
  Plugin,
  Sandbox,
  Skills,
  Thinking,
  ToolsPreset
} from "../../services/ClaudeCodeOptions.ts"

/** The options this module reads. */
export type Extensions = Pick<
  ClaudeCodeOptions,
  "thinking" | "maxThinkingTokens" | "tools" | "agents" | "sandbox" | "plugins" | "skills" | "settingSources"
>

const Checked = Schema.Struct({
  thinking: Schema.optional(Thinking),
  maxThinkingTokens: Schema.optional(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  tools: Schema.optional(ToolsPreset),
  agents: Schema.optional(Schema.Record(Schema.String, AgentDefinition)),
  sandbox: Schema.optional(Sandbox),
  plugins: Schema.optional(Schema.Array(Plugin)),
  skills: Schema.optional(Skills)
})

const AgentName = /^[A-Za-z0-9_-]{1,64}$/

const decodeChecked = Schema.decodeUnknownResult(Checked)

/** Why the typed options cannot be used as given; none when they can. */
export const invalid = (options: Extensions): string | undefined => {
  const { agents, maxThinkingTokens, plugins, sandbox, skills, thinking, tools } = options
  const checked = decodeChecked({ agents, maxThinkingTokens, plugins, sandbox, skills, thinking, tools })
  if (Result.isFailure(checked)) return `Invalid Claude Code options: ${checked.failure.message}`
  const badName = Object.keys(agents ?? {}).find((name) => !AgentName.test(name))
  if (badName !== undefined) {
    return `agents: ${JSON.stringify(badName)} is not an agent name (letters, digits, _ and -, at most 64)`
  }
  // Without `--strict-mcp-config` the settings sources' servers would mount too, unseen by the policy.
  if (mcpDiscovery(options) && (options.settingSources ?? []).length > 0) {
    return "plugins: skipMcpDiscovery: false needs settingSources: [] (the CLI would also mount the settings' MCP servers)"
  }
  return undefined
}

/** A policy that denies and allows nothing, for code that has none to apply. */
export const noPolicy: ToolPolicy.ToolPolicy = {
  disallowedTools: [],
  allowedTools: [],
  mountedServers: [],
  responderTools: [],
  ignored: [],
  withheld: []
}

/** A plugin asked for its MCP servers, so the run cannot use `--strict-mcp-config`. */
export const mcpDiscovery = (options: Extensions): boolean =>
  (options.plugins ?? []).some((plugin) => plugin.skipMcpDiscovery === false)

/**
 * Whether the policy denies a tool: by name, or (an MCP tool) by a wildcard or an unmounted
 * server.
 */
export const deniedBy = (policy: ToolPolicy.ToolPolicy) => {
  const denied = new Set(policy.disallowedTools)
  return (name: string): boolean => {
    if (denied.has(name)) return true
    const server = /^mcp__(.+?)__/.exec(name)?.[1]
    return server !== undefined &&
      (denied.has("mcp__*") || denied.has(`mcp__${server}__*`) || denied.has(`mcp__${server}`))
  }
}

const deniedEntry = (entry: string, tool: string): ToolPolicy.IgnoredOptOut => ({
  entry,
  kind: "denied",
  message: `${entry} names ${tool}, which the tool policy denies; it is left out`
})

/** The `tools` list and each subagent's `tools`, without what the policy denies. */
const keptTools = (tools: ReadonlyArray<string>, denied: (name: string) => boolean) =>
  tools.filter((name) => !denied(name))

/** The allow entries `skills` asks for: `Skill` for all, `Skill(<name>)` for each named one. */
const skillEntries = (skills: Skills): ReadonlyArray<string> =>
  skills === "all" ? ["Skill"] : skills.map((name) => `Skill(${name})`)

/**
 * The policy with the skills' allow entries (unless it denies `Skill`), and with what the typed
 * options ask for and the policy denies added to `ignored`.
 */
export const extendPolicy = (options: Extensions) => (policy: ToolPolicy.ToolPolicy): ToolPolicy.ToolPolicy => {
  const denied = deniedBy(policy)
  const conflicts: Array<ToolPolicy.IgnoredOptOut> = []
  if (Array.isArray(options.tools)) {
    for (const tool of options.tools as ReadonlyArray<string>) {
      if (denied(tool)) conflicts.push(deniedEntry(`tools: ${tool}`, tool))
    }
  }
  for (const [name, agent] of Object.entries(options.agents ?? {})) {
    for (const tool of agent.tools ?? []) {
      if (denied(tool)) conflicts.push(deniedEntry(`agents.${name}.tools: ${tool}`, tool))
    }
  }
  let allowed = policy.allowedTools
  if (options.skills !== undefined) {
    if (denied("Skill")) {
      conflicts.push(deniedEntry(`skills: ${options.skills === "all" ? "all" : options.skills.join(", ")}`, "Skill"))
    } else if (options.skills === "all" || options.skills.length > 0) {
      allowed = [...new Set([...allowed, ...skillEntries(options.skills)])].sort()
    }
  }
  return conflicts.length === 0 && allowed === policy.allowedTools
    ? policy
    : { ...policy, allowedTools: allowed, ignored: [...policy.ignored, ...conflicts] }
}

/** `tools` as the run gets it: a list without the tools the policy denies. */
export const toolsFor = (tools: ToolsPreset | undefined, policy: ToolPolicy.ToolPolicy): ToolsPreset | undefined =>
  tools === undefined || tools === "default" ? tools : keptTools(tools, deniedBy(policy))

/** The subagents as the run gets them: each one's `tools` without what the policy denies. */
export const agentsFor = (
  agents: ClaudeCodeOptions["agents"],
  policy: ToolPolicy.ToolPolicy
): Record<string, AgentDefinition> | undefined => {
  if (agents === undefined) return undefined
  const denied = deniedBy(policy)
  return Object.fromEntries(
    Object.entries(agents).map(([name, a]) => [name, {
      description: a.description,
      prompt: a.prompt,
      ...(a.tools === undefined ? {} : { tools: keptTools(a.tools, denied) }),
      ...(a.disallowedTools === undefined ? {} : { disallowedTools: [...a.disallowedTools] }),
      ...(a.model === undefined ? {} : { model: a.model })
    }])
  )
}

/**
 * The `sandbox` settings block: the typed subset as Claude Code's settings spell it, with
 * `failIfUnavailable` on when `enabled` is and it is not given (as the Agent SDK does).
 */
export const sandboxSettings = (sandbox: Sandbox): Sandbox =>
  sandbox.enabled === true && sandbox.failIfUnavailable === undefined
    ? { ...sandbox, failIfUnavailable: true }
    : sandbox

const list = (xs: ReadonlyArray<string> | undefined) => (xs === undefined ? undefined : [...xs])

/** {@link sandboxSettings} with mutable lists, as the Agent SDK's `sandbox` option is typed. */
export const sdkSandbox = (sandbox: Sandbox) => {
  const { enabled, failIfUnavailable, filesystem, network } = sandboxSettings(sandbox)
  return {
    ...(enabled === undefined ? {} : { enabled }),
    ...(failIfUnavailable === undefined ? {} : { failIfUnavailable }),
    ...(network === undefined
      ? {}
      : { network: { allowedDomains: list(network.allowedDomains), deniedDomains: list(network.deniedDomains) } }),
    ...(filesystem === undefined ? {} : {
      filesystem: {
        allowRead: list(filesystem.allowRead),
        denyRead: list(filesystem.denyRead),
        allowWrite: list(filesystem.allowWrite),
        denyWrite: list(filesystem.denyWrite)
      }
    })
  }
}

/** `thinking` (or `maxThinkingTokens`) as CLI flags, as the Agent SDK passes them. */
export const thinkingFlags = (options: Extensions): ReadonlyArray<string> => {
  const { maxThinkingTokens, thinking } = options
  if (thinking === undefined) {
    return maxThinkingTokens === undefined ? [] : [`--max-thinking-tokens=${maxThinkingTokens}`]
  }
  switch (thinking.type) {
    case "enabled":
      return [`--max-thinking-tokens=${thinking.budgetTokens}`]
    case "adaptive":
    case "disabled":
      return [`--thinking=${thinking.type}`]
  }
}

/**
 * The CLI flags of `tools`, `plugins` and `thinking` for a run under `policy` (`agents` are in
 * `cliFlags`, which also filters them).
 */
export const cliFlags = (options: Extensions, policy: ToolPolicy.ToolPolicy): ReadonlyArray<string> => {
  const tools = toolsFor(options.tools, policy)
  return [
    ...thinkingFlags(options),
    ...(tools === undefined ? [] : [`--tools=${tools === "default" ? "default" : tools.join(",")}`]),
    ...(options.plugins ?? []).map((plugin) =>
      plugin.skipMcpDiscovery === false ? `--plugin-dir=${plugin.path}` : `--plugin-dir-no-mcp=${plugin.path}`
    )
  ]
}
