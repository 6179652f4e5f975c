/**
 * The argv of one `claude -p` run of `ClaudeLocal`, and how its subprocess failures read. Pure:
 * nothing here holds a resource.
 */
import * as Option from "effect/Option"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import { ConfigurationError, ProcessError, ProviderError, TimeoutError } from "../../services/ChatClient.ts"
import type { SubprocessError } from "../../services/Subprocess.ts"
import { cliFlags, extraFlags } from "../claude/codeRun.ts"
import * as Extensions from "../claude/extensions.ts"
import type { Options } from "./options.ts"

export const provider = "claude-local"

/** What one turn asks of the CLI, besides the prompt. */
export interface Turn {
  /** The session to continue with `--resume`; none on the first turn. */
  readonly sessionId: Option.Option<string>
  /** The bridge's MCP config file, when tools are set. */
  readonly mcpConfigPath: string | undefined
  /** The resolved tool policy, rendered as `--tools` / `--allowedTools` / `--disallowedTools`. */
  readonly policy: ToolPolicy.ToolPolicy
  /** The JSON Schema text passed as `--json-schema` for `ask`. */
  readonly jsonSchema: string | undefined
  /** The policy's arguments when bounded (`ToolPolicy.boundPolicy`); default `toCliFlags(policy)`. */
  readonly policyArgs?: ReadonlyArray<string> | undefined
  /** With `sessionId`: continue in a new session (`--fork-session`). */
  readonly fork?: boolean | undefined
  /** The `mcp__<server>__<tool>` that answers permission prompts (`canUseTool`); hidden from the model. */
  readonly permissionPromptTool?: string | undefined
  /** `--include-hook-events`: the application's hooks show in `chatStream` (a CLI that has the flag). */
  readonly hookEvents?: boolean | undefined
  /**
   * A kept-alive CLI: prompts come as stream-json user messages on stdin, with partial messages
   * always on (chat and chatStream turns share the process).
   */
  readonly streamInput?: boolean | undefined
  /**
   * What the process may spend (`--max-budget-usd`): what is left of the conversation's
   * `maxBudgetUsd` when it starts (the option itself is not passed: the CLI counts only its own
   * process's spend).
   */
  readonly budgetUsd?: number | undefined
}

/**
 * The allow-list in the server form `mcp__<server>`: claude 2.0.x does not match the wildcard
 * `mcp__<server>__*` (every bridge call would be denied); the server form works on every version.
 * A server with a gated tool never has a wildcard entry (the policy allows its tools by exact
 * name), so this never widens an entry to cover one.
 */
export const serverAllowRules = (policy: ToolPolicy.ToolPolicy): ToolPolicy.ToolPolicy => ({
  ...policy,
  allowedTools: policy.allowedTools.map((rule) => rule.endsWith("__*") ? rule.slice(0, -3) : rule)
})

/**
 * For a CLI without `--json-schema`: the schema goes in the prompt, and the answer text is decoded
 * as JSON (as for any provider without structured output).
 */
export const schemaInstruction = (schema: string) =>
  `Answer with only a JSON object (no prose, no code fence) that matches this JSON Schema:\n${schema}`

/** The permission prompt tool is called by the CLI only: it is never offered to the model. */
export const hidePermissionTool = (policy: ToolPolicy.ToolPolicy, tool: string | undefined): ToolPolicy.ToolPolicy =>
  tool === undefined ? policy : { ...policy, disallowedTools: [...policy.disallowedTools, tool] }

/** The CLI arguments of one turn (the prompt goes on stdin). */
export const buildArgs = (options: Options, turn: Turn): ReadonlyArray<string> => [
  "-p",
  "--output-format",
  "stream-json",
  "--verbose",
  ...(turn.streamInput === true ? ["--input-format", "stream-json", "--include-partial-messages"] : []),
  ...(options.systemPrompt === undefined ? [] : ["--system-prompt", options.systemPrompt]),
  ...(options.model === undefined ? [] : ["--model", options.model]),
  ...(options.permissionMode === undefined ? [] : ["--permission-mode", options.permissionMode]),
  ...Option.match(turn.sessionId, {
    onNone: () => [],
    onSome: (id) => ["--resume", id, ...(turn.fork === true ? ["--fork-session"] : [])]
  }),
  ...cliFlags(options, turn.budgetUsd, turn.policy),
  // Strict: never load a stray .mcp.json from the working directory. A plugin that asked for its
  // MCP servers needs it off; then no settings sources are loaded (`Extensions.invalid`), so no
  // other config can mount a server.
  ...(Extensions.mcpDiscovery(options) ? [] : ["--strict-mcp-config"]),
  ...(turn.mcpConfigPath === undefined ? [] : ["--mcp-config", turn.mcpConfigPath]),
  ...(turn.permissionPromptTool === undefined ? [] : ["--permission-prompt-tool", turn.permissionPromptTool]),
  ...(turn.policyArgs ??
    ToolPolicy.toCliFlags(serverAllowRules(hidePermissionTool(turn.policy, turn.permissionPromptTool)))),
  ...(turn.jsonSchema === undefined ? [] : ["--json-schema", turn.jsonSchema]),
  ...(turn.hookEvents === true ? ["--include-hook-events"] : []),
  ...extraFlags(options.extraArgs)
]

/** Where the binary came from, as the user set it: the default name on PATH, or a path they gave. */
const binarySource = (binary: string) =>
  binary === "claude"
    ? "looked for `claude` on PATH"
    : `looked for ${JSON.stringify(binary)}, given as the \`binary\` option or the CLAUDE_BINARY variable`

const installHint = (binary: string) =>
  `The claude CLI was not found (${binarySource(binary)}). Install Claude Code ` +
  "(npm install -g @anthropic-ai/claude-code, or see https://docs.claude.com/claude-code), then run " +
  "`claude` once to log in (or set ANTHROPIC_API_KEY); or set CLAUDE_BINARY (or the `binary` option) " +
  "to the path of a claude executable."

/** A binary that exists but cannot be started: a directory, or a file without execute permission. */
const notExecutableHint = (binary: string, said: string) =>
  `The claude CLI cannot be started (${binarySource(binary)}: ${said}); it is a directory or not an ` +
  "executable file. Set CLAUDE_BINARY (or the `binary` option) to the claude executable itself, such as " +
  "the output of `command -v claude`."

/** A subprocess failure as the client reports it: a missing binary says how to install it. */
export const fromSubprocess = (binary: string) => (error: SubprocessError): ProviderError => {
  switch (error.reason._tag) {
    case "NotFound":
      return new ProviderError({ provider, reason: new ConfigurationError({ message: installHint(binary) }) })
    case "TimedOut":
      return new ProviderError({ provider, reason: new TimeoutError({ message: error.message }) })
    case "SpawnFailed":
      return /EACCES|EISDIR|ENOEXEC|ENOTDIR/.test(error.message)
        ? new ProviderError({
          provider,
          reason: new ConfigurationError({
            message: notExecutableHint(binary, error.message)
          })
        })
        : new ProviderError({ provider, reason: new ProcessError({ message: error.message }) })
    default:
      return new ProviderError({ provider, reason: new ProcessError({ message: error.message }) })
  }
}

/** A failure of this library's own set-up (a secret file, the policy's bounds, a bridge) as a `config` error. */
export const configError = (error: { readonly message: string }): ProviderError =>
  new ProviderError({ provider, reason: new ConfigurationError({ message: error.message }) })
