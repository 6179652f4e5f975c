/**
 * The argv of one `codex exec` run, and of a kept-alive `codex app-server`: the same settings
 * (provider, isolation, instructions, bridge, policy, your overrides) for both. Pure: what the run
 * acquired (the bridge's URL, its private files, the skills found on disk) comes in as data. No
 * secret and no user text is ever put here: the prompt goes to stdin (or a `turn/start` text
 * item), the bearer and the API key to the child's environment.
 */
import type { Options } from "./options.ts"

/** The child's variable holding the run's bridge bearer (`bearer_token_env_var`). */
export const BridgeTokenVar = "CODEX_ECB_BRIDGE_TOKEN"

/** The child's variable holding the API key of the library's provider (`env_key`). */
export const ApiKeyVar = "CODEX_ECB_API_KEY"

/** The provider id the library defines when `baseUrl` or `apiKey` is set. */
export const ProviderId = "ecb"

/** Features switched off in every run: both reach the network on their own (plugin sync, connectors). */
export const DefaultDisabledFeatures: ReadonlyArray<string> = ["plugins", "apps"]

/** A TOML basic string: JSON's escaping is a subset TOML accepts. */
export const tomlString = (value: string): string => JSON.stringify(value)

/**
 * Disabled features and raw `-c` overrides as argv: the hook a compiled tool policy plugs into
 * (Codex's built-ins are switched off as features and settings, not by tool name).
 */
export const overrideArgs = (overrides: {
  readonly disabledFeatures?: ReadonlyArray<string> | undefined
  readonly config?: Readonly<Record<string, string>> | undefined
}): Array<string> => [
  ...(overrides.disabledFeatures ?? []).flatMap((feature) => ["--disable", feature]),
  ...Object.entries(overrides.config ?? {}).flatMap(([key, value]) => ["-c", `${key}=${value}`])
]

/** A compiled tool policy's switches (`ToolPolicy.toCodexPolicy`'s `cliOptions`). */
export interface PolicySwitches {
  readonly disabledFeatures: ReadonlyArray<string>
  readonly sandbox: "read-only" | "workspace-write"
  readonly config: Readonly<Record<string, string>>
}

/** What a process's settings depend on besides the options. */
export interface ProcessArgs {
  readonly serverName: string
  /** The bridge's URL when your tools are mounted. */
  readonly bridgeUrl: string | undefined
  readonly cwd: string
  /** `model_instructions_file`, when `systemPrompt` is set. */
  readonly instructionsFile: string | undefined
  /** Every `SKILL.md` the CLI could load, each switched off (unless `loadSkills`). */
  readonly skillFiles: ReadonlyArray<string>
  /** The compiled `toolPolicy`, when there is one. */
  readonly policy?: PolicySwitches | undefined
}

/** What one `exec` run's argv depends on besides the options. */
export interface RunArgs extends ProcessArgs {
  /** `--output-schema`, for `ask`. */
  readonly schemaFile: string | undefined
  /** The thread to continue (`exec resume <id>`). */
  readonly threadId: string | undefined
}

/** The sandbox: a policy that blocks edits makes it read-only whatever `sandbox` says. */
export const sandboxOf = (options: Options, policy: PolicySwitches | undefined) =>
  policy?.sandbox === "read-only" ? "read-only" : options.sandbox ?? policy?.sandbox ?? "read-only"

const config = (key: string, value: string) => ["-c", `${key}=${value}`]

const retries = (n: number | undefined) =>
  n === undefined ? "" : `,request_max_retries=${Math.trunc(n)},stream_max_retries=${Math.trunc(n)}`

const providerArgs = (options: Options): Array<string> =>
  options.baseUrl === undefined && options.apiKey === undefined ? [] : [
    ...config("model_provider", tomlString(ProviderId)),
    ...config(
      `model_providers.${ProviderId}`,
      `{name="effect-chat-bridge",base_url=${tomlString(options.baseUrl ?? "https://api.openai.com/v1")},` +
        `wire_api="responses",env_key="${ApiKeyVar}"${retries(options.maxRetries)}}`
    )
  ]

const isolationArgs = (options: Options, run: ProcessArgs): Array<string> => [
  // Both would reach the network on their own (usage analytics, a release check).
  ...config("analytics.enabled", "false"),
  ...config("check_for_update_on_startup", "false"),
  ...(options.loadSkills === true ? [] : [
    ...config("skills.bundled.enabled", "false"),
    ...config("project_doc_max_bytes", "0"),
    ...config(
      "skills.config",
      `[${run.skillFiles.map((file) => `{path=${tomlString(file)},enabled=false}`).join(",")}]`
    )
  ])
]

const bridgeArgs = (run: ProcessArgs): Array<string> =>
  run.bridgeUrl === undefined ? [] : [
    ...config(`mcp_servers.${run.serverName}.url`, tomlString(run.bridgeUrl)),
    ...config(`mcp_servers.${run.serverName}.bearer_token_env_var`, tomlString(BridgeTokenVar)),
    // `exec` runs with approval policy "never": an MCP tool that is not pre-approved fails.
    ...config(`mcp_servers.${run.serverName}.default_tools_approval_mode`, tomlString("approve"))
  ]

/** The settings both commands take: the provider, isolation, instructions and the bridge. */
const settingArgs = (options: Options, run: ProcessArgs): Array<string> => [
  ...providerArgs(options),
  ...isolationArgs(options, run),
  ...(run.instructionsFile === undefined ? [] : config("model_instructions_file", tomlString(run.instructionsFile))),
  ...bridgeArgs(run)
]

/** The disabled features, then the policy's settings, then your own `config` (last: it wins). */
const userArgs = (options: Options, run: ProcessArgs): Array<string> =>
  overrideArgs({
    disabledFeatures: [
      ...DefaultDisabledFeatures,
      ...(run.policy?.disabledFeatures ?? []),
      ...(options.disabledFeatures ?? [])
    ],
    // The policy's settings override the bridge's defaults above; your own `config` comes last.
    config: { ...run.policy?.config, ...options.config }
  })

/** The argv of a run; the prompt is read from stdin (`-`), as the whole prompt. */
export const buildArgs = (options: Options, run: RunArgs): Array<string> => [
  "exec",
  "--json",
  "--skip-git-repo-check",
  "--ignore-user-config",
  "--ignore-rules",
  "--sandbox",
  sandboxOf(options, run.policy),
  "--cd",
  run.cwd,
  ...(options.model === undefined ? [] : ["--model", options.model]),
  ...settingArgs(options, run),
  ...(run.schemaFile === undefined ? [] : ["--output-schema", run.schemaFile]),
  ...userArgs(options, run),
  ...(run.threadId === undefined ? [] : ["resume", run.threadId]),
  "-"
]

/**
 * The argv of a kept-alive `codex app-server` on stdio. It has no `--sandbox`, `--model` or
 * `--cd`: those travel in `thread/start` (and `thread/resume`), where, as `exec`'s flags do, they
 * win over any `-c` setting.
 */
export const appServerArgs = (options: Options, run: ProcessArgs): Array<string> => [
  "app-server",
  "--listen",
  "stdio://",
  ...settingArgs(options, run),
  ...userArgs(options, run)
]
