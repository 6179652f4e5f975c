/**
 * The resolved policy as Claude Agent SDK options, with the headless `PreToolUse` guard.
 * Re-exported by `registry/ToolPolicy.ts`.
 */
import type { AgentSdkPermissionMode, ToolPolicy } from "./model.ts"

// The Agent SDK is an optional peer: these are structural copies of the slice of its types this
// module produces, so the main entry type-checks without it. test/registry/ToolPolicySdkTypes.test.ts
// asserts at compile time that they stay assignable to the SDK's own `Options`.

/**
 * The part of an Agent SDK hook input the headless guard reads.
 *
 * @category models
 * @since 1.0.0
 */
export interface HookInput {
  readonly hook_event_name: string
  readonly tool_name?: string
  readonly permission_mode?: string
}

/**
 * What the headless guard answers: nothing to say, or a PreToolUse denial with its reason.
 *
 * @category models
 * @since 1.0.0
 */
export type HookOutput = {
  readonly hookSpecificOutput?: {
    readonly hookEventName: "PreToolUse"
    readonly permissionDecision: "deny"
    readonly permissionDecisionReason: string
  }
}

/**
 * An Agent SDK hook callback (its `HookCallback`).
 *
 * @category models
 * @since 1.0.0
 */
export type HookCallback = (
  input: HookInput,
  toolUseID: string | undefined,
  options: { signal: AbortSignal }
) => Promise<HookOutput>

/**
 * The Agent SDK `Options` fields this module sets; `C` is the SDK's `McpServerConfig`.
 *
 * @category models
 * @since 1.0.0
 */
export interface AgentSdkOptions<C> {
  disallowedTools: Array<string>
  allowedTools: Array<string>
  mcpServers: Record<string, C>
  strictMcpConfig: boolean
  permissionMode: AgentSdkPermissionMode
  hooks?: { PreToolUse: Array<{ matcher: string; hooks: Array<HookCallback> }> }
}

/**
 * What the SDK conversion needs beyond the policy.
 *
 * @category models
 * @since 1.0.0
 */
export interface AgentSdkOptionsInput<C> {
  /** The SDK permission mode of the session. */
  readonly permissionMode: AgentSdkPermissionMode
  /** No one can answer interactive tools on this turn. */
  readonly headless: boolean
  /** Server configs by name; only the policy's `mountedServers` are passed on. */
  readonly mcpServers?: Readonly<Record<string, C>>
}

/**
 * Why the headless hook denies a tool — shown to the model, so it says what to do instead.
 *
 * @category utils
 * @since 1.0.0
 */
export const headlessDenialReason = (tool: string, mode: string): string =>
  `${tool} needs an interactive responder, and this turn is headless (permission mode ${mode}); ` +
  `continue without it, or run with permission mode bypassPermissions`

/**
 * Agent SDK options: the two lists, the mounted servers' configs with `strictMcpConfig` (no
 * stray `.mcp.json`), and on headless turns a `PreToolUse` hook denying the policy's
 * `responderTools` unless the live permission mode is `bypassPermissions`.
 *
 * @category utils
 * @since 1.0.0
 */
export const toAgentSdkOptions = <C = never>(
  policy: ToolPolicy,
  input: AgentSdkOptionsInput<C>
): AgentSdkOptions<C> => {
  const mcpServers: Record<string, C> = {}
  for (const name of policy.mountedServers) {
    const config = input.mcpServers?.[name]
    if (config !== undefined) mcpServers[name] = config
  }
  const responder = new Set(policy.responderTools)
  const hook: HookCallback = async (hookInput) => {
    if (hookInput.hook_event_name !== "PreToolUse" || hookInput.tool_name === undefined) return {}
    if (!responder.has(hookInput.tool_name)) return {}
    const mode = hookInput.permission_mode ?? input.permissionMode
    if (mode === "bypassPermissions") return {}
    return {
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: headlessDenialReason(hookInput.tool_name, mode)
      }
    }
  }
  return {
    disallowedTools: [...policy.disallowedTools],
    allowedTools: [...policy.allowedTools],
    mcpServers,
    strictMcpConfig: true,
    permissionMode: input.permissionMode,
    ...(input.headless && responder.size > 0
      ? { hooks: { PreToolUse: [{ matcher: [...responder].join("|"), hooks: [hook] }] } }
      : {})
  }
}
