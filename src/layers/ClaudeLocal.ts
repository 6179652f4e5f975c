/**
 * The locally installed `claude` CLI as a ChatClient. Each turn runs
 * `claude -p --output-format stream-json --verbose` (the prompt on stdin); conversations continue
 * with `--resume`. Your in-process tools reach the CLI through a loopback MCP bridge
 * (`McpBridge`) started on the first non-empty `setTools`; its bearer token travels only in a
 * 0600 config file that exists for the duration of one run. Built-in Claude Code tools are limited
 * by the registry policy (`ToolPolicy`), resolved for a headless session.
 *
 * Runs are isolated by default: the CLI gets an allow-list of this process's environment (not the
 * application's secrets; `inheritEnv` passes all of it) and loads no user, project or local
 * settings (`--setting-sources=`; `settingSources` opts in). `canUseTool` answers the CLI's
 * permission prompts through `--permission-prompt-tool`, a tool on a second loopback bridge that
 * is disallowed for the model, so only the CLI reaches it.
 *
 * The prompt goes on stdin rather than after `-p`: a prompt starting with `-` would be read as a
 * flag, a variadic flag such as `--disallowedTools` could swallow it, and stdin keeps it out of
 * `ps` and of the logged argv. It is always one `--input-format stream-json` user message (built
 * by `internal/claudeUserMessage.ts`), marked `client_composed` so the CLI passes the text to the
 * model verbatim: no `@file` reads, no slash commands (`trustedPrompts` opts out). Images and
 * PDFs (`Content` parts) are image/document blocks in it (base64 only, Messages API limits); a
 * tool's images reach the model as MCP image content.
 *
 * With `keepAlive` (or `prewarm`) one CLI per conversation reads its turns as stream-json user
 * messages instead (`internal/claudeLiveCli.ts`); what a run holds (its settings and MCP config
 * files, its bridge credential) then lives as long as that process does.
 *
 * @since 0.1.0
 * @module
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as CliVersion from "../internal/claudeCliVersion.js"
import {
  asChanges,
  cliEnvironment,
  cliFlags,
  extraFlags,
  mcpConfigEntry,
  permissionTool,
  PermissionToolName
} from "../internal/claudeCodeRun.js"
import * as LiveCli from "../internal/claudeLiveCli.js"
import {
  bounded,
  interpretRun,
  makeSessionClient,
  remainingBudget,
  type RunInput,
  serverStatus,
  type SessionClient,
  sessionContext,
  toolServerFailure,
  turnTimeout,
  withTurnTimeout
} from "../internal/claudeSession.js"
import { makeRunReader, parseRun, toChatEvent } from "../internal/claudeStreamJson.js"
import * as UserMessage from "../internal/claudeUserMessage.js"
import type { Emit } from "../internal/loopClient.js"
import * as Media from "../internal/media.js"
import * as ClaudeCodeCatalog from "../registry/ClaudeCodeCatalog.js"
import * as Conditions from "../registry/Conditions.js"
import type * as Registry from "../registry/Registry.js"
import * as ToolPolicy from "../registry/ToolPolicy.js"
import { type ChatClient, ProviderError } from "../services/ChatClient.js"
import type { ClaudeCodeOptions, ClaudeSession } from "../services/ClaudeCodeOptions.js"
import * as Pool from "../services/ClaudeProcessPool.js"
import type { McpBridgeService } from "../services/McpBridge.js"
import { SecretFile } from "../services/SecretFile.js"
import { type RunOptions, Subprocess, type SubprocessError } from "../services/Subprocess.js"
import * as Tool from "../services/Tool.js"
import * as NodeMcpBridge from "./NodeMcpBridge.js"
import * as NodeSecretFile from "./NodeSecretFile.js"
import * as NodeSubprocess from "./NodeSubprocess.js"

const provider = "claude-local"

/** `--permission-mode` values of claude 2.1.x. */
export type PermissionMode = "acceptEdits" | "auto" | "bypassPermissions" | "manual" | "dontAsk" | "plan" | "default"

