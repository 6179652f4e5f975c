/**
 * The locally installed `claude` CLI as a ChatClient. Each turn runs
 * `claude -p --output-format stream-json --verbose` (the prompt on stdin); conversations continue
 * with `--resume`. Your in-process tools reach the CLI through a loopback MCP bridge
 * (`McpBridge`) started on the first non-empty `setTools`; its bearer token travels only in a
 * 0600 config file that exists for the duration of one run. Built-in Claude Code tools are limited
 * by the registry policy (`ToolPolicy`), resolved for a headless session.
 *
 * The prompt goes on stdin rather than after `-p`: a prompt starting with `-` would be read as a
 * flag, a variadic flag such as `--disallowedTools` could swallow it, and stdin keeps it out of
 * `ps` and of the logged argv.
 *
 * With `keepAlive` (or `prewarm`) one CLI per conversation reads its turns as stream-json user
 * messages instead (`internal/claudeLiveCli.ts`); its config file lives as long as it does.
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
import * as LiveCli from "../internal/claudeLiveCli.js"
import {
  bounded,
  interpretRun,
  makeSessionClient,
  type RunInput,
  serverStatus,
  toolServerFailure
} from "../internal/claudeSession.js"
import { makeEventTranslator, parseRun, toChatEvent } from "../internal/claudeStreamJson.js"
import type { Emit } from "../internal/loopClient.js"
import * as ClaudeCodeCatalog from "../registry/ClaudeCodeCatalog.js"
import type * as Registry from "../registry/Registry.js"
import * as ToolPolicy from "../registry/ToolPolicy.js"
import { ChatClient, type ChatClientService, ProviderError } from "../services/ChatClient.js"
import * as Pool from "../services/ClaudeProcessPool.js"
import { type McpBridgeService, renderMcpConfig } from "../services/McpBridge.js"
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
  /** Condition values, such as `workspace-has-git` (see `detectConditions`); missing counts as false. */
  readonly conditions?: Readonly<Record<string, boolean>>
}

/** Options of {@link make} and {@link layer}; every field is optional. */
export interface Options {
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
  /** Changes to the inherited environment (`undefined` removes a variable). */
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
   * Keep one CLI per conversation alive across turns (`--input-format stream-json`, each turn a
   * user message on its stdin) instead of a fresh `claude -p --resume` per turn. Default `false`.
   * Later turns skip the CLI's start-up (about 0.9 s on a fast machine; see the README's numbers).
   * The process is restarted, resuming the session, after a failed or interrupted turn, and when a
   * turn needs other flags than it was started with: `setTools` changing the tools, `ask` (its
   * `--json-schema`), a chat after an `ask`. It lives in the client's scope, as does its MCP config
   * file.
   */
  readonly keepAlive?: boolean | undefined
  /**
   * Start the kept-alive CLI when the client is built, so that the first turn pays no start-up;
   * implies `keepAlive`. Default `false`. A `setTools` that changes the tools restarts it right
   * away (not at the next turn), so the warm start survives the usual build → setTools → chat.
   */
  readonly prewarm?: boolean | undefined
}

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
  /**
   * A kept-alive CLI: prompts come as stream-json user messages on stdin, with partial messages
   * always on (chat and chatStream turns share the process).
   */
  readonly streamInput?: boolean | undefined
}

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
  ...Option.match(turn.sessionId, { onNone: () => [], onSome: (id) => ["--resume", id] }),
  // Always strict: never load a stray .mcp.json from the working directory.
  "--strict-mcp-config",
  ...(turn.mcpConfigPath === undefined ? [] : ["--mcp-config", turn.mcpConfigPath]),
  ...ToolPolicy.toCliFlags(turn.policy),
  ...(turn.jsonSchema === undefined ? [] : ["--json-schema", turn.jsonSchema])
]

/**
 * Builds a ChatClient on the `claude` CLI. The bridge (if tools are set) lives in the scope of
 * `make`, and is closed with it.
 */
