/**
 * The built-in tools of OpenAI's Codex CLI 0.171.0 (`@openai/codex`), classified with the same
 * descriptor model as the Claude Code and Gemini CLI catalogs, so one settings screen and one
 * agent's opt-outs drive all three CLIs. Names are the names the model sees in a Responses
 * request's `tools` (a namespace's children by their own name: `spawn_agent`, not
 * `multi_agent_v1.spawn_agent`); `claudeEquivalents` says which Claude Code tool each stands for,
 * and `controls` which Codex switch takes it out of the request.
 *
 * @summary The built-in Codex CLI tools, classified, with their Claude Code equivalents and switches.
 * @group Claude Code tool policy
 * @since 2.2.0
 * @module
 */
import * as ClaudeCodeCatalog from "./ClaudeCodeCatalog.ts"
import * as Registry from "./Registry.ts"
import type * as ToolDescriptor from "./ToolDescriptor.ts"

/**
 * The `@openai/codex` version this catalog was classified against (the drift guard reads the
 * installed binary's requests).
 *
 * @category models
 * @since 2.2.0
 */
export const cliVersion = "0.171.0"

type Extra = Partial<
  Pick<ToolDescriptor.ToolDescriptorInput, "condition" | "pairGroup" | "interactive" | "asks" | "reason">
>

const builtin = <const N extends string>(
  name: N,
  category: ToolDescriptor.Category,
  exposure: ToolDescriptor.Exposure,
  extra: Extra = {}
): ToolDescriptor.ToolDescriptorInput & { readonly name: N; readonly kind: "sdk" } => ({
  name,
  category,
  exposure,
  kind: "sdk",
  labelKey: `tools.codex.${name}.label`,
  descriptionKey: `tools.codex.${name}.description`,
  ...extra
})

const subagents = "subagents are how Codex splits work"
const goals = "the thread's goal, kept by the CLI; session-local, no side effects"
const alwaysThere = "no Codex 0.171.0 switch removes it; in `codex exec` nobody can answer it"

/**
 * Every built-in tool of Codex CLI 0.171.0, in display order within each category. Which appear
 * depends on the model's metadata and on features: `apply_patch` and `tool_search` come with
 * models that declare them (`gpt-5.5`, not a model the CLI does not know), the MCP-resource tools
 * only with an MCP server mounted, the `multi_agent_v2` names (`followup_task`, …) only with that
 * feature on. `asks`: read as for Claude Code and Gemini CLI (a headless run withholds a shell
 * or an edit tool unless `allowedTools` or the permission mode lets it run), so one agent's
 * settings mean the same on all three CLIs; Codex itself runs them in its sandbox unasked.
 *
 * @category models
 * @since 2.2.0
 */
export const descriptors = [
  // shell
  builtin("exec_command", "shell", "user", { pairGroup: "bash", asks: "always" }),
  builtin("write_stdin", "shell", "internal", {
    pairGroup: "bash",
    reason: "writes to a running exec_command session; goes with exec_command"
  }),
  // file
  builtin("apply_patch", "file", "user", { asks: "edit" }),
  // orchestration
  builtin("spawn_agent", "orchestration", "internal", { reason: subagents }),
  builtin("send_input", "orchestration", "internal", { reason: subagents }),
  builtin("resume_agent", "orchestration", "internal", { reason: subagents }),
  builtin("wait_agent", "orchestration", "internal", { reason: subagents }),
  builtin("close_agent", "orchestration", "internal", { reason: subagents }),
  builtin("followup_task", "orchestration", "internal", { reason: subagents }),
  builtin("interrupt_agent", "orchestration", "internal", { reason: subagents }),
  builtin("list_agents", "orchestration", "internal", { reason: subagents }),
  builtin("send_message", "orchestration", "internal", { reason: subagents }),
  builtin("create_goal", "orchestration", "internal", { reason: goals }),
  builtin("get_goal", "orchestration", "internal", { reason: goals }),
  builtin("update_goal", "orchestration", "internal", { reason: goals }),
  builtin("request_user_input", "orchestration", "internal", { reason: alwaysThere }),
  builtin("request_permissions", "orchestration", "disabled", {
    reason: "asks the user for wider sandbox permissions; an experimental feature only an interactive client answers"
  }),
  builtin("send_message_to_user_async", "orchestration", "disabled", {
    reason: "messages the user in the middle of a turn; an experimental feature, the app gets the final answer"
  }),
  builtin("tool_search", "orchestration", "internal", {
    reason: "finds the MCP tools a model defers; blocking it hides MCP tools"
  }),
  builtin("list_mcp_resources", "orchestration", "internal", { pairGroup: "mcpResource" }),
  builtin("list_mcp_resource_templates", "orchestration", "internal", { pairGroup: "mcpResource" }),
  builtin("read_mcp_resource", "orchestration", "internal", { pairGroup: "mcpResource" }),
  // media
  builtin("view_image", "media", "user"),
  // context
  builtin("web_search", "context", "disabled", { reason: "an app with its own web tools serves them over MCP" })
] as const

/**
 * Runtime names of every catalog tool.
 *
 * @category models
 * @since 2.2.0
 */
export type ToolName = (typeof descriptors)[number]["name"]

/**
 * The switch that takes a tool out of Codex's request: `--disable <feature>` for each of
 * `features`, or the `-c` override in `config`. `sandbox`: no switch removes it, but the
 * `read-only` sandbox refuses what it writes. Tools without an entry stay whatever the policy
 * says (`request_user_input`, `tool_search`, the MCP-resource tools: always on).
 *
 * @category models
 * @since 2.2.0
 */
