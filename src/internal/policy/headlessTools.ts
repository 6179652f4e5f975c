/**
 * Which tools a headless session (every `ClaudeLocal` and `ClaudeAgent` turn) can never use, and
 * why: tools that need an interactive responder, and tools Claude Code asks permission for when
 * no one answers (no `canUseTool`), the permission mode does not let them run and no allow entry
 * approves them. Offering such a tool only lets the model call it and fail the turn. Private:
 * used by `registry/ToolPolicy.ts`.
 */

/** What Claude Code asks permission for (the registry's `asks`). */
export type Asks = "edit" | "always"

/** What a headless session can answer. */
export interface HeadlessSession {
  readonly permissionMode: string | undefined
  /** The application decides permission prompts. */
  readonly canUseTool: boolean
  /** Tools auto-approved by name. */
  readonly allowed: ReadonlySet<string>
}

/**
 * A call runs without a prompt: `bypassPermissions` approves everything, `auto` decides each call
 * itself, `acceptEdits` approves file edits. `default`, `plan`, `dontAsk` and `manual` ask (or,
 * for `dontAsk`, refuse outright).
 */
const runsUnasked = (asks: Asks, mode: string | undefined): boolean =>
  mode === "bypassPermissions" || mode === "auto" || (asks === "edit" && mode === "acceptEdits")

/** Why a tool that asks is withheld, or undefined when it can run on this session. */
export const askingReason = (tool: string, asks: Asks, session: HeadlessSession): string | undefined => {
  if (session.canUseTool || session.allowed.has(tool) || runsUnasked(asks, session.permissionMode)) return undefined
  const mode = session.permissionMode ?? "default"
  return `Claude Code asks before each ${tool} call and no one can answer on a headless run (permission mode ` +
    `${mode}, no canUseTool, not in allowedTools); to offer it, decide calls with canUseTool, allow it with ` +
    `toolPolicy.allowedTools, or use permission mode ${asks === "edit" ? "acceptEdits" : "bypassPermissions"}`
}

/** Why an interactive tool is withheld on a headless session. */
export const interactiveReason = (tool: string, mode: string | undefined): string =>
  `${tool} needs an interactive responder, which a headless run does not have (permission mode ${
    mode ?? "default"
  }); only bypassPermissions offers it`

/** The cache key of a session's answers, for policies cached by session shape. */
export const sessionKey = (session: HeadlessSession): string =>
  `${session.permissionMode ?? ""}|${session.canUseTool ? 1 : 0}|${[...session.allowed].sort().join(",")}`

/**
 * The message of a turn that failed because tools were denied: the safe fix (stop offering the
 * tool) first, then the ways to let it run.
 */
export const denialMessage = (denied: ReadonlyArray<string>): string =>
  `The claude CLI denied ${denied.join(", ")}: stop offering ${denied.length === 1 ? "it" : "them"} (add ${
    denied.length === 1 ? "it" : "them"
  } to toolPolicy.disabledTools); to let ${
    denied.length === 1 ? "it" : "them"
  } run, decide calls with canUseTool, auto-approve with toolPolicy.allowedTools, or choose a permissionMode that allows ${
    denied.length === 1 ? "it" : "them"
  }`
