/**
 * How the shared Claude Code options become a run: CLI flags (ClaudeLocal), Agent SDK options
 * (ClaudeAgent), the CLI's environment, the MCP config holding the application's servers, and the
 * permission-prompt tool that carries `canUseTool` decisions to the CLI.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as ToolPolicy from "../../registry/ToolPolicy.ts"
import {
  type CanUseTool,
  type ClaudeCodeOptions,
  type McpServer,
  type PermissionDecision,
  type PermissionRequest
} from "../../services/ClaudeCodeOptions.ts"
import * as Tool from "../../services/Tool.ts"
import { agentEnvironment } from "./environment.ts"
import * as Extensions from "./extensions.ts"

/**
 * The CLI's full environment: the allow-list of `base` (all of it with `inheritEnv`), then the
 * caller's changes.
 */
export const cliEnvironment = (
  base: Readonly<Record<string, string | undefined>>,
  options: {
    readonly env?: Readonly<Record<string, string | undefined>> | undefined
    readonly inheritEnv?: boolean | undefined
  }
): Record<string, string> => agentEnvironment(base, options.env, options.inheritEnv === true)

/**
 * `env` as changes to `base` (what a Subprocess applies to the inherited environment): every
 * variable of `base` missing from `env` is removed.
 */
export const asChanges = (
  base: Readonly<Record<string, string | undefined>>,
  env: Readonly<Record<string, string>>
): Record<string, string | undefined> => {
  const changes: Record<string, string | undefined> = {}
  for (const name of Object.keys(base)) if (!(name in env)) changes[name] = undefined
  return Object.assign(changes, env)
}

/**
 * CLI flags for the shared options. `=` joins a value to its flag, so a value starting with `-`
 * is never read as a flag and a variadic flag never swallows the next one. `budgetUsd` is the
 * run's budget (`RunInput.budgetUsd`), not `options.maxBudgetUsd`: the CLI counts only its own
 * process's spend, so it is given what the conversation has left. The typed extension options
 * (`agents`, `tools`, `thinking`, `plugins`) go through the run's `policy` (see `extensions.ts`).
 */
export const cliFlags = (
  options: ClaudeCodeOptions,
  budgetUsd: number | undefined,
  policy: ToolPolicy.ToolPolicy = Extensions.noPolicy
): ReadonlyArray<string> => [
  `--setting-sources=${(options.settingSources ?? []).join(",")}`,
  ...(options.appendSystemPrompt === undefined ? [] : [`--append-system-prompt=${options.appendSystemPrompt}`]),
  ...(options.fallbackModel === undefined ? [] : [`--fallback-model=${options.fallbackModel}`]),
  ...(options.maxTurns === undefined ? [] : [`--max-turns=${options.maxTurns}`]),
  ...(budgetUsd === undefined ? [] : [`--max-budget-usd=${budgetUsd}`]),
  ...(options.addDirs ?? []).map((dir) => `--add-dir=${dir}`),
  ...(options.effort === undefined ? [] : [`--effort=${options.effort}`]),
  ...(options.agents === undefined ? [] : [`--agents=${JSON.stringify(Extensions.agentsFor(options.agents, policy))}`]),
  ...Extensions.cliFlags(options, policy)
]

/** `extraArgs` as flags: `--name=value`, or `--name` for `null`. */
export const extraFlags = (extra: Readonly<Record<string, string | null>> | undefined): ReadonlyArray<string> =>
  Object.entries(extra ?? {}).map(([name, value]) => (value === null ? `--${name}` : `--${name}=${value}`))

/** An application server as Claude Code's MCP config writes it. */
export const mcpConfigEntry = (server: McpServer): Record<string, unknown> => ({
  ...(server.type === "http"
    ? { type: "http", url: server.url, ...(server.headers === undefined ? {} : { headers: server.headers }) }
    : {
      type: "stdio",
      command: server.command,
      args: [...(server.args ?? [])],
      ...(server.env === undefined ? {} : { env: server.env })
    }),
  ...(server.alwaysLoad === undefined ? {} : { alwaysLoad: server.alwaysLoad })
})

/** The CLI's answer format for `--permission-prompt-tool`. */
export const permissionAnswer = (request: PermissionRequest, decision: PermissionDecision) =>
  decision._tag === "Allow"
    ? { behavior: "allow" as const, updatedInput: { ...(decision.updatedInput ?? request.input) } }
    : { behavior: "deny" as const, message: decision._tag === "Deny" ? decision.message : notDeferrable }

/**
 * What the model reads when `canUseTool` answers `defer` for a call that cannot wait: only calls of
 * tools that `needsApproval` go through the library's deferring hook.
 */
export const notDeferrable =
  "This call needs an approval that cannot wait here; it was not run. Ask the user to approve it, then try again."

