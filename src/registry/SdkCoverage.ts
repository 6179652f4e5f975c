/**
 * Compile-time drift guard. Each `sdkTyped` catalog tool is tied to its input type in the agent
 * SDK's `sdk-tools.d.ts` (type-only imports, erased at runtime): when the SDK drops a tool, its
 * import breaks and `tsc` fails; when the catalog and this map disagree, or a name is not one the
 * SDK spells in `BUILTIN_TOOL_NAMES`, an assertion below fails. Additions are the runtime guard's
 * job (`DriftGuard`), since a type cannot enumerate a union's member names.
 *
 * @since 0.1.0
 * @module
 */
import type { BUILTIN_TOOL_NAMES } from "@anthropic-ai/claude-agent-sdk"
import type {
  AgentInput,
  ArtifactInput,
  AskUserQuestionInput,
  BashInput,
  ClaudeDesignInput,
  CronCreateInput,
  CronDeleteInput,
  CronListInput,
  EnterPlanModeInput,
  EnterWorktreeInput,
  ExitPlanModeInput,
  ExitWorktreeInput,
  FileEditInput,
  FileReadInput,
  FileWriteInput,
  GlobInput,
  GrepInput,
  ListMcpResourcesInput,
  MonitorInput,
  NotebookEditInput,
  OfferChromeSetupInput,
  ProjectsInput,
  ProposeGoalInput,
  ProposeSkillsInput,
  PushNotificationInput,
  ReadMcpResourceDirInput,
  ReadMcpResourceInput,
  ReadNotificationsInput,
  RefreshMcpToolsInput,
  RemoteTriggerInput,
  ReportFindingsInput,
  ScheduleWakeupInput,
  SendFeedbackInput,
  ShowOnboardingRolePickerInput,
  TaskCreateInput,
  TaskGetInput,
  TaskListInput,
  TaskStopInput,
  TaskUpdateInput,
  TodoWriteInput,
  ToolInputSchemas,
  WebFetchInput,
  WebSearchInput,
  WorkflowInput
} from "@anthropic-ai/claude-agent-sdk/sdk-tools"
import type { SdkTypedName } from "./ClaudeCodeCatalog.ts"

/** Runtime tool name → the SDK's input type. */
export interface SdkToolInputs {
  readonly Agent: AgentInput
  readonly Artifact: ArtifactInput
  readonly AskUserQuestion: AskUserQuestionInput
  readonly Bash: BashInput
  readonly ClaudeDesign: ClaudeDesignInput
  readonly CronCreate: CronCreateInput
  readonly CronDelete: CronDeleteInput
  readonly CronList: CronListInput
  readonly Edit: FileEditInput
  readonly EnterPlanMode: EnterPlanModeInput
  readonly EnterWorktree: EnterWorktreeInput
  readonly ExitPlanMode: ExitPlanModeInput
  readonly ExitWorktree: ExitWorktreeInput
  readonly Glob: GlobInput
  readonly Grep: GrepInput
  readonly ListMcpResourcesTool: ListMcpResourcesInput
  readonly Monitor: MonitorInput
  readonly NotebookEdit: NotebookEditInput
  readonly OfferChromeSetup: OfferChromeSetupInput
  readonly Projects: ProjectsInput
  readonly PushNotification: PushNotificationInput
  readonly Read: FileReadInput
  readonly ReadMcpResourceDirTool: ReadMcpResourceDirInput
  readonly ReadMcpResourceTool: ReadMcpResourceInput
  readonly ReadNotifications: ReadNotificationsInput
  readonly RefreshMcpTools: RefreshMcpToolsInput
  readonly RemoteTrigger: RemoteTriggerInput
  readonly ReportFindings: ReportFindingsInput
  readonly ScheduleWakeup: ScheduleWakeupInput
  readonly SendFeedback: SendFeedbackInput
  readonly SetGoal: ProposeGoalInput
  readonly ShowOnboardingRolePicker: ShowOnboardingRolePickerInput
  readonly TaskCreate: TaskCreateInput
  readonly TaskGet: TaskGetInput
  readonly TaskList: TaskListInput
  readonly TaskStop: TaskStopInput
  readonly TaskUpdate: TaskUpdateInput
  readonly TodoWrite: TodoWriteInput
  readonly WebFetch: WebFetchInput
  readonly WebSearch: WebSearchInput
  readonly Workflow: WorkflowInput
  readonly Write: FileWriteInput
  readonly propose_skills: ProposeSkillsInput
}

/** The SDK's typed tool names, as runtime names. */
export type SdkToolName = keyof SdkToolInputs

/** Tool names the SDK spells for permission rules; `RefreshMcpTools` is typed but not listed there. */
export type SdkBuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number] | "RefreshMcpTools"

type Assert<T extends true> = T
type Equals<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false

/** Every `sdkTyped` catalog key is an SDK tool, and every SDK tool of this map is in the catalog. */
export type CatalogCoversSdk = Assert<Equals<SdkTypedName, SdkToolName>>

/** Every mapped name is one the SDK itself spells (so `disallowedTools` entries actually match). */
export type NamesAreSdkNames = Assert<[SdkToolName] extends [SdkBuiltinToolName] ? true : false>

/** Every mapped input type is a member of the SDK's `ToolInputSchemas` union. */
export type InputsAreSdkInputs = Assert<[SdkToolInputs[SdkToolName]] extends [ToolInputSchemas] ? true : false>