/** The agent's tool policy input: which Claude Code tools this client's agent may use. */
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
}

/**
 * Options of {@link make} and {@link layer}; every field is optional. The shared Claude Code
 * options ({@link ClaudeCodeOptions}) mean the same on `ClaudeAgent`.
 */
export interface Options extends ClaudeCodeOptions {
  /** The `claude` binary: a name on PATH or a path. Default `claude`. */
  readonly binary?: string | undefined
  /** Passed as `--model` (an alias such as `sonnet` or a full model name). Default: the CLI's. */
  readonly model?: string | undefined
  /** Passed as `--system-prompt`, replacing Claude Code's default system prompt. */
  readonly systemPrompt?: string | undefined
  /** Bound on one whole CLI run (all of its model turns and tool calls). Default 10 minutes. */
  readonly requestTimeout?: Duration.DurationInput | undefined
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
  readonly killGrace?: Duration.DurationInput | undefined
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
   * Later turns skip the CLI's start-up (about 0.9 s on a fast machine; see the README's numbers).
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

/** The oldest `claude` CLI this client runs on; an older one fails at the first turn (`kind: "config"`). */
export const MinimumCliVersion: string = CliVersion.MinimumVersion

/** The default bound on one CLI run (`requestTimeout`): 10 minutes. */
export const DefaultRequestTimeout = Duration.minutes(10)

const installHint = (binary: string) =>
  `The claude CLI was not found (looked for ${JSON.stringify(binary)}). Install Claude Code ` +
  "(npm install -g @anthropic-ai/claude-code, or see https://docs.claude.com/claude-code), then run " +
  "`claude` once to log in (or set ANTHROPIC_API_KEY), or pass its path as the `binary` option."

const fromSubprocess = (binary: string) => (error: SubprocessError): ProviderError => {
  switch (error._tag) {
    case "SubprocessNotFoundError":
      return new ProviderError({ provider, kind: "config", message: installHint(binary), retryable: false })
    case "SubprocessTimeoutError":
      return new ProviderError({ provider, kind: "timeout", message: error.message, retryable: true })
    default:
      return new ProviderError({ provider, kind: "process", message: error.message, retryable: false })
  }
}

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
const serverAllowRules = (policy: ToolPolicy.ToolPolicy): ToolPolicy.ToolPolicy => ({
  ...policy,
  allowedTools: policy.allowedTools.map((rule) => rule.endsWith("__*") ? rule.slice(0, -3) : rule)
})

/**
 * For a CLI without `--json-schema`: the schema goes in the prompt, and the answer text is decoded
 * as JSON (as for any provider without structured output).
 */
const schemaInstruction = (schema: string) =>
  `Answer with only a JSON object (no prose, no code fence) that matches this JSON Schema:\n${schema}`

/** The permission prompt tool is called by the CLI only: it is never offered to the model. */
const hidePermissionTool = (policy: ToolPolicy.ToolPolicy, tool: string | undefined): ToolPolicy.ToolPolicy =>
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
  ...cliFlags(options, turn.budgetUsd),
  // Always strict: never load a stray .mcp.json from the working directory.
  "--strict-mcp-config",
  ...(turn.mcpConfigPath === undefined ? [] : ["--mcp-config", turn.mcpConfigPath]),
  ...(turn.permissionPromptTool === undefined ? [] : ["--permission-prompt-tool", turn.permissionPromptTool]),
  ...(turn.policyArgs ??
    ToolPolicy.toCliFlags(serverAllowRules(hidePermissionTool(turn.policy, turn.permissionPromptTool)))),
  ...(turn.jsonSchema === undefined ? [] : ["--json-schema", turn.jsonSchema]),
  ...extraFlags(options.extraArgs)
]

/**
 * Builds a ChatClient on the `claude` CLI. The bridge (if tools are set) lives in the scope of
 * `make`, and is closed with it.
 */
