/**
 * The built-in tools of Google's Gemini CLI 0.61.0 (`@google/gemini-cli`), classified with the
 * same descriptor model as the Claude Code catalog, so one settings screen and one agent's
 * opt-outs drive both CLIs. Names are the CLI's runtime names (what its `--policy` rules and the
 * model's `functionDeclarations` use); `claudeEquivalents` says which Claude Code tool each
 * stands for, so an opt-out written for either CLI applies to both.
 *
 * @summary The built-in Gemini CLI tools, classified, with their Claude Code equivalents.
 * @group Claude Code tool policy
 * @since 2.2.0
 * @module
 */
import * as ClaudeCodeCatalog from "./ClaudeCodeCatalog.ts"
import * as Registry from "./Registry.ts"
import type * as ToolDescriptor from "./ToolDescriptor.ts"

/**
 * The `@google/gemini-cli` version this catalog was classified against (the drift guard reads
 * the installed package's `ALL_BUILTIN_TOOL_NAMES`).
 *
 * @category models
 * @since 2.2.0
 */
export const cliVersion = "0.61.0"

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
  labelKey: `tools.gemini.${name}.label`,
  descriptionKey: `tools.gemini.${name}.description`,
  ...extra
})

const webOverMcp = "an app with its own web tools serves them over MCP"
const tracker = "the CLI's task tracker (an experimental feature); session-local planning state"

/**
 * Every built-in tool of Gemini CLI 0.61.0, in display order within each category. `asks`: the
 * tools its default approval mode confirms, which `gemini -p` removes from the model's tool list
 * unless a policy rule allows them (checked against the binary).
 *
 * @category models
 * @since 2.2.0
 */
export const descriptors = [
  // shell
  builtin("run_shell_command", "shell", "user", { asks: "always" }),
  // file
  builtin("read_file", "file", "user"),
  builtin("read_many_files", "file", "user"),
  builtin("list_directory", "file", "user"),
  builtin("replace", "file", "user", { asks: "edit" }),
  builtin("write_file", "file", "user", { asks: "edit" }),
  // search
  builtin("glob", "search", "user"),
  builtin("grep_search", "search", "user"),
  // orchestration
  builtin("invoke_agent", "orchestration", "internal", { reason: "subagents are how Gemini CLI splits work" }),
  builtin("complete_task", "orchestration", "internal", {
    reason: "a subagent's result channel; only returns its answer"
  }),
  builtin("write_todos", "orchestration", "internal", { reason: "session-local todo list; no side effects" }),
  builtin("update_topic", "orchestration", "internal", {
    reason: "records the conversation's topic for the CLI's context; no side effects"
  }),
  builtin("tracker_create_task", "orchestration", "internal", { pairGroup: "taskCluster", reason: tracker }),
  builtin("tracker_update_task", "orchestration", "internal", { pairGroup: "taskCluster", reason: tracker }),
  builtin("tracker_get_task", "orchestration", "internal", { pairGroup: "taskCluster", reason: tracker }),
  builtin("tracker_list_tasks", "orchestration", "internal", { pairGroup: "taskCluster", reason: tracker }),
  builtin("tracker_add_dependency", "orchestration", "internal", { pairGroup: "taskCluster", reason: tracker }),
  builtin("tracker_visualize", "orchestration", "internal", { pairGroup: "taskCluster", reason: tracker }),
  builtin("enter_plan_mode", "orchestration", "internal", { pairGroup: "planMode", interactive: true }),
  builtin("exit_plan_mode", "orchestration", "internal", { pairGroup: "planMode", interactive: true }),
  builtin("ask_user", "orchestration", "internal", { interactive: true }),
  builtin("list_mcp_resources", "orchestration", "internal", { pairGroup: "mcpResource" }),
  builtin("read_mcp_resource", "orchestration", "internal", { pairGroup: "mcpResource" }),
  // context
  builtin("google_web_search", "context", "disabled", { reason: webOverMcp }),
  builtin("web_fetch", "context", "disabled", { asks: "always", reason: webOverMcp }),
  builtin("get_internal_docs", "context", "internal", { reason: "reads Gemini CLI's own bundled docs; read-only" }),
  builtin("activate_skill", "context", "internal", { reason: "loads the workspace's skills on demand; read-only" })
] as const

