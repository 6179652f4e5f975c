/**
 * The locally installed `claude` CLI as a ChatClient. Each turn runs
 * `claude -p --output-format stream-json --verbose` (the prompt on stdin); conversations continue
 * with `--resume`. Your in-process tools reach the CLI through a loopback MCP bridge
 * (`McpBridge`) started on the first non-empty `setTools`; its bearer token travels only in a
 * 0600 config file that exists for the duration of one run. Built-in Claude Code tools are limited
 * by the registry policy (`ToolPolicy`), resolved for a headless session.
 *
 * **Details**
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
 * by `internal/claude/userMessage.ts`), marked `client_composed` so the CLI passes the text to the
 * model verbatim: no `@file` reads, no slash commands (`trustedPrompts` opts out). Images and
 * PDFs (`Content` parts) are image/document blocks in it (base64 only, Messages API limits); a
 * tool's images reach the model as MCP image content.
 *
 * With `keepAlive` (or `prewarm`) one CLI per conversation reads its turns as stream-json user
 * messages instead (`internal/claudeLocal/liveCli.ts`); what a run holds (its settings and MCP config
 * files, its bridge credential) then lives as long as that process does.
 *
 * @summary The locally installed `claude` CLI as a `ChatClient`, your tools served over a loopback MCP bridge.
 * @group Chat providers
 * @since 0.1.0
 * @module
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Media from "../internal/chat/media.ts"
import * as Approvals from "../internal/claude/approvals.ts"
import * as CliVersion from "../internal/claude/cliVersion.ts"
import { liveSessionContext, makeSessionClient, replayOf, type SessionClient } from "../internal/claude/conversation.ts"
import * as ClaudeEnv from "../internal/claude/envConfig.ts"
import * as SessionFile from "../internal/claude/sessionFile.ts"
import { makeTranscripts } from "../internal/claude/transcripts.ts"
import * as Args from "../internal/claudeLocal/args.ts"
import * as Controls from "../internal/claudeLocal/controls.ts"
import { makeLive } from "../internal/claudeLocal/live.ts"
import * as LiveCli from "../internal/claudeLocal/liveCli.ts"
import type { Options } from "../internal/claudeLocal/options.ts"
import * as Plan from "../internal/claudeLocal/plan.ts"
import { freshRun } from "../internal/claudeLocal/run.ts"
import * as ToolPolicy from "../registry/ToolPolicy.ts"
import type { ChatClient, ProviderError } from "../services/ChatClient.ts"
import { ClaudeApprovals, ClaudeApprovalStore, makeMemory as approvalsInMemory } from "../services/ClaudeApprovals.ts"
import type { ClaudeSession } from "../services/ClaudeCodeOptions.ts"
import type { ClaudeLive } from "../services/ClaudeLive.ts"
import * as Pool from "../services/ClaudeProcessPool.ts"
import { ClaudeSessionStore } from "../services/ClaudeSessionStore.ts"
import type { SecretFile } from "../services/SecretFile.ts"
import type { Subprocess } from "../services/Subprocess.ts"
import type * as Tool from "../services/Tool.ts"
import * as NodeMcpBridge from "./NodeMcpBridge.ts"
import * as NodeSecretFile from "./NodeSecretFile.ts"
import * as NodeSubprocess from "./NodeSubprocess.ts"

export type { ToolPolicyInput } from "../internal/claude/options.ts"
export type { Options, PermissionMode } from "../internal/claudeLocal/options.ts"

/**
 * The oldest `claude` CLI this client runs on; an older one fails at the first turn (`ConfigurationError`).
 *
 * @category config
 * @since 1.0.0
 */
export const MinimumCliVersion: string = CliVersion.MinimumVersion

/**
 * The default bound on one CLI run (`requestTimeout`): 10 minutes.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultRequestTimeout: Duration.Duration = Plan.DefaultRequestTimeout

/**
 * What one turn asks of the CLI, besides the prompt (see {@link buildArgs}).
 *
 * @category models
 * @since 1.0.0
 */
export type Turn = Args.Turn

/**
 * The CLI arguments of one turn (the prompt goes on stdin).
 *
 * @category utils
 * @since 1.0.0
 */
export const buildArgs: (options: Options, turn: Turn) => ReadonlyArray<string> = Args.buildArgs

