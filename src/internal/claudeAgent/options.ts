/**
 * `ClaudeAgent`'s options. They live here, not in `layers/ClaudeAgent.ts`, because the client's
 * internals (its queries) read them; the layer re-exports them.
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import type * as Duration from "effect/Duration"
import type * as ToolPolicy from "../../registry/ToolPolicy.ts"
import type { ClaudeCodeOptions } from "../../services/ClaudeCodeOptions.ts"
import type { ToolPolicyInput } from "../claude/options.ts"

/**
 * The Agent SDK's permission modes: `ToolPolicy.PermissionMode` without the CLI's `manual`.
 *
 * @category models
 * @since 1.0.0
 */
export type PermissionMode = ToolPolicy.AgentSdkPermissionMode

/**
 * Options of `ClaudeAgent.make` and `ClaudeAgent.layer`; every field is optional. The shared Claude Code
 * options ({@link ClaudeCodeOptions}) mean the same on `ClaudeLocal`.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options extends ClaudeCodeOptions {
  /**
   * The `claude` executable. Default: the binary shipped with the Agent SDK. `mcpServers` reach it
   * over stdin, which needs a Claude Code at least as new as that binary (an older one fails the turn
   * with an error naming `mcpServersDelivery`); for an older one pass
   * `extraOptions: { mcpServersDelivery: "argv" }`, which puts their headers and env on its command line.
   */
  readonly pathToClaudeCodeExecutable?: string | undefined
  /** The model (an alias such as `sonnet` or a full model name). Default: the CLI's. */
  readonly model?: string | undefined
  /** Replaces Claude Code's default system prompt. */
  readonly systemPrompt?: string | undefined
  /** Bound on one whole turn (all of its model calls and tool calls). Default 10 minutes. */
  readonly requestTimeout?: Duration.Input | undefined
  /** Working directory of the CLI. Default: the process's. */
  readonly cwd?: string | undefined
  /** Default `default`: only allowed tools run; anything that would ask is denied. */
  readonly permissionMode?: PermissionMode | undefined
  /**
   * Changes to the CLI's environment (`undefined` removes a variable). The base is a filtered copy
   * of this process's environment (PATH, HOME, locale, proxies, `ANTHROPIC_*`, `CLAUDE_*`, cloud
   * provider credentials), or all of it with `inheritEnv`.
   */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** Which built-in Claude Code tools the agent may use. Default: the registry's defaults, no opt-outs. */
  readonly toolPolicy?: ToolPolicyInput | undefined
  /** The in-process MCP server's name; tools appear as `mcp__<serverName>__<tool>`. Default `gtb`. */
  readonly serverName?: string | undefined
  /**
   * When the CLI denied tool calls: `false` (default) fails with `PermissionDeniedError` (which
   * carries the answer); `true` returns the answer and logs a warning.
   */
  readonly allowPermissionDenials?: boolean | undefined
  /** How long the CLI gets to exit on its own before SIGTERM, then SIGKILL. Default 2 seconds. */
  readonly killGrace?: Duration.Input | undefined
  /**
   * Keep one CLI alive across `chat`/`chatStream` turns (streaming input) instead of starting a
   * fresh CLI per turn with `resume`. Default `false`. Turns after the first skip the CLI's
   * start-up; the CLI lives in the client's scope until it closes. A failed or interrupted turn,
   * `setTools` and `ask` end it (an `ask` runs on its own fresh CLI, as without this option); the
   * next turn starts a new one that resumes the session. `maxTurns` bounds each turn and
   * `maxBudgetUsd` the whole conversation, as without this option.
   */
  readonly keepAlive?: boolean | undefined
  /**
   * Start the kept-alive CLI when the client is built, so that the first turn pays no start-up;
   * implies `keepAlive`. Default `false`. It starts on the session to `resume` (forking it with
   * `forkSession`), with every other option as a turn would. A `setTools` restarts it right away
   * (resuming the session), not at the next turn. The CLI belongs to the layer's scope.
   */
  readonly prewarm?: boolean | undefined
  /**
   * Agent SDK options the library does not model, passed to `query` as given. The library's own
   * (abort controller, spawner, environment, tool servers) are set after them and win; its
   * default `mcpServersDelivery: "initialize"` is set before them. Their `hooks` are merged with the
   * tool policy's own `PreToolUse` hook: both run, and the policy's deny always wins.
   */
  readonly extraOptions?: Partial<AgentSdk.Options> | undefined
  /** Module specifier of the Agent SDK; for tests of the missing-SDK error. */
  readonly sdkSpecifier?: string | undefined
}