/** Runs the application's callback; a failure or defect denies the call (and is logged). */
export const decide = (canUseTool: CanUseTool, request: PermissionRequest): Effect.Effect<PermissionDecision> =>
  Effect.suspend(() => canUseTool(request)).pipe(
    Effect.catchCause((cause) =>
      Effect.as(
        Effect.logWarning("canUseTool failed; the call is denied", Cause.pretty(cause)),
        { _tag: "Deny", message: "The application could not decide on this call" } as const
      )
    ),
    Effect.map((decision): PermissionDecision => decision)
  )

/** The name of the permission-prompt tool on its own bridge. */
export const PermissionToolName = "decide"

const asRecord = (u: unknown): Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : {}

/**
 * The tool the CLI calls as `--permission-prompt-tool`. It is disallowed for the model, so only
 * the CLI's permission prompt reaches it. Each deny is recorded by tool use id (`onDeny`), so the
 * run does not report the application's own decisions as failures.
 */
export const permissionTool = (canUseTool: CanUseTool, onDeny: (toolUseId: string) => void): Tool.Tool =>
  Tool.dynamic(PermissionToolName, {
    description: "Permission prompt of the application (not for the model)",
    inputSchema: {
      type: "object",
      properties: { tool_name: { type: "string" }, input: { type: "object" }, tool_use_id: { type: "string" } },
      required: ["tool_name", "input"]
    },
    handler: Effect.fnUntraced(function*(raw: unknown) {
      const body = asRecord(raw)

      const request: PermissionRequest = {
        toolName: String(body["tool_name"]),
        input: asRecord(body["input"]),
        toolUseId: typeof body["tool_use_id"] === "string" ? body["tool_use_id"] : undefined
      }
      const decision = yield* decide(canUseTool, request)
      if (decision._tag !== "Allow" && request.toolUseId !== undefined) onDeny(request.toolUseId)
      return JSON.stringify(permissionAnswer(request, decision))
    })
  })

/**
 * Agent SDK options for the shared options (the SDK's own names). `appendSystemPrompt` uses the
 * Claude Code preset, or is appended to a replacing `systemPrompt`. `budgetUsd` is the query's
 * budget, as for {@link cliFlags}; the typed extension options go through `policy` as there.
 * `sandbox` is left to the caller, which merges it into its settings file when it writes one.
 */
export const sdkOptions = (
  options: ClaudeCodeOptions & { readonly systemPrompt?: string | undefined },
  budgetUsd: number | undefined,
  policy: ToolPolicy.ToolPolicy = Extensions.noPolicy
) => {
  const { appendSystemPrompt: append, systemPrompt } = options
  const agents = Extensions.agentsFor(options.agents, policy)
  const tools = Extensions.toolsFor(options.tools, policy)
  return {
    settingSources: [...(options.settingSources ?? [])],
    ...(systemPrompt === undefined
      ? append === undefined
        ? {}
        : { systemPrompt: { type: "preset" as const, preset: "claude_code" as const, append } }
      : { systemPrompt: append === undefined ? systemPrompt : `${systemPrompt}\n\n${append}` }),
    ...(options.fallbackModel === undefined ? {} : { fallbackModel: options.fallbackModel }),
    ...(options.maxTurns === undefined ? {} : { maxTurns: options.maxTurns }),
    ...(budgetUsd === undefined ? {} : { maxBudgetUsd: budgetUsd }),
    ...(options.addDirs === undefined ? {} : { additionalDirectories: [...options.addDirs] }),
    ...(options.effort === undefined ? {} : { effort: options.effort }),
    ...(options.thinking === undefined ? {} : { thinking: { ...options.thinking } }),
    ...(options.maxThinkingTokens === undefined ? {} : { maxThinkingTokens: options.maxThinkingTokens }),
    ...(tools === undefined
      ? {}
      : { tools: tools === "default" ? { type: "preset" as const, preset: "claude_code" as const } : [...tools] }),
    ...(options.plugins === undefined ? {} : {
      plugins: options.plugins.map((plugin) => ({
        type: "local" as const,
        path: plugin.path,
        // Off by default: a plugin's MCP servers would mount past the application's choice.
        skipMcpDiscovery: plugin.skipMcpDiscovery !== false
      }))
    }),
    ...(agents === undefined ? {} : {
      agents: Object.fromEntries(
        Object.entries(agents).map(([name, a]) => [name, {
          description: a.description,
          prompt: a.prompt,
          ...(a.tools === undefined ? {} : { tools: [...a.tools] }),
          ...(a.disallowedTools === undefined ? {} : { disallowedTools: [...a.disallowedTools] }),
          ...(a.model === undefined ? {} : { model: a.model })
        }])
      )
    })
  }
}