/**
 * Builds a ChatClient on the `claude` CLI. The bridge (if tools are set) lives in the scope of
 * `make`, and is closed with it.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: (
  options?: Options
) => Effect.Effect<SessionClient, never, Subprocess | SecretFile | Scope.Scope> = Effect.fn("ClaudeLocal.make")(
  function*(options: Options = {}) {
    const env = yield* Plan.makeEnv(options, NodeMcpBridge.make)
    const { scope, serverName } = env

    const setTools = Effect.fnUntraced(function*(set: Tool.ToolSet) {
      const running = yield* Ref.get(env.bridge)
      if (Option.isSome(running)) {
        yield* running.value.setTools(set.tools)
      } else if (set.tools.length > 0) {
        // Started once, in the client's scope: port and token stay stable across turns.
        const started = yield* NodeMcpBridge.make({ serverName, tools: set.tools }).pipe(
          Scope.provide(scope),
          Effect.mapError((e) => e._tag === "InvalidToolsError" ? e : Args.configError(e))
        )
        yield* Ref.set(env.bridge, Option.some(started))
      }
      yield* Ref.set(env.tools, set)
    })

    const keepAlive = options.keepAlive === true || options.prewarm === true
    // Settings changed through ClaudeLive: the next fresh run's flags, or told to each live CLI.
    const overrides: Controls.Overrides = {}
    const live = keepAlive
      ? makeLive(
        env,
        LiveCli.makeSlot(env.subprocess, scope, yield* Effect.serviceOption(Pool.ClaudeProcessPool)),
        setTools,
        overrides
      )
      : undefined
    const resume = options.snapshot?.sessionId ?? options.resume
    const transcripts = makeTranscripts({
      store: yield* Effect.serviceOption(ClaudeSessionStore),
      projectKey: options.projectKey,
      storeTimeout: options.storeTimeout,
      configDir: () => SessionFile.configDir(env.runEnv()),
      cwd: options.cwd,
      snapshot: options.snapshot
    })
    if (live !== undefined) {
      // A warm CLI resumes the session at once: its file must be there first.
      const restored = resume === undefined ? Effect.succeed(true) : transcripts.beforeRun(resume).pipe(
        Effect.as(true),
        Effect.catch((error) =>
          Effect.as(
            Effect.logWarning("claude CLI warm start skipped; the first turn restores the session").pipe(
              Effect.annotateLogs({ error: error.message })
            ),
            false
          )
        )
      )
      if (yield* restored) yield* live.prewarm
    }

    // The approvals resume a session in this client: its conversation, once built.
    const built: { client?: SessionClient } = {}
    const approvals = Approvals.makeApprovals({
      provider: Args.provider,
      gate: env.gate,
      store: Option.getOrElse(yield* Effect.serviceOption(ClaudeApprovalStore), () => undefined) ??
        (yield* approvalsInMemory),
      projectKey: options.projectKey ?? "default",
      toolPrefix: env.toolPrefix,
      ttl: options.approvalTtl,
      // A replay always runs on a fresh CLI: `--resume` with no user message.
      replay: (sessionId) =>
        built.client === undefined
          ? Effect.die(new Error("ClaudeLocal is not built yet"))
          : replayOf(built.client)(sessionId)
    })
    const client = yield* makeSessionClient({
      provider: Args.provider,
      model: options.model,
      run: (input) =>
        Effect.andThen(
          // Turns are serialised: a call a failed turn parked does not count against this one.
          Effect.sync(() => env.gate.deferred.clear()),
          live === undefined || input.replay === true
            ? Effect.suspend(() => freshRun(Controls.withOverrides(env, overrides))(input))
            : live.run(input)
        ),
      setTools: live?.setTools ?? setTools,
      media: Media.claudeCode(Args.provider),
      resume,
      forkSession: options.forkSession,
      maxBudgetUsd: options.maxBudgetUsd,
      transcripts,
      initialUsage: options.snapshot?.usage,
      toolPolicy: Effect.map(Plan.currentPolicy(env), ({ policy }) => policy),
      live: live?.controls ?? Controls.freshControls(overrides),
      onDeferred: approvals.onDeferred
    })
    built.client = client
    return Approvals.withApprovals(client, approvals.service)
  }
)

/** The context the layer provides: the client, its session, live controls and approvals. */
const clientContext = (client: SessionClient) =>
  Context.add(liveSessionContext(client), ClaudeApprovals, Approvals.approvalsOf(client))