/**
 * Runtime names of every catalog tool.
 *
 * @category models
 * @since 2.2.0
 */
export type ToolName = (typeof descriptors)[number]["name"]

/**
 * Which Claude Code tools each Gemini CLI tool stands for: an opt-out of a Claude Code name turns
 * off these Gemini tools (and `ToolPolicy.toGeminiPolicy` reads it). Tools without an entry have
 * no Claude Code counterpart.
 *
 * @category models
 * @since 2.2.0
 */
export const claudeEquivalents: Readonly<Partial<Record<ToolName, ReadonlyArray<string>>>> = {
  run_shell_command: ["Bash"],
  read_file: ["Read"],
  read_many_files: ["Read"],
  list_directory: ["Glob"],
  replace: ["Edit"],
  write_file: ["Write"],
  glob: ["Glob"],
  grep_search: ["Grep"],
  invoke_agent: ["Agent", "Task"],
  write_todos: ["TodoWrite"],
  tracker_create_task: ["TaskCreate"],
  tracker_update_task: ["TaskUpdate"],
  tracker_get_task: ["TaskGet"],
  tracker_list_tasks: ["TaskList"],
  enter_plan_mode: ["EnterPlanMode"],
  exit_plan_mode: ["ExitPlanMode"],
  ask_user: ["AskUserQuestion"],
  list_mcp_resources: ["ListMcpResourcesTool"],
  read_mcp_resource: ["ReadMcpResourceTool"],
  google_web_search: ["WebSearch"],
  web_fetch: ["WebFetch"],
  activate_skill: ["Skill"]
}

const fromClaude = new Map<string, Array<string>>()
for (const [gemini, claude] of Object.entries(claudeEquivalents)) {
  for (const c of claude ?? []) fromClaude.set(c, [...(fromClaude.get(c) ?? []), gemini])
}

/**
 * The Gemini CLI tools a Claude Code tool stands for (empty for a tool without a counterpart, or
 * a name that is not a Claude Code tool).
 *
 * @category utils
 * @since 2.2.0
 */
export const equivalentsOf = (claudeName: string): ReadonlyArray<string> => fromClaude.get(claudeName) ?? []

/**
 * The Claude Code tools a Gemini CLI tool stands for.
 *
 * @category utils
 * @since 2.2.0
 */
export const claudeNamesOf = (geminiName: string): ReadonlyArray<string> =>
  (claudeEquivalents as Readonly<Record<string, ReadonlyArray<string> | undefined>>)[geminiName] ?? []

/**
 * An agent's opt-outs in Gemini CLI names: each Claude Code tool with a counterpart becomes its
 * equivalents, one without is dropped (Gemini CLI has nothing to turn off), other entries (Gemini
 * names, `mcp__…`, wildcards) are kept. Sorted, without duplicates.
 *
 * @category utils
 * @since 2.2.0
 */
export const fromClaudeNames = (entries: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out = new Set<string>()
  for (const entry of entries) {
    const equivalents = fromClaude.get(entry)
    if (equivalents !== undefined) { for (const g of equivalents) out.add(g) }
    else if (!claudeOnly.has(entry)) out.add(entry)
  }
  return [...out].sort()
}

/** Claude Code tool names with no Gemini CLI counterpart (and no Gemini tool of the same name). */
const claudeOnly: ReadonlySet<string> = new Set(
  ClaudeCodeCatalog.descriptors.map((d) => d.name as string).filter((n) => !fromClaude.has(n))
)

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