export const make = (
  options: Options = {}
): Effect.Effect<SessionClient, never, Subprocess | SecretFile | Scope.Scope> =>
  Effect.gen(function*() {
    const subprocess = yield* Subprocess
    const secretFile = yield* SecretFile
    const scope = yield* Effect.scope
    const binary = options.binary ?? "claude"
    const serverName = options.bridge?.serverName ?? options.serverName ?? "gtb"
    const registry = options.toolPolicy?.registry ?? ClaudeCodeCatalog.registry
    const agent = { disabledTools: options.toolPolicy?.disabledTools ?? [] }
    const conditions = yield* Conditions.detectNodeConditions({
      cwd: options.cwd,
      given: options.toolPolicy?.conditions
    })
    const timeout = options.requestTimeout ?? DefaultRequestTimeout
    const toolPrefix = `mcp__${serverName}__`
    // A fresh run that outlives `requestTimeout` fails as a kept-alive turn does.
    const fromTurnSubprocess = (error: SubprocessError) =>
      error._tag === "SubprocessTimeoutError" ? turnTimeout(provider, timeout) : fromSubprocess(binary)(error)

    const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
    const bridge = yield* Ref.make(Option.fromNullable(options.bridge))

    // Only a supported version is kept: after an upgrade, the next turn reads it again.
    const knownVersion = yield* Ref.make(Option.none<CliVersion.CliVersion>())
    const readVersion = Effect.gen(function*() {
      if (options.cliVersion !== undefined) {
        return yield* Option.match(CliVersion.parse(options.cliVersion), {
          onNone: () =>
            new ProviderError({
              provider,
              kind: "config",
              message: `cliVersion ${JSON.stringify(options.cliVersion)} is not a version such as 2.1.332; ` +
                "fix it, or leave it out to read `claude --version`",
              retryable: false
            }),
          onSome: (v) => Effect.succeed(Option.some(v))
        })
      }
      const printed = yield* subprocess.run({
        command: binary,
        args: ["--version"],
        timeout: Duration.seconds(30),
        env: asChanges(process.env, cliEnvironment(process.env, options)),
        ...(options.cwd === undefined ? {} : { cwd: options.cwd })
      }).pipe(
        // A `--version` that fails says nothing about the version: the run itself reports why the
        // CLI cannot start (not logged in, broken install) with its own exit code and stderr.
        Effect.catchTag("SubprocessExitError", (e) => Effect.succeed({ stdout: "", stderr: e.stderrTail })),
        Effect.mapError(fromSubprocess(binary))
      )
      const parsed = CliVersion.parse(printed.stdout)
      if (Option.isNone(parsed)) {
        // A wrapper script may print something else: run it as the pinned version rather than refuse.
        yield* Effect.logWarning("claude --version printed no version; assuming the newest features").pipe(
          Effect.annotateLogs({ output: bounded(printed.stdout.trim(), 200) })
        )
      }
      return parsed
    })
    const cliVersion = Effect.gen(function*() {
      const known = yield* Ref.get(knownVersion)
      if (Option.isSome(known)) return known.value
      const read = yield* readVersion
      if (Option.isNone(read)) return Option.getOrThrow(CliVersion.parse(CliVersion.PinnedVersion))
      const version = yield* CliVersion.requireSupported(provider, read.value)
      yield* Ref.set(knownVersion, Option.some(version))
      return version
    })
    const appServers = options.mcpServers ?? {}
    // Tool use ids the application denied through `canUseTool`: its decisions, not failures.
    const decidedDenials = new Set<string>()
    const permissionServer = `${serverName}_permission`
    // The permission prompt's own bridge: not the tools' one, so it never mixes with the caller's
    // tools, and the policy never mounts or allows it for the model.
    const permissionBridge = options.canUseTool === undefined
      ? Effect.succeed(undefined)
      : yield* Effect.cached(
        NodeMcpBridge.make({
          serverName: permissionServer,
          tools: [permissionTool(options.canUseTool, (id) => decidedDenials.add(id))]
        }).pipe(
          Scope.extend(scope),
          Effect.mapError((e) => new ProviderError({ provider, kind: "config", message: e.message, retryable: false }))
        )
      )

    /**
     * Runs the CLI with partial messages on, reporting text and bridge tool calls as they happen.
     * A bridge the CLI could not connect to stops the run at the init line.
     */
    const streamRun = (runOptions: RunOptions, emit: Emit, mounted: boolean) =>
      Effect.gen(function*() {
        const reader = makeRunReader(toolPrefix)
        let first = true
        const outcome = yield* subprocess.stream({
          ...runOptions,
          args: [...runOptions.args, "--include-partial-messages"]
        })
          .pipe(
            Stream.runForEach((line) =>
              Effect.gen(function*() {
                const events = reader.line(line)
                if (mounted && first) {
                  const init = reader.init()
                  const status = serverStatus(init, serverName)
                  if (init !== undefined && status !== "connected") {
                    return yield* toolServerFailure(provider, serverName, init)
                  }
                }
                first = false
                for (const event of events) yield* emit(toChatEvent(event))
              })
            ),
            Effect.as({ exitCode: 0, stderr: "" }),
            Effect.catchTag(
              "SubprocessExitError",
              (e) => Effect.succeed({ exitCode: e.exitCode, stderr: e.stderrTail })
            ),
            Effect.mapError((e) => (e._tag === "ProviderError" ? e : fromTurnSubprocess(e)))
          )
        return { ...outcome, parsed: reader.done() }
      })

    /** Long lists go to a `--settings` file, so a huge policy never makes the spawn fail (E2BIG). */
    const policyArguments = (policy: ToolPolicy.ToolPolicy) =>
      Effect.gen(function*() {
        const bounded = yield* ToolPolicy.boundPolicy(policy).pipe(
          Effect.mapError((e) => new ProviderError({ provider, kind: "config", message: e.message, retryable: false }))
        )
        const settingsPath = bounded.settings === undefined ? undefined : yield* secretFile.writeScoped(
          JSON.stringify(bounded.settings)
        ).pipe(
          Effect.mapError((e) => new ProviderError({ provider, kind: "config", message: e.message, retryable: false }))
        )
        return ToolPolicy.toBoundedCliFlags(bounded, settingsPath)
      })

    /**
     * What a run needs that holds no resource: the CLI's version (and the features an option
     * needs of it), the resolved policy, the tools, the permission bridge. A kept-alive CLI is
     * reused while this stays the same (see `liveKey`).
     */
    const planRun = (responseFormat: RunInput["responseFormat"]) =>
      Effect.gen(function*() {
        const cli = yield* cliVersion
        if (options.permissionMode === "dontAsk" && !CliVersion.supports(cli, "dontAskMode")) {
          return yield* CliVersion.unsupported(provider, cli, "dontAskMode")
        }
        if (options.maxBudgetUsd !== undefined && !CliVersion.supports(cli, "maxBudgetFlag")) {
          return yield* CliVersion.unsupported(provider, cli, "maxBudgetFlag")
        }
        if (options.effort !== undefined && !CliVersion.supports(cli, "effortFlag")) {
          return yield* CliVersion.unsupported(provider, cli, "effortFlag")
        }
        const toolSet = yield* Ref.get(tools)
        const running = yield* Ref.get(bridge)
        const serving = toolSet.tools.length > 0 && Option.isSome(running)
        const requested = [...(serving ? [serverName] : []), ...Object.keys(appServers)]
        const policy = ToolPolicy.resolveValidated(registry, agent, {
          conditions,
          headless: true,
          ...(options.permissionMode === undefined ? {} : { permissionMode: options.permissionMode }),
          ...(requested.length > 0 ? { mcpServers: requested } : {})
        })
        const mounted = serving && policy.mountedServers.includes(serverName)
        const permissions = yield* permissionBridge
        const permissionPromptTool = permissions === undefined
          ? undefined
          : `mcp__${permissionServer}__${PermissionToolName}`
        const schema = responseFormat === undefined ? undefined : JSON.stringify(responseFormat.schema)
        const structured = CliVersion.supports(cli, "jsonSchema")
        return {
          cli,
          toolSet,
          running,
          policy,
          mounted,
          permissions,
          permissionPromptTool,
          jsonSchema: structured ? schema : undefined,
          // For a CLI without `--json-schema` the schema goes in the prompt.
          schemaText: schema === undefined || structured ? undefined : schemaInstruction(schema)
        }
      })
    type RunPlan = Effect.Effect.Success<ReturnType<typeof planRun>>

    /**
     * The run's command, argv and environment, and its bridge run if the tools are mounted. What
     * it acquires lives in the current scope: the policy's settings file, the run's own bridge
     * token (`openRun`: when the scope closes the bridge closes the run's sessions and interrupts
     * the tool calls it started; until then they are traced under the span current here) and the
     * 0600 MCP config. The scope is one run's, or a kept-alive CLI's.
     */
    const prepareRun = (
      plan: RunPlan,
      turn: {
        readonly sessionId: Option.Option<string>
        readonly fork: boolean
        readonly streamInput: boolean
        readonly budgetUsd: number | undefined
      }
    ) =>
      Effect.gen(function*() {
        const { permissionPromptTool, permissions, policy, running } = plan
        const policyArgs = yield* policyArguments(serverAllowRules(hidePermissionTool(policy, permissionPromptTool)))
        // The file goes first (finalizers run in reverse), then the run's token.
        const runAccess = plan.mounted && Option.isSome(running) ? yield* running.value.openRun : undefined
        // One 0600 file for every server: the bridge's token and the application's headers and
        // env stay out of argv.
        const servers: Record<string, unknown> = {
          ...(runAccess === undefined ? {} : runAccess.mcpConfig.mcpServers),
          ...(permissions === undefined ? {} : permissions.mcpConfig.mcpServers)
        }
        for (const [name, server] of Object.entries(appServers)) {
          if (policy.mountedServers.includes(name)) servers[name] = mcpConfigEntry(server)
        }
        const mcpConfigPath = Object.keys(servers).length > 0
          ? yield* secretFile.writeScoped(`${JSON.stringify({ mcpServers: servers }, null, 2)}\n`).pipe(
            Effect.mapError((e) =>
              new ProviderError({ provider, kind: "config", message: e.message, retryable: false })
            )
          )
          : undefined
        const runOptions: RunOptions = {
          command: binary,
          args: buildArgs(options, {
            sessionId: turn.sessionId,
            mcpConfigPath,
            policy,
            policyArgs,
            jsonSchema: plan.jsonSchema,
            fork: turn.fork,
            permissionPromptTool,
            streamInput: turn.streamInput,
            budgetUsd: turn.budgetUsd
          }),
          // Read at each start: the allow-list of the environment of now.
          env: runEnv(),
          ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
          ...(options.killGrace === undefined ? {} : { killGrace: options.killGrace })
        }
        return { runOptions, bridgeRun: runAccess }
      })
    const runEnv = () => asChanges(process.env, cliEnvironment(process.env, options))

    const trusted = options.trustedPrompts === true
    // The user's text is checked, not the schema the library appends.
    const requireVerbatim = (cli: CliVersion.CliVersion, input: RunInput) =>
      UserMessage.requireVerbatim(provider, cli, input, trusted)
    const userMessage = (input: RunInput, schemaText: string | undefined) =>
      UserMessage.make({ prompt: input.prompt, parts: input.parts, extraText: schemaText }, !trusted)

    const run = (input: RunInput) =>
      Effect.scoped(Effect.gen(function*() {
        const plan = yield* planRun(input.responseFormat)
        yield* requireVerbatim(plan.cli, input)
        const { mounted } = plan
        const { runOptions: prepared } = yield* prepareRun(plan, {
          sessionId: input.sessionId,
          fork: input.fork,
          streamInput: false,
          budgetUsd: input.budgetUsd
        })
        // Every prompt is one stream-json user message, so it can say "verbatim".
        const runOptions = {
          ...prepared,
          args: [...prepared.args, ...UserMessage.streamJsonInputFlags],
          stdin: `${JSON.stringify(userMessage(input, plan.schemaText))}\n`,
          timeout
        }
        // The bridge's tool calls during this run are children of the span the run's token was
        // opened in (prepareRun, inside this turn's span).
        const result = input.emit === undefined
          ? yield* subprocess.run({ ...runOptions, allowNonZeroExit: true }).pipe(
            Effect.map((done) => ({ ...done, parsed: parseRun(done.stdout, toolPrefix) })),
            Effect.mapError(fromTurnSubprocess)
          )
          : yield* streamRun(runOptions, input.emit, mounted)
        const { parsed } = result
        return yield* interpretRun({
          provider,
          serverName,
          mounted,
          init: parsed.init,
          result: parsed.result,
          exitCode: result.exitCode,
          stderr: result.stderr,
          toolUses: parsed.toolUses,
          allowPermissionDenials: options.allowPermissionDenials === true,
          recordResult: input.recordResult,
          lastText: parsed.lastText,
          decidedDenials,
          noResult: () => {
            const stderr = bounded(result.stderr.trim(), 1_000)
            return new ProviderError({
              provider,
              kind: result.exitCode === 0 ? "decode" : "process",
              message: result.exitCode === 0
                ? `The claude CLI printed no result line${
                  parsed.garbage.length > 0 ? ` (unparseable output: ${bounded(parsed.garbage[0]!, 200)})` : ""
                }`
                : `The claude CLI exited with code ${result.exitCode}${stderr === "" ? "" : `: ${stderr}`}`,
              retryable: false
            })
          }
        }).pipe(Effect.map((outcome) => ({ ...outcome, activity: parsed.activity })))
      }))

    const setTools = (set: Tool.ToolSet) =>
      Effect.gen(function*() {
        const running = yield* Ref.get(bridge)
        if (Option.isSome(running)) {
          yield* running.value.setTools(set.tools)
        } else if (set.tools.length > 0) {
          // Started once, in the client's scope: port and token stay stable across turns.
          const started = yield* NodeMcpBridge.make({ serverName, tools: set.tools }).pipe(
            Scope.extend(scope),
            Effect.mapError((e) =>
              e._tag === "InvalidToolsError"
                ? e
                : new ProviderError({ provider, kind: "config", message: e.message, retryable: false })
            )
          )
          yield* Ref.set(bridge, Option.some(started))
        }
        yield* Ref.set(tools, set)
      })

    // keepAlive: one CLI per conversation, replaced when a turn needs another plan (its key).
    const keepAlive = options.keepAlive === true || options.prewarm === true
    const slot = LiveCli.makeSlot(subprocess, scope, yield* Effect.serviceOption(Pool.ClaudeProcessPool))

    /**
     * Everything a process is started with but the session, the files' paths and its budget:
     * options are fixed for the client, so the plan's varying parts (the tools, the policy,
     * `--json-schema`) and the environment of now stand for its argv; the bridge's tools stand for
     * its config. The budget stays out: what the conversation has left shrinks every turn, and a
     * process given the rest at its start, counting its own spend, already stops at the same total.
     */
    const liveKey = (plan: RunPlan) =>
      JSON.stringify([
        plan.cli,
        plan.policy,
        plan.mounted ? plan.toolSet.tools.map((t) => [t.name, t.description, t.inputSchema]) : [],
        plan.permissionPromptTool ?? null,
        plan.jsonSchema ?? null,
        runEnv()
      ])

    /**
     * The live CLI for a turn, started (in a scope of its own, with `prepareRun`) if need be; a new
     * one may spend `budgetUsd`.
     */
    const liveCli = (
      sessionId: Option.Option<string>,
      fork: boolean,
      responseFormat: RunInput["responseFormat"],
      budgetUsd: number | undefined
    ) =>
      Effect.gen(function*() {
        const plan = yield* planRun(responseFormat)
        const cli = yield* slot.use(
          liveKey(plan),
          sessionId,
          (resume, forking) =>
            Effect.map(
              prepareRun(plan, { sessionId: resume, fork: forking, streamInput: true, budgetUsd }),
              // The process outlives the turn that started it: each turn re-points the run's span.
              ({ bridgeRun, runOptions }) => ({ ...runOptions, aroundTurn: bridgeRun?.withRunSpan })
            ),
          fork
        ).pipe(Effect.catchTag("ProcessPoolTimeoutError", (e) => Effect.fail(Pool.toProviderError(provider)(e))))
        return { cli, plan }
      })

    /** A turn on the live CLI; any failure or interruption stops it (no half-read turn survives). */
    const liveRun = (input: RunInput) =>
      // Refused before a CLI is started, and without dropping a warm one.
      Effect.zipRight(Effect.flatMap(cliVersion, (cli) => requireVerbatim(cli, input)), liveTurn(input))

    const liveTurn = (input: RunInput) =>
      Effect.gen(function*() {
        const { cli, plan } = yield* liveCli(input.sessionId, input.fork, input.responseFormat, input.budgetUsd)
        const { mounted } = plan
        const reader = makeRunReader(toolPrefix)
        let checked = !mounted
        const message = userMessage(input, plan.schemaText)
        // The bridge's tool calls during this turn are children of the turn's span (`aroundTurn`).
        const output = yield* cli.turn(message, (line) =>
          Effect.gen(function*() {
            const events = reader.line(line)
            if (!checked) {
              // The CLI prints an init line per turn: a bridge it could not reach stops the turn.
              const init = reader.init()
              checked = init !== undefined
              const status = serverStatus(init, serverName)
              if (init !== undefined && status !== "connected") {
                return yield* toolServerFailure(provider, serverName, init)
              }
            }
            if (input.emit !== undefined) { for (const event of events) yield* input.emit(toChatEvent(event)) }
          })).pipe(withTurnTimeout(provider, timeout))
        const parsed = reader.done()
        const ended = output.ended
        return yield* interpretRun({
          provider,
          serverName,
          mounted,
          init: parsed.init,
          result: parsed.result,
          exitCode: ended?.exitCode ?? 0,
          stderr: ended?.stderr ?? "",
          allowPermissionDenials: options.allowPermissionDenials === true,
          recordResult: input.recordResult,
          toolUses: parsed.toolUses,
          lastText: parsed.lastText,
          decidedDenials,
          noResult: () => {
            if (ended?.error !== undefined && ended.error._tag !== "SubprocessExitError") {
              return fromSubprocess(binary)(ended.error)
            }
            const stderr = bounded((ended?.stderr ?? "").trim(), 1_000)
            return new ProviderError({
              provider,
              kind: "process",
              message: `The kept-alive claude CLI ended before the turn's result (${
                ended?.exitCode === undefined ? "stopped" : `exit code ${ended.exitCode}`
              })${stderr === "" ? "" : `: ${stderr}`}; the next turn starts a new one`,
              retryable: false
            })
          }
        }).pipe(Effect.map((outcome) => ({ ...outcome, activity: parsed.activity })))
      }).pipe(Effect.onError(() => slot.drop))

    const liveSetTools = (set: Tool.ToolSet, budgetUsd: number | undefined) =>
      Effect.gen(function*() {
        yield* setTools(set)
        const current = slot.current()
        if (options.prewarm !== true || current === undefined) return
        // A warm start stays warm: a process started with the old tools is replaced now (unless
        // the budget is spent: the next turn fails without a CLI).
        if (budgetUsd === 0) return yield* slot.drop
        yield* liveCli(current.sessionId(), current.forks(), undefined, budgetUsd).pipe(Effect.catchAll(warmFailed))
      })

    const warmFailed = (error: ProviderError) =>
      Effect.logWarning("claude CLI warm start failed; the first turn starts it").pipe(
        Effect.annotateLogs({ error: error.message })
      )

    // Nothing is spent before the first turn.
    const budgetUsd = remainingBudget(options.maxBudgetUsd, 0)
    if (options.prewarm === true && budgetUsd !== 0) {
      // The first turn's session: the one to resume (and fork), if any.
      const resume = Option.fromNullable(options.resume)
      yield* liveCli(resume, options.forkSession === true, undefined, budgetUsd).pipe(Effect.catchAll(warmFailed))
    }

    return yield* makeSessionClient({
      provider,
      model: options.model,
      run: keepAlive ? liveRun : run,
      setTools: keepAlive ? liveSetTools : setTools,
      media: Media.claudeCode(provider),
      resume: options.resume,
      forkSession: options.forkSession,
      maxBudgetUsd: options.maxBudgetUsd
    })
  })

