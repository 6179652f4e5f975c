/**
 * `ClaudeLocal`'s options. They live here, not in `layers/ClaudeLocal.ts`, because the client's
 * internals (its arguments, plan and runs) read them; the layer re-exports them.
 */
import type * as Duration from "effect/Duration"
import type * as ToolPolicy from "../../registry/ToolPolicy.ts"
import type { ClaudeCodeOptions } from "../../services/ClaudeCodeOptions.ts"
import type { McpBridgeService } from "../../services/McpBridge.ts"
import type { ToolPolicyInput } from "../claude/options.ts"

/**
 * `--permission-mode` values of claude 2.1.x: `ToolPolicy.PermissionMode`.
 *
 * @category models
 * @since 1.0.0
 */
export type PermissionMode = ToolPolicy.PermissionMode

/**
 * Options of `ClaudeLocal.make` and `ClaudeLocal.layer`; every field is optional. The shared Claude Code
 * options ({@link ClaudeCodeOptions}) mean the same on `ClaudeAgent`.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options extends ClaudeCodeOptions {
  /** The `claude` binary: a name on PATH or a path. Default `claude`. */
  readonly binary?: string | undefined
  /** Passed as `--model` (an alias such as `sonnet` or a full model name). Default: the CLI's. */
  readonly model?: string | undefined
  /** Passed as `--system-prompt`, replacing Claude Code's default system prompt. */
  readonly systemPrompt?: string | undefined
  /** Bound on one whole CLI run (all of its model turns and tool calls). Default 10 minutes. */
  readonly requestTimeout?: Duration.Input | undefined
  /** Working directory of the CLI. Default: the process's. */
  readonly cwd?: string | undefined
  /** Passed as `--permission-mode` when set. */
  readonly permissionMode?: PermissionMode | undefined
  /**
   * Changes to the CLI's environment (`undefined` removes a variable). The base is the allow-list
   * of this process's environment, or all of it with `inheritEnv`.
   */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** Which built-in Claude Code tools the agent may use. Default: the registry's defaults, no opt-outs. */
  readonly toolPolicy?: ToolPolicyInput | undefined
  /** The bridge's MCP server name; tools appear as `mcp__<serverName>__<tool>`. Default `gtb`. */
  readonly serverName?: string | undefined
  /**
   * When the CLI denied tool calls: `false` (default) fails with `PermissionDeniedError` (which
   * carries the answer); `true` returns the answer and logs a warning.
   */
  readonly allowPermissionDenials?: boolean | undefined
  /** SIGTERM → SIGKILL grace when a run is stopped. Default 2 seconds. */
  readonly killGrace?: Duration.Input | undefined
  /**
   * The installed CLI's version (`2.1.332`), when the caller pins it: skips the `claude --version`
   * run. Default: read once per layer, at the first turn.
   */
  readonly cliVersion?: string | undefined
  /**
   * A running bridge to serve the tools through (one you watch, or share with other MCP clients)
   * instead of one started on the first non-empty `setTools` in the client's scope. The client
   * sets its tools on it, and its `serverName` wins over the option.
   */
  readonly bridge?: McpBridgeService | undefined
  /**
   * CLI flags the library does not model, as `--name=value` (or `--name` for `null`); they come
   * after the library's own flags.
   */
  readonly extraArgs?: Readonly<Record<string, string | null>> | undefined
  /**
   * Keep one CLI per conversation alive across turns (`--input-format stream-json`, each turn a
   * user message on its stdin) instead of a fresh `claude -p --resume` per turn. Default `false`.
   * Later turns skip the CLI's start-up (about 0.9 s on a fast machine; see the numbers in `docs/claude-code.md`).
   * The process is restarted, resuming the session, after a failed or interrupted turn, and when a
   * turn needs other flags than it was started with: `setTools` changing the tools, `ask` (its
   * `--json-schema`), a chat after an `ask`, a change in the allowed environment. Every other
   * option applies as to a fresh run (`maxTurns` bounds each turn, `maxBudgetUsd` the whole
   * conversation); the process, its config files and its bridge credential live in the client's
   * scope.
   */
  readonly keepAlive?: boolean | undefined
  /**
   * Start the kept-alive CLI when the client is built, so that the first turn pays no start-up;
   * implies `keepAlive`. Default `false`. A `setTools` that changes the tools restarts it right
   * away (not at the next turn), so the warm start survives the usual build → setTools → chat.
   */
  readonly prewarm?: boolean | undefined
}
