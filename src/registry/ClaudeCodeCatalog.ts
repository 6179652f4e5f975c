/**
 * The Claude Code tools of agent SDK 0.3.335 (claude 2.1.335), classified. Names are the runtime
 * names that `disallowedTools`, permission rules and hook matchers use — which differ from the
 * `sdk-tools.d.ts` interface names for a few tools (see `DriftGuard.aliases`).
 *
 * @summary The built-in Claude Code tools, classified: the default registry's descriptors.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as Registry from "./Registry.ts"
import type * as ToolDescriptor from "./ToolDescriptor.ts"

/**
 * The agent SDK version this catalog was classified against.
 *
 * @category models
 * @since 1.0.0
 */
export const sdkVersion = "0.3.335"

type Extra = Partial<
  Pick<ToolDescriptor.ToolDescriptorInput, "condition" | "pairGroup" | "interactive" | "asks" | "reason">
>

/** A member of the SDK's typed `ToolInputSchemas` union (checked by the drift guard and `SdkCoverage`). */
const typed = <const N extends string>(
  name: N,
  category: ToolDescriptor.Category,
  exposure: ToolDescriptor.Exposure,
  extra: Extra = {}
): ToolDescriptor.ToolDescriptorInput & { readonly name: N; readonly kind: "sdk"; readonly sdkTyped: true } => ({
  name,
  category,
  exposure,
  kind: "sdk",
  sdkTyped: true,
  labelKey: `tools.${name}.label`,
  descriptionKey: `tools.${name}.description`,
  ...extra
})

/** A runtime tool outside the typed union: hand-tracked, the drift guard skips it. */
const runtime = <const N extends string>(
  name: N,
  category: ToolDescriptor.Category,
  exposure: ToolDescriptor.Exposure,
  extra: Extra = {}
): ToolDescriptor.ToolDescriptorInput & { readonly name: N; readonly kind: "sdk"; readonly sdkTyped: false } => ({
  name,
  category,
  exposure,
  kind: "sdk",
  sdkTyped: false,
  labelKey: `tools.${name}.label`,
  descriptionKey: `tools.${name}.description`,
  ...extra
})

const cliOriented = "CLI-oriented: needs the interactive terminal app or its background services"

/**
 * Every Claude Code tool this library knows, in display order within each category.
 *
 * @category models
 * @since 1.0.0
 */