/**
 * A ChatClient layer on the `claude` CLI; needs a Subprocess and a SecretFile implementation
 * (use {@link layerNode} for the Node ones). Calls fail with `ProviderError`: `kind: "config"`
 * with an install hint when the binary is missing, with the upgrade command when the CLI is older
 * than {@link MinimumCliVersion} (or lacks a feature an option needs), or when the tool server did not connect,
 * `"timeout"` after `requestTimeout`, `"auth"` (saying how to log in) for an invalid key or a CLI
 * that is not logged in, `"http"` (with `status`) when the CLI reports an API error, `"process"`
 * for any other failed run (with the exit code and stderr when the CLI died before starting).
 * A run's tool calls end with the run: whatever ended it, the bridge closes the run's sessions and
 * interrupts its handlers (see `McpBridgeService.openRun`). They also fail with `PermissionDeniedError` when the CLI
 * refused tool calls (unless `allowPermissionDenials`), `StructuredOutputError` from `ask`,
 * `EmptyPromptError` and `InvalidToolsError`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ChatClient, ClaudeLocal } from "effect-chat-bridge"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   return yield* client.chat("Say hello in one word")
 * }).pipe(Effect.provide(ClaudeLocal.layerNode({ model: "sonnet" })))
 * ```
 */
export const layer = (
  options: Options = {}
): Layer.Layer<ChatClient | ClaudeSession, never, Subprocess | SecretFile> =>
  Layer.scopedContext(Effect.map(make(options), sessionContext))

