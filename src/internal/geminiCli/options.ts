/**
 * `GeminiCli`'s options. They live here, not in `layers/GeminiCli.ts`, because the client's
 * internals (its plan and runs) read them; the layer re-exports them.
 */
import type * as Duration from "effect/Duration"
import type { ToolPolicyInput } from "../claude/options.ts"
import type { PolicyRule } from "./policy.ts"

/**
 * Options of `GeminiCli.make` and `GeminiCli.layer`; every field is optional.
 *
 * @category config
 * @since 2.2.0
 */
export interface Options {
  /** The `gemini` binary: a name on PATH or a path. Default `gemini`. */
  readonly binary?: string | undefined
  /**
   * Passed as `--model`. Default `gemini-2.5-flash`: the CLI's own default (`auto`) first asks a
   * router model which model to use, one more request per turn.
   */
  readonly model?: string | undefined
  /** Replaces Gemini CLI's system prompt (written to a file the CLI reads through `GEMINI_SYSTEM_MD`). */
  readonly systemPrompt?: string | undefined
  /** Bound on one whole CLI run (all of its model turns and tool calls). Default 10 minutes. */
  readonly requestTimeout?: Duration.Input | undefined
  /**
   * Working directory of the CLI. The CLI lists it into every request and loads its `GEMINI.md`,
   * so the default is an empty private directory of the client, not the process's.
   */
  readonly cwd?: string | undefined
  /**
   * The CLI's home (`GEMINI_CLI_HOME`): its settings and its saved sessions. Default a private
   * directory of the client, removed with it; give one that outlives the process to `resume` a
   * session later (with the same `cwd`: the CLI files sessions by project).
   */
  readonly home?: string | undefined
  /**
   * Changes to the CLI's environment (`undefined` removes a variable). The base is an allow-list
   * of this process's environment: `PATH`, locale and time zone, and the Gemini API variables
   * (`GEMINI_API_KEY`, `GOOGLE_API_KEY`, `GOOGLE_GEMINI_BASE_URL`, `GOOGLE_CLOUD_PROJECT`, …).
   */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** How the CLI authenticates (`security.auth.selectedType`). Default `gemini-api-key`. */
  readonly authType?: "gemini-api-key" | "vertex-ai" | "oauth-personal" | undefined
  /** The bridge's MCP server name. Default `gtb`. */
  readonly serverName?: string | undefined
  /** A Gemini CLI session to continue (its id, as `GeminiCli.make`'s client reports it). */
  readonly resume?: string | undefined
  /**
   * More `--policy` rules, after the ones that allow your tools (Gemini CLI's built-in tools, say).
   * Default none: in a turn, the CLI's own tools that need a confirmation are refused.
   */
  readonly policyRules?: ReadonlyArray<PolicyRule> | undefined
  /**
   * The tool policy, as `ClaudeLocal`'s `toolPolicy` takes it: each turn compiles it with
   * `ToolPolicy.toGeminiPolicy` (the bridge's server allowed as a whole) into the `--policy` file,
   * before `policyRules`, and mounts only its `--allowed-mcp-server-names`. A refusal (`strict`,
   * invalid settings) fails the turn with a `config` `ProviderError`. Default none.
   */
  readonly toolPolicy?: ToolPolicyInput | undefined
  /** SIGTERM → SIGKILL grace when a run is stopped. Default 2 seconds. */
  readonly killGrace?: Duration.Input | undefined
  /**
   * Keep one `gemini --acp` per client, its ACP session reused across turns (a `session/prompt`
   * each), started on the first turn and stopped when the client's scope closes. A turn with
   * another tool set or policy, a failed turn, or a process that died starts a new one, which
   * loads the session. Default `false`: a fresh CLI per turn.
   */
  readonly keepAlive?: boolean | undefined
  /**
   * With `keepAlive`: a kept CLI no turn used for this long is stopped (its session file written
   * first), freeing its memory; the next turn starts a new one that loads the session. A running
   * turn is never cut. Default 5 minutes; `"Infinity"` keeps it for the client's whole scope.
   */
  readonly idleTimeout?: Duration.Input | undefined
  /**
   * Mirror each session into the `ClaudeSessionStore` you provide (under `projectKey`, the subpath
   * `gemini-cli`), so that a client with another `home` (another machine) can `resume` it: after
   * each turn the session file's new lines are stored, and before the CLI loads a session its
   * file is made the store's when they differ. Without the service each turn fails with a
   * `ConfigurationError`. Default `false`.
   */
  readonly sessionStore?: boolean | undefined
  /** With `sessionStore`: the application's scope for sessions (not derived from `cwd`). Default `"default"`. */
  readonly projectKey?: string | undefined
  /**
   * With `sessionStore`: bound on each store call; one that takes longer fails the turn with a
   * retryable `SessionStoreError`. Default 10 seconds.
   */
  readonly storeTimeout?: Duration.Input | undefined
}