export const descriptors = [
  // shell
  // `asks`: what Claude Code asks permission for in its default mode (claude 2.1.332).
  typed("Bash", "shell", "user", { pairGroup: "bash", asks: "always" }),
  runtime("BashOutput", "shell", "internal", {
    pairGroup: "bash",
    reason: "legacy reader of background Bash output; goes with Bash"
  }),
  // file
  typed("Read", "file", "user"),
  typed("Edit", "file", "user", { asks: "edit" }),
  typed("Write", "file", "user", { asks: "edit" }),
  typed("NotebookEdit", "file", "disabled", { asks: "edit", reason: "Jupyter editing is not needed by chat agents" }),
  // search
  typed("Glob", "search", "user"),
  typed("Grep", "search", "user"),
  // orchestration
  typed("Workflow", "orchestration", "user", { reason: "multi-agent workflow scripts: the feature agents opt into" }),
  typed("Agent", "orchestration", "internal", { reason: "subagents are how Claude Code splits work" }),
  runtime("Task", "orchestration", "internal", { reason: "legacy alias of Agent" }),
  runtime("ListAgents", "orchestration", "internal", { reason: "lists the running subagents; goes with Agent" }),
  runtime("ToolSearch", "orchestration", "internal", {
    reason: "loads deferred MCP tools; blocking it hides MCP tools"
  }),
  runtime("SendMessage", "orchestration", "internal", { reason: "agent teams" }),
  runtime("TeamCreate", "orchestration", "internal", { reason: "agent teams" }),
  runtime("TeamDelete", "orchestration", "internal", { reason: "agent teams" }),
  typed("TaskCreate", "orchestration", "internal", { pairGroup: "taskCluster" }),
  typed("TaskGet", "orchestration", "internal", { pairGroup: "taskCluster" }),
  typed("TaskUpdate", "orchestration", "internal", { pairGroup: "taskCluster" }),
  typed("TaskList", "orchestration", "internal", { pairGroup: "taskCluster" }),
  typed("TaskStop", "orchestration", "internal", { pairGroup: "taskCluster" }),
  typed("TodoWrite", "orchestration", "disabled", { reason: "superseded by the Task* tools" }),
  typed("EnterPlanMode", "orchestration", "internal", { pairGroup: "planMode", interactive: true }),
  typed("ExitPlanMode", "orchestration", "internal", { pairGroup: "planMode", interactive: true }),
  typed("AskUserQuestion", "orchestration", "internal", { interactive: true }),
  typed("EnterWorktree", "orchestration", "conditional", {
    condition: "workspace-has-git",
    pairGroup: "worktree",
    interactive: true
  }),
  typed("ExitWorktree", "orchestration", "conditional", { condition: "workspace-has-git", pairGroup: "worktree" }),
  typed("ListMcpResourcesTool", "orchestration", "internal", { pairGroup: "mcpResource" }),
  typed("ReadMcpResourceTool", "orchestration", "internal", { pairGroup: "mcpResource" }),
  typed("ReadMcpResourceDirTool", "orchestration", "internal", { pairGroup: "mcpResource" }),
  typed("RefreshMcpTools", "orchestration", "internal", {
    reason: "re-reads connected MCP servers' tool lists (e.g. after tools/list_changed); session-local, no side effects"
  }),
  typed("ReportFindings", "orchestration", "internal", {
    reason: "structured result channel of review runs; only records findings in the transcript"
  }),
  typed("CronCreate", "orchestration", "disabled", { reason: cliOriented }),
  typed("CronDelete", "orchestration", "disabled", { reason: cliOriented }),
  typed("CronList", "orchestration", "disabled", { reason: cliOriented }),
  typed("ScheduleWakeup", "orchestration", "disabled", { reason: cliOriented }),
  typed("RemoteTrigger", "orchestration", "disabled", { reason: cliOriented }),
  typed("Monitor", "orchestration", "disabled", { reason: cliOriented }),
  typed("PushNotification", "orchestration", "disabled", { reason: cliOriented }),
  typed("ReadNotifications", "orchestration", "disabled", {
    reason: "reads the CLI's notification inbox, fed by Monitor/PushNotification, which are disabled"
  }),
  typed("SetGoal", "orchestration", "disabled", {
    reason: "sets a session goal through the CLI's approval dialog; CLI-oriented"
  }),
  typed("SendFeedback", "orchestration", "disabled", {
    reason:
      "files product feedback about Claude Code itself with Anthropic; not an agent task, sends data off the machine"
  }),
  typed("ShowOnboardingRolePicker", "orchestration", "disabled", { reason: "the CLI's onboarding UI" }),
  typed("OfferChromeSetup", "orchestration", "disabled", {
    reason: "prompts to install the CLI's Chrome extension; UI-only"
  }),
  // media
  typed("Artifact", "media", "disabled", {
    reason: "publishes HTML to Anthropic's hosted artifact service; uploads files off the machine"
  }),
  typed("ClaudeDesign", "media", "disabled", { reason: "drives the account-bound hosted Claude Design service" }),
  // context
  typed("WebSearch", "context", "disabled", {
    asks: "always",
    reason: "an app with its own web tools serves them over MCP"
  }),
  typed("WebFetch", "context", "disabled", {
    asks: "always",
    reason: "an app with its own web tools serves them over MCP"
  }),
  typed("Projects", "context", "disabled", {
    reason: "reads and writes account-bound claude.ai Project documents, outside the app's own context tools"
  }),
  typed("propose_skills", "context", "disabled", {
    reason: "shows a skill-proposal review card in the CLI; needs its interactive reviewer"
  }),
  runtime("Skill", "context", "internal", { reason: "loads the workspace's skills on demand; read-only" })
] as const

/**
 * Runtime names of the catalog's typed SDK tools (the compile-time guard compares it with the SDK).
 *
 * @category models
 * @since 1.0.0
 */
export type SdkTypedName = Extract<(typeof descriptors)[number], { readonly sdkTyped: true }>["name"]

/**
 * Runtime names of every catalog tool.
 *
 * @category models
 * @since 1.0.0
 */
export type ToolName = (typeof descriptors)[number]["name"]

/**
 * The catalog alone, validated.
 *
 * @category models
 * @since 1.0.0
 */
export const registry: Registry.Registry = Registry.unsafeMake(descriptors)

/**
 * The catalog merged with an application's descriptors (e.g. its MCP tools), validated as a whole.
 *
 * @category constructors
 * @since 1.0.0
 */
export const makeRegistry = (
  extra: ReadonlyArray<ToolDescriptor.ToolDescriptorInput> = [],
  options: Registry.MakeOptions = {}
) => Registry.make([...descriptors, ...extra], options)
