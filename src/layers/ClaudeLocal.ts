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
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { makeEventTranslator, parseRun } from "../internal/claudeStreamJson.js"
import { decodeAnswer, type Emit, requireText, responseFormatFor, streamOf } from "../internal/loopClient.js"
import * as ClaudeCodeCatalog from "../registry/ClaudeCodeCatalog.js"
import type * as Registry from "../registry/Registry.js"
import * as ToolPolicy from "../registry/ToolPolicy.js"
import {
  ChatClient,
  type ChatClientService,
  type ChatError,
  PermissionDeniedError,
  ProviderError,
  Usage
} from "../services/ChatClient.js"
import { type McpBridgeService, renderMcpConfig } from "../services/McpBridge.js"
import { SecretFile } from "../services/SecretFile.js"
import { TextDelta, ToolCallEnd, ToolCallStart, UsageEvent } from "../services/ChatEvent.js"
import { type RunOptions, Subprocess, type SubprocessError } from "../services/Subprocess.js"
import * as Tool from "../services/Tool.js"
import * as McpBridgeNode from "./McpBridgeNode.js"
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

export interface Options {
  /** The `claude` binary: a name on PATH or a path. Default `claude`. */
  readonly binary?: string | undefined
  readonly model?: string | undefined
  readonly systemPrompt?: string | undefined
  /** Bound on one whole CLI run (all of its model turns and tool calls). Default 10 minutes. */
  readonly requestTimeout?: Duration.DurationInput | undefined
  /** Working directory of the CLI. Default: the process's. */
  readonly cwd?: string | undefined
  /** Passed as `--permission-mode` when set. */
  readonly permissionMode?: PermissionMode | undefined
  /** Changes to the inherited environment (`undefined` removes a variable). */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
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
}

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

const bounded = (text: string, max = 2_000) => (text.length > max ? `${text.slice(0, max)}…` : text)

/** What one turn asks of the CLI, besides the prompt. */
export interface Turn {
  readonly sessionId: Option.Option<string>
  readonly mcpConfigPath: string | undefined
  readonly policy: ToolPolicy.ToolPolicy
  readonly jsonSchema: string | undefined
}

