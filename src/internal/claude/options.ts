/**
 * The part of the Claude providers' options that both `ClaudeLocal` and `ClaudeAgent` take and
 * that is not a shared Claude Code option (`services/ClaudeCodeOptions.ts`): the agent's tool
 * policy input. It lives here, not in a layer, so the internals of both providers can read it;
 * the layers re-export it.
 */
import type * as Registry from "../../registry/Registry.ts"

/**
 * The agent's tool policy input: which Claude Code tools this client's agent may use.
 *
 * @category models
 * @since 1.0.0
 */
export interface ToolPolicyInput {
  /** Default: the Claude Code catalog for the pinned agent SDK. */
  readonly registry?: Registry.Registry
  /** The agent's opt-outs (empty: everything the registry exposes). */
  readonly disabledTools?: ReadonlyArray<string>
  /**
   * Condition values such as `agent-has-channel`; missing counts as false, except
   * `workspace-has-git`, which is detected from `cwd` unless given (`Conditions.detectNodeConditions`).
   */
  readonly conditions?: Readonly<Record<string, boolean>>
  /**
   * Built-in tools to auto-approve by name (`Edit`, `Bash`), at most 64: each runs without a
   * permission prompt, so on a headless run it stays offered even when Claude Code would ask
   * about it. Default: none (tools that ask are not offered without `canUseTool` or a
   * `permissionMode` that lets them run; see `docs/tool-policy.md`).
   */
  readonly allowedTools?: ReadonlyArray<string>
  /**
   * `true`: an opt-out the policy cannot apply as written (a typo such as `Bsh`, a malformed or
   * always-on entry, a partly applied wildcard: `ToolPolicy.ToolPolicy.ignored`) fails the layer's
   * build with a `config` `ProviderError` (with `make`: every turn). Default `false`: each is a
   * warning in the log, once, and shown by `ClaudeSession.toolPolicy`.
   */
  readonly strict?: boolean
}
