/**
 * `CodexCli`'s options. They live here, not in `layers/CodexCli.ts`, because the client's
 * internals (its arguments and runs) read them; the layer re-exports them.
 */
import type * as Duration from "effect/Duration"
import type * as Redacted from "effect/Redacted"
import type { ToolPolicyInput } from "../claude/options.ts"

/**
 * Options of `CodexCli.make` and `CodexCli.layer`; every field is optional.
 *
 * @category config
 * @since 2.2.0
 */
export interface Options {
  /** The `codex` binary: a name on PATH or a path. Default `codex`. */
  readonly binary?: string | undefined
  /** Passed as `--model`. Default: the CLI's own default for its provider. */
  readonly model?: string | undefined
  /**
   * The Responses API's base URL (ending in `/v1`). Setting it, or `apiKey`, runs the CLI on a
   * provider of the library's (`wire_api = "responses"`, the only wire Codex speaks) instead of
   * its built-in OpenAI one.
   */
  readonly baseUrl?: string | undefined
  /**
   * The API key, given to the CLI in its environment only (never argv or a file). Default:
   * `OPENAI_API_KEY` of this process, when `baseUrl` is set.
   */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /**
   * How often the CLI retries a failed model request or stream, with `baseUrl` or `apiKey` (the
   * library's provider: `request_max_retries` and `stream_max_retries`). Default: the CLI's own
   * (a 401 is tried 5 more times, ~10 s, before the turn fails).
   */
  readonly maxRetries?: number | undefined
  /** Replaces Codex's base instructions (a private file the CLI reads through `model_instructions_file`). */
  readonly systemPrompt?: string | undefined
  /** Bound on one whole CLI run (all of its model turns and tool calls). Default 10 minutes. */
  readonly requestTimeout?: Duration.Input | undefined
  /**
   * Working directory of the CLI (`--cd`). The CLI reads its `AGENTS.md` and skills and tells the
   * model about it, so the default is an empty private directory of the client, not the process's.
   */
  readonly cwd?: string | undefined
  /**
   * The CLI's home (`CODEX_HOME`): its sessions, state databases and logins. Default a private
   * directory of the client, removed with it; give one that outlives the process to `resume` a
   * session later.
   */
  readonly home?: string | undefined
  /**
   * Changes to the CLI's environment (`undefined` removes a variable). The base is an allow-list
   * of this process's environment: `PATH`, locale and time zone, proxies and CA files, and
   * `OPENAI_API_KEY` / `CODEX_API_KEY` / `OPENAI_BASE_URL`.
   */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** The bridge's MCP server name. Default `gtb` (the model sees the namespace `mcp__gtb`). */
  readonly serverName?: string | undefined
  /** A Codex thread to continue (its id, as `CodexCli.make`'s client reports it); needs the same `home`. */
  readonly resume?: string | undefined
  /**
   * `--sandbox` for the CLI's own shell tool. Default `read-only` (with `toolPolicy`: the policy's,
   * and always `read-only` when it blocks edits).
   */
  readonly sandbox?: "read-only" | "workspace-write" | "danger-full-access" | undefined
  /**
   * Codex features to switch off (`--disable <feature>`), after the library's defaults (`plugins`
   * and `apps`, which reach the network on their own). Default none.
   */
  readonly disabledFeatures?: ReadonlyArray<string> | undefined
  /**
   * Raw `-c key=value` overrides (the value is TOML), after the library's own: the escape hatch
   * for Codex settings without an option here. Default none.
   */
  readonly config?: Readonly<Record<string, string>> | undefined
  /**
   * The tool policy, as `ClaudeLocal`'s and `GeminiCli`'s `toolPolicy` take it (opt-outs in any
   * CLI's names): each turn compiles it with `ToolPolicy.toCodexPolicy` (the bridge's server
   * approved as a whole, minus its opted-out tools) into `--disable` features, `-c` settings and the
   * sandbox (`read-only` when edits are blocked; else `sandbox`, else the policy's), before
   * `disabledFeatures` and `config`. A refusal (`strict`, invalid settings) fails the turn with a
   * `ConfigurationError`. Default none.
   */
  readonly toolPolicy?: ToolPolicyInput | undefined
  /**
   * Let the CLI load skills and `AGENTS.md` files (its bundled skills, the ones under `home` and
   * the project's). Default `false`: a `$name` mention in your text could otherwise pull a skill's
   * body into the conversation.
   */
  readonly loadSkills?: boolean | undefined
  /** SIGTERM → SIGKILL grace when a run is stopped. Default 2 seconds. */
  readonly killGrace?: Duration.Input | undefined
  /**
   * Keep one `codex app-server` for the client's turns (a `turn/start` each on the same thread)
   * instead of a fresh `codex exec` per turn. It starts on the first turn, with the same settings,
   * and is replaced, continuing the thread with `thread/resume`, when the tool set or the policy
   * changed, after a failed turn, and when it died; it stops when the client's scope closes.
   * Default `false`.
   */
  readonly keepAlive?: boolean | undefined
}