export const make = (
  options: Options = {}
): Effect.Effect<ChatClientService, never, Subprocess | SecretFile | Scope.Scope> =>
  Effect.gen(function*() {
    const subprocess = yield* Subprocess
    const secretFile = yield* SecretFile
    const scope = yield* Effect.scope
    const binary = options.binary ?? "claude"
    const serverName = options.serverName ?? "gtb"
    const registry = options.toolPolicy?.registry ?? ClaudeCodeCatalog.registry
    const agent = { disabledTools: options.toolPolicy?.disabledTools ?? [] }
    const conditions = options.toolPolicy?.conditions ?? {}
    const timeout = options.requestTimeout ?? DefaultRequestTimeout

    const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
    const bridge = yield* Ref.make(Option.none<McpBridgeService>())

    /**
     * Runs the CLI with partial messages on, reporting text and bridge tool calls as they happen.
     * A bridge the CLI could not connect to stops the run at the init line.
     */
    const streamRun = (runOptions: RunOptions, emit: Emit, mounted: boolean) =>
      Effect.gen(function*() {
        const lines: Array<string> = []
        const translate = makeEventTranslator(`mcp__${serverName}__`)
        const outcome = yield* subprocess.stream({
          ...runOptions,
          args: [...runOptions.args, "--include-partial-messages"]
        })
          .pipe(
            Stream.runForEach((line) =>
              Effect.gen(function*() {
                lines.push(line)
                if (mounted && lines.length === 1) {
                  const init = parseRun(line).init
                  const status = serverStatus(init, serverName)
                  if (init !== undefined && status !== "connected") {
                    return yield* toolServerFailure(provider, serverName, status)
                  }
                }
                for (const event of translate(line)) yield* emit(toChatEvent(event))
              })
            ),
            Effect.as({ exitCode: 0, stderr: "" }),
            Effect.catchTag(
              "SubprocessExitError",
              (e) => Effect.succeed({ exitCode: e.exitCode, stderr: e.stderrTail })
            ),
            Effect.mapError((e) => (e._tag === "ProviderError" ? e : fromSubprocess(binary)(e)))
          )
        return { ...outcome, stdout: lines.join("\n") }
      })

    const run = (input: RunInput) =>
      Effect.scoped(Effect.gen(function*() {
        const toolSet = yield* Ref.get(tools)
        const running = yield* Ref.get(bridge)
        const serving = toolSet.tools.length > 0 && Option.isSome(running)
        const policy = ToolPolicy.resolveValidated(registry, agent, {
          conditions,
          headless: true,
          ...(serving ? { mcpServers: [serverName] } : {})
        })
        const mounted = serving && policy.mountedServers.includes(serverName)
        const mcpConfigPath = mounted && Option.isSome(running)
          ? yield* secretFile.writeScoped(renderMcpConfig(running.value.mcpConfig)).pipe(
            Effect.mapError((e) =>
              new ProviderError({ provider, kind: "config", message: e.message, retryable: false })
            )
          )
          : undefined
        const args = buildArgs(options, {
          sessionId: input.sessionId,
          mcpConfigPath,
          policy,
          jsonSchema: input.responseFormat === undefined ? undefined : JSON.stringify(input.responseFormat.schema)
        })
        const runOptions = {
          command: binary,
          args,
          stdin: input.prompt,
          timeout,
          ...(options.env === undefined ? {} : { env: options.env }),
          ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
          ...(options.killGrace === undefined ? {} : { killGrace: options.killGrace })
        }
        const result = input.emit === undefined
          ? yield* subprocess.run({ ...runOptions, allowNonZeroExit: true }).pipe(
            Effect.mapError(fromSubprocess(binary))
          )
          : yield* streamRun(runOptions, input.emit, mounted)
        const parsed = parseRun(result.stdout)
        return yield* interpretRun({
          provider,
          serverName,
          mounted,
          init: parsed.init,
          result: parsed.result,
          exitCode: result.exitCode,
          allowPermissionDenials: options.allowPermissionDenials === true,
          recordResult: input.recordResult,
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
        })
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

    // keepAlive: one CLI per conversation, replaced when a turn needs other flags (its key).
    const keepAlive = options.keepAlive === true || options.prewarm === true
    const slot = LiveCli.makeSlot(subprocess, scope, yield* Effect.serviceOption(Pool.ClaudeProcessPool))

    /** The live CLI for a turn with `jsonSchema` under the current tools, started if need be. */
    const liveCli = (sessionId: Option.Option<string>, jsonSchema: string | undefined) =>
      Effect.gen(function*() {
        const toolSet = yield* Ref.get(tools)
        const running = yield* Ref.get(bridge)
        const serving = toolSet.tools.length > 0 && Option.isSome(running)
        const policy = ToolPolicy.resolveValidated(registry, agent, {
          conditions,
          headless: true,
          ...(serving ? { mcpServers: [serverName] } : {})
        })
        const mounted = serving && policy.mountedServers.includes(serverName)
        const turn = { sessionId: Option.none<string>(), policy, jsonSchema, streamInput: true }
        // Everything the process is started with but the session; the bridge's port and token
        // are the client's, so its tools stand for the config file.
        const key = JSON.stringify([
          buildArgs(options, { ...turn, mcpConfigPath: mounted ? "<mcp-config>" : undefined }),
          mounted ? toolSet.tools.map((t) => [t.name, t.description, t.inputSchema]) : [],
          options.env ?? {},
          options.cwd ?? ""
        ])
        const cli = yield* slot.use(key, sessionId, (resume) =>
          Effect.gen(function*() {
            // In the process's scope: the file lives as long as the process.
            const mcpConfigPath = mounted && Option.isSome(running)
              ? yield* secretFile.writeScoped(renderMcpConfig(running.value.mcpConfig)).pipe(
                Effect.mapError((e) =>
                  new ProviderError({ provider, kind: "config", message: e.message, retryable: false })
                )
              )
              : undefined
            return {
              command: binary,
              args: buildArgs(options, { ...turn, sessionId: resume, mcpConfigPath }),
              ...(options.env === undefined ? {} : { env: options.env }),
              ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
              ...(options.killGrace === undefined ? {} : { killGrace: options.killGrace })
            }
          })).pipe(Effect.catchTag("ProcessPoolTimeoutError", (e) => Effect.fail(Pool.toProviderError(provider)(e))))
        return { cli, mounted }
      })

    /** A turn on the live CLI; any failure or interruption stops it (no half-read turn survives). */
    const liveRun = (input: RunInput) =>
      Effect.gen(function*() {
        const jsonSchema = input.responseFormat === undefined ? undefined : JSON.stringify(input.responseFormat.schema)
        const { cli, mounted } = yield* liveCli(input.sessionId, jsonSchema)
        const translate = makeEventTranslator(`mcp__${serverName}__`)
        let checked = !mounted
        const output = yield* cli.turn(input.prompt, (line) =>
          Effect.gen(function*() {
            if (!checked) {
              // The CLI prints an init line per turn: a bridge it could not reach stops the turn.
              const init = parseRun(line).init
              checked = init !== undefined
              const status = serverStatus(init, serverName)
              if (init !== undefined && status !== "connected") {
                return yield* toolServerFailure(provider, serverName, status)
              }
            }
            if (input.emit !== undefined) { for (const event of translate(line)) yield* input.emit(toChatEvent(event)) }
          })).pipe(
            Effect.timeoutFail({
              duration: timeout,
              onTimeout: () =>
                new ProviderError({
                  provider,
                  kind: "timeout",
                  message: `The claude CLI did not finish the turn within ${Duration.format(Duration.decode(timeout))}`,
                  retryable: true
                })
            })
          )
        const parsed = parseRun(output.lines.join("\n"))
        const ended = output.ended
        return yield* interpretRun({
          provider,
          serverName,
          mounted,
          init: parsed.init,
          result: parsed.result,
          exitCode: ended?.exitCode ?? 0,
          allowPermissionDenials: options.allowPermissionDenials === true,
          recordResult: input.recordResult,
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
        })
      }).pipe(Effect.onError(() => slot.drop))

    const liveSetTools = (set: Tool.ToolSet) =>
      Effect.gen(function*() {
        yield* setTools(set)
        const current = slot.current()
        // A warm start stays warm: a process started with the old tools is replaced now.
        if (options.prewarm === true && current !== undefined) {
          yield* liveCli(current.sessionId(), undefined).pipe(Effect.catchAll(warmFailed))
        }
      })

    const warmFailed = (error: ProviderError) =>
      Effect.logWarning("claude CLI warm start failed; the first turn starts it").pipe(
        Effect.annotateLogs({ error: error.message })
      )

    if (options.prewarm === true) yield* liveCli(Option.none(), undefined).pipe(Effect.catchAll(warmFailed))

    return yield* makeSessionClient({
      provider,
      run: keepAlive ? liveRun : run,
      setTools: keepAlive ? liveSetTools : setTools
    })
  })

/**
 * A ChatClient layer on the `claude` CLI; needs a Subprocess and a SecretFile implementation
 * (use {@link layerNode} for the Node ones). Calls fail with `ProviderError`: `kind: "config"`
 * with an install hint when the binary is missing or when the tool server did not connect,
 * `"timeout"` after `requestTimeout`, `"http"` (with `status`) when the CLI reports an API error,
 * `"process"` for any other failed run. They also fail with `PermissionDeniedError` when the CLI
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
export const layer = (options: Options = {}): Layer.Layer<ChatClient, never, Subprocess | SecretFile> =>
  Layer.scoped(ChatClient, make(options))

/** {@link layer} with the Node implementations of Subprocess and SecretFile. */
export const layerNode = (options: Options = {}): Layer.Layer<ChatClient> =>
  layer(options).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(NodeSecretFile.layer()))

/**
 * {@link layerNode} configured from the environment: `CLAUDE_BINARY`, `CLAUDE_MODEL`,
 * `CLAUDE_SYSTEM_PROMPT`, `CLAUDE_REQUEST_TIMEOUT` (a duration such as `5 minutes`),
 * `CLAUDE_PERMISSION_MODE`, `CLAUDE_CWD`. Options given here win over the environment.
 */
export const layerConfig = (overrides: Options = {}): Layer.Layer<ChatClient, ConfigError.ConfigError> =>
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