/**
 * A ChatClient layer on the `claude` CLI; needs a Subprocess and a SecretFile implementation
 * (use {@link layerNode} for the Node ones). Calls fail with `ProviderError` whose reason is
 * `ConfigurationError` with an install hint when the binary is missing, with the upgrade command when the CLI is older
 * than {@link MinimumCliVersion} (or lacks a feature an option needs), or when the tool server did not connect,
 * `TimeoutError` after `requestTimeout`, `AuthenticationError` (saying how to log in) for an invalid key or a CLI
 * that is not logged in, the status's reason (`RateLimitError`, `InternalProviderError`, … with `status`) when the
 * CLI reports an API error, `ProcessError` for any other failed run (with the exit code and stderr when the CLI
 * died before starting).
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
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<ChatClient | ClaudeSession | ClaudeLive | ClaudeApprovals, ProviderError, Subprocess | SecretFile> =>
  // A refused tool policy fails the build rather than every turn.
  Layer.effectContext(Effect.map(Effect.tap(make(options), (client) => client.toolPolicy), clientContext))

/**
 * {@link layer} with the Node implementations of Subprocess and SecretFile.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerNode = (
  options: Options = {}
): Layer.Layer<ChatClient | ClaudeSession | ClaudeLive | ClaudeApprovals, ProviderError> =>
  layer(options).pipe(Layer.provide(NodeSubprocess.layer), Layer.provide(NodeSecretFile.layer()))

/**
 * The options read from the library's environment variables, all optional: `CLAUDE_BINARY`,
 * `CLAUDE_MODEL`, `CLAUDE_SYSTEM_PROMPT`, `CLAUDE_REQUEST_TIMEOUT` (a duration such as
 * `5 minutes`), `CLAUDE_PERMISSION_MODE` (a `ToolPolicy.PermissionMode`), `CLAUDE_CWD`. Options
 * given in `overrides` win over the variables.
 *
 * **Details**
 *
 * A `Config`, read through the current `ConfigProvider` (the process environment unless you
 * provide another): compose it, or pass it to {@link layerConfig}. A malformed value (a duration,
 * an unknown mode) is a `ConfigError` naming the variable.
 *
 * @since 2.0.0
 * @category config
 */
export const configFromEnv = (overrides: Options = {}): Config.Config<Options> =>
  Config.map(ClaudeEnv.claudeEnv(ToolPolicy.PermissionMode), (env): Options => ({
    ...ClaudeEnv.defined(env),
    ...ClaudeEnv.defined(overrides)
  }))

/**
 * {@link layerNode} with its options read from `Config` values: each option is a `Config` (or the
 * whole options one `Config`), as `PgClient.layerConfig` takes them.
 *
 * **When to use**
 *
 * Your application names its own configuration. For the library's `CLAUDE_*` variables use
 * {@link layerFromEnv}.
 *
 * **Gotchas**
 *
 * Options that are functions or services (`canUseTool`, `bridge`, `sessionStore`, …) cannot come
 * from a `ConfigProvider`: pass them as `Config.succeed(value)`.
 *
 * **Example** (Model and permission mode from your own variables)
 *
 * ```ts
 * import { Config } from "effect"
 * import { ClaudeLocal, ToolPolicy } from "effect-chat-bridge"
 *
 * const Live = ClaudeLocal.layerConfig({
 *   model: Config.String("AGENT_MODEL").pipe(Config.withDefault("sonnet")),
 *   permissionMode: Config.schema(ToolPolicy.PermissionMode, "AGENT_PERMISSION_MODE")
 * })
 * ```
 *
 * @since 2.0.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Wrap<Options>
): Layer.Layer<ChatClient | ClaudeSession | ClaudeLive | ClaudeApprovals, Config.ConfigError | ProviderError> =>
  Layer.unwrap(Effect.map(Config.unwrap(config), layerNode))

/**
 * {@link layerNode} configured from the environment ({@link configFromEnv}); options given here
 * win over the environment.
 *
 * @since 2.0.0
 * @category layers
 */
export const layerFromEnv = (
  overrides: Options = {}
): Layer.Layer<ChatClient | ClaudeSession | ClaudeLive | ClaudeApprovals, Config.ConfigError | ProviderError> =>
  layerConfig(configFromEnv(overrides))