/** The CLI arguments of one turn (the prompt goes on stdin). */
export const buildArgs = (options: Options, turn: Turn): ReadonlyArray<string> => [
  "-p",
  "--output-format",
  "stream-json",
  "--verbose",
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

/** The outcome of one successful run. */
interface RunOutcome {
  readonly text: string
  readonly structured: unknown
  readonly sessionId: string | undefined
}

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

    const sessionId = yield* Ref.make(Option.none<string>())
    const pending = yield* Ref.make<ReadonlyArray<string>>([])
    const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
    const bridge = yield* Ref.make(Option.none<McpBridgeService>())
    const usage = yield* Ref.make(Usage.empty)
    const lock = yield* Effect.makeSemaphore(1)

    // The CLI reports `total_cost_usd` cumulatively over a resumed session (usage tokens are per
    // run), so a run's cost is the difference from the last total seen for that session.
    const sessionCosts = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
    const costOfRun = (session: string | undefined, total: number) =>
      Ref.modify(sessionCosts, (seen) => {
        if (session === undefined) return [total, seen] as const
        const before = seen.get(session) ?? 0
        return [Math.max(0, total - before), new Map(seen).set(session, Math.max(before, total))] as const
      })

    const bridgeFailure = (status: string | undefined) =>
      new ProviderError({
        provider,
        kind: "config",
        message: `The claude CLI could not use the tool bridge (MCP server ${serverName}: ${
          status ?? "not reported"
        }); refusing an answer given without tools`,
        retryable: false
      })

    /**
     * Runs the CLI with partial messages on, reporting text and bridge tool calls as they happen.
     * A bridge the CLI could not connect to stops the run at the init line.
     */
    const streamRun = (runOptions: RunOptions, emit: Emit, mounted: boolean) =>
      Effect.gen(function*() {
        const lines: Array<string> = []
        const translate = makeEventTranslator(`mcp__${serverName}__`)
        const outcome = yield* subprocess.stream({ ...runOptions, args: [...runOptions.args, "--include-partial-messages"] })
          .pipe(
            Stream.runForEach((line) =>
              Effect.gen(function*() {
                lines.push(line)
                if (mounted && lines.length === 1) {
                  const init = parseRun(line).init
                  const status = init?.mcp_servers.find((s) => s.name === serverName)?.status
                  if (init !== undefined && status !== "connected") return yield* bridgeFailure(status)
                }
                for (const event of translate(line)) {
                  yield* emit(
                    event._tag === "TextDelta"
                      ? new TextDelta(event)
                      : event._tag === "ToolCallStart"
                      ? new ToolCallStart(event)
                      : new ToolCallEnd(event)
                  )
                }
              })
            ),
            Effect.as({ exitCode: 0, stderr: "" }),
            Effect.catchTag("SubprocessExitError", (e) => Effect.succeed({ exitCode: e.exitCode, stderr: e.stderrTail })),
            Effect.mapError((e) => (e._tag === "ProviderError" ? e : fromSubprocess(binary)(e)))
          )
        return { ...outcome, stdout: lines.join("\n") }
      })

    const run = (prompt: string, jsonSchema: string | undefined, emit?: Emit) =>
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
            Effect.mapError((e) => new ProviderError({ provider, kind: "config", message: e.message, retryable: false }))
          )
          : undefined
        const args = buildArgs(options, {
          sessionId: yield* Ref.get(sessionId),
          mcpConfigPath,
          policy,
          jsonSchema
        })
        const runOptions = {
          command: binary,
          args,
          stdin: prompt,
          timeout,
          ...(options.env === undefined ? {} : { env: options.env }),
          ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
          ...(options.killGrace === undefined ? {} : { killGrace: options.killGrace })
        }
        const result = emit === undefined
          ? yield* subprocess.run({ ...runOptions, allowNonZeroExit: true }).pipe(Effect.mapError(fromSubprocess(binary)))
          : yield* streamRun(runOptions, emit, mounted)
        const parsed = parseRun(result.stdout)

        if (mounted) {
          const status = parsed.init?.mcp_servers.find((s) => s.name === serverName)?.status
          if (status !== "connected") return yield* bridgeFailure(status)
        }
        const line = parsed.result
        if (line === undefined) {
          const stderr = bounded(result.stderr.trim(), 1_000)
          return yield* new ProviderError({
            provider,
            kind: result.exitCode === 0 ? "decode" : "process",
            message: result.exitCode === 0
              ? `The claude CLI printed no result line${parsed.garbage.length > 0 ? ` (unparseable output: ${bounded(parsed.garbage[0]!, 200)})` : ""}`
              : `The claude CLI exited with code ${result.exitCode}${stderr === "" ? "" : `: ${stderr}`}`,
            retryable: false
          })
        }
        if (line.usage !== undefined || line.total_cost_usd != null) {
          const u = line.usage
          const cacheRead = u?.cache_read_input_tokens ?? 0
          const runUsage = Usage.of({
            inputTokens: (u?.input_tokens ?? 0) + (u?.cache_creation_input_tokens ?? 0) + cacheRead,
            outputTokens: u?.output_tokens ?? 0,
            cachedTokens: cacheRead,
            costUsd: line.total_cost_usd == null ? undefined : yield* costOfRun(line.session_id, line.total_cost_usd)
          })
          yield* Ref.update(usage, (total) => Usage.add(total, runUsage))
          if (emit !== undefined) yield* emit(new UsageEvent({ usage: runUsage }))
        }
        if (line.is_error || result.exitCode !== 0) {
          const status = line.api_error_status ?? undefined
          return yield* new ProviderError({
            provider,
            kind: status === undefined ? "process" : "http",
            ...(status === undefined ? {} : { status }),
            message: `The claude CLI reported an error (${line.subtype ?? `exit ${result.exitCode}`}): ${
              bounded(line.result)
            }`,
            retryable: status !== undefined && (status === 408 || status === 429 || status >= 500)
          })
        }
        if (line.permission_denials.length > 0) {
          const denied = line.permission_denials.map((d) => d.tool_name)
          if (options.allowPermissionDenials !== true) {
            return yield* new PermissionDeniedError({
              provider,
              tools: denied,
              answer: line.result,
              message: `The claude CLI denied ${denied.join(", ")}: allow them with the tool policy or the permission mode`
            })
          }
          yield* Effect.logWarning("claude CLI denied tool calls").pipe(Effect.annotateLogs({ tools: denied.join(",") }))
        }
        return { text: line.result, structured: line.structured_output, sessionId: line.session_id } satisfies RunOutcome
      }))

    /** One user turn: the `add` buffer and the session move only on success. */
    const converse = <A>(
      prompt: string,
      jsonSchema: string | undefined,
      finish: (outcome: RunOutcome) => Effect.Effect<A, ChatError>,
      emit?: Emit
    ) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const buffered = yield* Ref.get(pending)
        const outcome = yield* run([...buffered, prompt].join("\n\n"), jsonSchema, emit)
        const value = yield* finish(outcome)
        if (outcome.sessionId !== undefined) yield* Ref.set(sessionId, Option.some(outcome.sessionId))
        yield* Ref.set(pending, [])
        return value
      }))

    const add = Effect.fn("ChatClient.add")(function*(prompt: string) {
      yield* requireText("added message", prompt)
      yield* lock.withPermits(1)(Ref.update(pending, (p) => [...p, prompt]))
    })

    const chat = Effect.fn("ChatClient.chat")(function*(prompt: string) {
      yield* Effect.annotateCurrentSpan("chat.provider", provider)
      yield* requireText("prompt", prompt)
      return yield* converse(prompt, undefined, (outcome) => Effect.succeed(outcome.text))
    })

    const ask = Effect.fn("ChatClient.ask")(function*<A, I>(question: string, schema: Schema.Schema<A, I>) {
      yield* Effect.annotateCurrentSpan("chat.provider", provider)
      yield* requireText("question", question)
      const { format, wrapped } = yield* responseFormatFor(schema)
      return yield* converse(
        question,
        JSON.stringify(format.schema),
        (outcome) =>
          decodeAnswer(schema, {
            text: outcome.text,
            ...(outcome.structured === undefined ? {} : { structured: outcome.structured })
          }, wrapped)
      )
    })

    const setTools = Effect.fn("ChatClient.setTools")(function*<R>(list: ReadonlyArray<Tool.Tool<R>>) {
      const set = yield* Tool.capture(list)
      yield* lock.withPermits(1)(Effect.gen(function*() {
        const running = yield* Ref.get(bridge)
        if (Option.isSome(running)) {
          yield* running.value.setTools(set.tools)
        } else if (set.tools.length > 0) {
          // Started once, in the client's scope: port and token stay stable across turns.
          const started = yield* McpBridgeNode.make({ serverName, tools: set.tools }).pipe(
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
      }))
    })

    const chatStream = (prompt: string) =>
      streamOf((emit) =>
        Effect.zipRight(
          requireText("prompt", prompt),
          converse(prompt, undefined, (outcome) => Effect.succeed(outcome.text), emit)
        )
      ).pipe(Stream.withSpan("ChatClient.chatStream", { attributes: { "chat.provider": provider } }))

    return { add, chat, chatStream, ask, setTools, usage: Ref.get(usage) } satisfies ChatClientService
  })

/** A ChatClient layer on the `claude` CLI; needs a Subprocess and a SecretFile implementation. */
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