export const controls: Readonly<
  Partial<
    Record<
      ToolName,
      {
        readonly features?: ReadonlyArray<string>
        readonly config?: Readonly<Record<string, string>>
        readonly sandbox?: "read-only"
      }
    >
  >
> = {
  // `unified_exec` alone falls back to the same tool; `shell_tool` removes it.
  exec_command: { features: ["shell_tool", "unified_exec"] },
  write_stdin: { features: ["shell_tool", "unified_exec"] },
  apply_patch: { sandbox: "read-only" },
  spawn_agent: { features: ["multi_agent", "multi_agent_v2"] },
  send_input: { features: ["multi_agent", "multi_agent_v2"] },
  resume_agent: { features: ["multi_agent", "multi_agent_v2"] },
  wait_agent: { features: ["multi_agent", "multi_agent_v2"] },
  close_agent: { features: ["multi_agent", "multi_agent_v2"] },
  followup_task: { features: ["multi_agent", "multi_agent_v2"] },
  interrupt_agent: { features: ["multi_agent", "multi_agent_v2"] },
  list_agents: { features: ["multi_agent", "multi_agent_v2"] },
  send_message: { features: ["multi_agent", "multi_agent_v2"] },
  create_goal: { features: ["goals"] },
  get_goal: { features: ["goals"] },
  update_goal: { features: ["goals"] },
  request_permissions: { features: ["request_permissions_tool"] },
  send_message_to_user_async: { features: ["send_message_to_user_async"] },
  view_image: { features: ["view_image"] },
  web_search: { config: { web_search: "\"disabled\"" } }
}

/**
 * Features switched off on every run whatever the policy says: each brings tools from outside
 * the catalog (ChatGPT connectors, plugins, hosted image generation, the CLI's tool suggestions,
 * computer and browser use), which the app's settings cannot see.
 *
 * @category models
 * @since 2.2.0
 */
export const alwaysDisabledFeatures: ReadonlyArray<string> = [
  "apps",
  "browser_use",
  "computer_use",
  "image_generation",
  "plugins",
  "tool_suggest"
]

/**
 * Which Claude Code tools each Codex CLI tool stands for: an opt-out of a Claude Code name turns
 * off these Codex tools (and `ToolPolicy.toCodexPolicy` reads it). Tools without an entry have no
 * Claude Code counterpart.
 *
 * @category models
 * @since 2.2.0
 */
export const claudeEquivalents: Readonly<Partial<Record<ToolName, ReadonlyArray<string>>>> = {
  exec_command: ["Bash"],
  write_stdin: ["BashOutput"],
  apply_patch: ["Edit", "Write"],
  spawn_agent: ["Agent", "Task"],
  list_agents: ["ListAgents"],
  request_user_input: ["AskUserQuestion"],
  tool_search: ["ToolSearch"],
  list_mcp_resources: ["ListMcpResourcesTool"],
  list_mcp_resource_templates: ["ListMcpResourcesTool"],
  read_mcp_resource: ["ReadMcpResourceTool"],
  view_image: ["Read"],
  web_search: ["WebSearch"]
}

const fromClaude = new Map<string, Array<string>>()
for (const [codex, claude] of Object.entries(claudeEquivalents)) {
  for (const c of claude ?? []) fromClaude.set(c, [...(fromClaude.get(c) ?? []), codex])
}

/**
 * The Codex CLI tools a Claude Code tool stands for (empty for a tool without a counterpart, or a
 * name that is not a Claude Code tool).
 *
 * @category utils
 * @since 2.2.0
 */
export const equivalentsOf = (claudeName: string): ReadonlyArray<string> => fromClaude.get(claudeName) ?? []

/**
 * The Claude Code tools a Codex CLI tool stands for.
 *
 * @category utils
 * @since 2.2.0
 */
export const claudeNamesOf = (codexName: string): ReadonlyArray<string> =>
  (claudeEquivalents as Readonly<Record<string, ReadonlyArray<string> | undefined>>)[codexName] ?? []

/** Claude Code tool names with no Codex CLI counterpart (and no Codex tool of the same name). */
const claudeOnly: ReadonlySet<string> = new Set(
  ClaudeCodeCatalog.descriptors.map((d) => d.name as string).filter((n) => !fromClaude.has(n))
)

/**
 * An agent's opt-outs in Codex CLI names: each Claude Code tool with a counterpart becomes its
 * equivalents, one without is dropped (Codex has nothing to turn off), other entries (Codex
 * names, `mcp__…`, wildcards) are kept. Sorted, without duplicates.
 *
 * @category utils
 * @since 2.2.0
 */
export const fromClaudeNames = (entries: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out = new Set<string>()
  for (const entry of entries) {
    const equivalents = fromClaude.get(entry)
    if (equivalents !== undefined) { for (const c of equivalents) out.add(c) }
    else if (!claudeOnly.has(entry)) out.add(entry)
  }
  return [...out].sort()
}

/**
 * The catalog alone, validated.
 *
 * @category models
 * @since 2.2.0
 */
export const registry: Registry.Registry = Registry.unsafeMake(descriptors)

/**
 * The catalog merged with an application's descriptors (e.g. its MCP tools), validated as a whole.
 *
 * @category constructors
 * @since 2.2.0
 */
export const makeRegistry = (
  extra: ReadonlyArray<ToolDescriptor.ToolDescriptorInput> = [],
  options: Registry.MakeOptions = {}
) => Registry.make([...descriptors, ...extra], options)