/** {@link layer} with the Node implementations of Subprocess and SecretFile. */
export const layerNode = (options: Options = {}): Layer.Layer<ChatClient | ClaudeSession> =>
  layer(options).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(NodeSecretFile.layer()))

/**
 * {@link layerNode} configured from the environment: `CLAUDE_BINARY`, `CLAUDE_MODEL`,
 * `CLAUDE_SYSTEM_PROMPT`, `CLAUDE_REQUEST_TIMEOUT` (a duration such as `5 minutes`),
 * `CLAUDE_PERMISSION_MODE`, `CLAUDE_CWD`. Options given here win over the environment.
 */
export const layerConfig = (
  overrides: Options = {}
): Layer.Layer<ChatClient | ClaudeSession, ConfigError.ConfigError> =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const opt = (name: string) => Config.option(Config.string(name)).pipe(Effect.map(Option.getOrUndefined))
      const timeout = yield* Config.option(Config.duration("CLAUDE_REQUEST_TIMEOUT"))
      const permissionMode = yield* Config.option(
        Config.literal("acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan", "default")(
          "CLAUDE_PERMISSION_MODE"
        )
      )
      return layerNode({
        binary: yield* opt("CLAUDE_BINARY"),
        model: yield* opt("CLAUDE_MODEL"),
        systemPrompt: yield* opt("CLAUDE_SYSTEM_PROMPT"),
        cwd: yield* opt("CLAUDE_CWD"),
        requestTimeout: Option.getOrUndefined(timeout),
        permissionMode: Option.getOrUndefined(permissionMode),
        ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined))
      })
    })
  )
