/**
 * Claude Code through the Claude Agent SDK as a ChatClient. Each turn is one SDK `query` (one CLI
 * process); conversations continue with `resume` of the session id. Your in-process tools are
 * served by an MCP server that lives in this process and talks to the CLI over the CLI's own
 * stdin/stdout control channel: no port, no bearer token, no config file. Built-in Claude Code
 * tools are limited by the registry policy (`ToolPolicy.toAgentSdkOptions`).
 *
 * **Details**
 *
 * The SDK (`@anthropic-ai/claude-agent-sdk`) is an optional peer dependency, imported when the
 * first turn runs; without it every call fails with a `ConfigurationError` ProviderError saying how to
 * install it. It ships the `claude` binary this provider runs by default.
 *
 * The tool policy is ClaudeLocal's (the CLI + loopback MCP bridge): every turn is headless, so
 * interactive tools (registry descriptors marked `interactive`) are removed from the model's tool
 * list unless the permission mode is `bypassPermissions`; with `bypassPermissions`, the SDK's
 * `PreToolUse` hook still denies them should the live mode change. Conditions are detected from
 * `cwd` unless given, and long opt-out lists go to a settings file. The CLI's environment is
 * explicit (the SDK replaces it): a filtered copy of this process's plus `env` (all of it with
 * `inheritEnv`), and no settings files are loaded unless `settingSources` says so.
 *
 * Multi-turn uses `resume` (a fresh CLI per turn) by default, which keeps each turn a
 * self-contained resource with a simple lifetime. With `keepAlive: true` the client keeps one CLI
 * alive across `chat`/`chatStream` turns instead, feeding each message through the SDK's streaming
 * input: later turns skip the CLI's start-up (about 20× faster against a local API, see the bench).
 * That CLI belongs to the client's scope; a failed or interrupted turn ends it, as do `setTools`
 * and `ask` (which needs a per-query output format and runs on a fresh CLI as usual), and the next
 * turn starts a new one resuming the session. With a `ClaudeProcessPool` that keeps `spares`, a
 * brand-new kept-alive conversation claims a CLI the SDK's `prewarm()` started ahead (its own tool
 * server handed over at the claim), so that its first turn skips the start-up too.
 *
 * With a `ClaudeSessionStore` in context, every query mirrors its session to the store through
 * the SDK's `sessionStore` (flush `batched`: a turn's entries are stored before its result), keyed
 * by `projectKey` rather than the cwd, and a resume reads the session from the store: a client
 * with an empty HOME, another cwd or on another machine continues it. A store that fails or does
 * not answer within `storeTimeout` fails the turn with a `SessionStoreError` (the answer kept);
 * what was not stored is sent again before the session's next entries and before a resume.
 *
 * A tool with `needsApproval` (or a `canUseTool` answering `defer`) parks its call: the turn fails
 * with `ApprovalRequired` and `ClaudeApprovals` (which the layer provides) decides it later, from
 * any process sharing the store. The deferring hook is an HTTP hook in a 0600 settings file,
 * served by a loopback bridge of the client (bearer token, 127.0.0.1) that also serves the tools
 * of a resumed approval through `--mcp-config`: the CLI replays a parked call before the SDK has
 * registered its callbacks and in-process tool server.
 *
 * A prompt with images or PDFs (`Content` parts) goes as an SDK user message with image/document
 * blocks (base64 only, Messages API limits); a tool's images reach the model as MCP image content.
 *
 * @summary Claude Code through the Claude Agent SDK as a `ChatClient`, your tools served in-process.
 * @group Chat providers
 * @since 0.1.0
 * @module
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Media from "../internal/chat/media.ts"
import * as Telemetry from "../internal/chat/telemetry.ts"
import * as Approvals from "../internal/claude/approvals.ts"
import type * as CliVersion from "../internal/claude/cliVersion.ts"
import { decide, mcpConfigEntry, permissionAnswer } from "../internal/claude/codeRun.ts"
import { liveSessionContext, makeSessionClient, replayOf, type SessionClient } from "../internal/claude/conversation.ts"
import * as ClaudeEnv from "../internal/claude/envConfig.ts"
import { agentEnvironment } from "../internal/claude/environment.ts"
import * as ProviderPolicy from "../internal/claude/providerPolicy.ts"
import { remainingBudget, type RunInput, type RunOutcome } from "../internal/claude/session.ts"
import * as SessionFile from "../internal/claude/sessionFile.ts"
import * as Stall from "../internal/claude/stall.ts"
import { makeTranscripts, type Transcripts } from "../internal/claude/transcripts.ts"
import * as UserMessage from "../internal/claude/userMessage.ts"
import * as AgentControls from "../internal/claudeAgent/controls.ts"
import { sdkHooks } from "../internal/claudeAgent/hooks.ts"
import * as KeepAlive from "../internal/claudeAgent/live.ts"
import type { Options } from "../internal/claudeAgent/options.ts"
import {
  type GateBridge,
  type QueryParams,
  type QuerySetup,
  readVersion,
  requestedServers,
  singleMessage,
  startQuery
} from "../internal/claudeAgent/query.ts"
import { type AgentSdkModule, loadAgentSdk, provider } from "../internal/claudeAgent/sdk.ts"
import * as AgentSpare from "../internal/claudeAgent/spare.ts"
import * as AgentStore from "../internal/claudeAgent/store.ts"
import { consume, interpret, type InterpretSetup, type TurnEnd } from "../internal/claudeAgent/turn.ts"
import * as ToolPolicy from "../registry/ToolPolicy.ts"
import { type ChatClient, type ChatError, ConfigurationError, ProviderError } from "../services/ChatClient.ts"
import { ClaudeApprovals, ClaudeApprovalStore, makeMemory as approvalsInMemory } from "../services/ClaudeApprovals.ts"
import type { ClaudeSession } from "../services/ClaudeCodeOptions.ts"
import { type ClaudeLive, isInterrupted } from "../services/ClaudeLive.ts"
import * as Pool from "../services/ClaudeProcessPool.ts"
import { ClaudeSessionStore, type ClaudeSessionStoreService } from "../services/ClaudeSessionStore.ts"
import * as Tool from "../services/Tool.ts"
import * as NodeMcpBridge from "./NodeMcpBridge.ts"
export type { ToolPolicyInput } from "../internal/claude/options.ts"
export type { Options, PermissionMode } from "../internal/claudeAgent/options.ts"

/**
 * The default bound on one turn (`requestTimeout`): 10 minutes.
 *
 * @category config
 * @since 1.0.0
 */
export const DefaultRequestTimeout = Duration.minutes(10)

/**
 * The SDK callback for `options.canUseTool`, run in the context of the fiber that starts the
 * query. The application's denials are recorded by tool use id (they are not failures).
 */
const permissionCallback = (
  options: Options,
  decidedDenials: Set<string>,
  waits: Stall.PermissionWaits
): Effect.Effect<AgentSdk.CanUseTool | undefined> =>
  Effect.map(Effect.context<never>(), (context): AgentSdk.CanUseTool | undefined => {
    const canUseTool = options.canUseTool
    if (canUseTool === undefined) return undefined
    const runPromise = Effect.runPromiseWith(context)
    return async (toolName, input, { toolUseID }) => {
      const request = { toolName, input, toolUseId: toolUseID }
      // A pending decision is not the run going silent.
      const decision = await runPromise(waits.around(decide(canUseTool, request)))
      if (decision._tag !== "Allow") decidedDenials.add(toolUseID)
      return permissionAnswer(request, decision)
    }
  })

/**
 * Refuses, before any CLI starts, a prompt an executable older than verbatim prompts would
 * interpret. The SDK's own binary marks messages verbatim; another one may be older, so its
 * `--version` is read once per client (on the first turn).
 */
const verbatimGate = (
  options: Options
): Effect.Effect<(input: UserMessage.Input) => Effect.Effect<void, ChatError>> => {
  const trusted = options.trustedPrompts === true
  const path = options.pathToClaudeCodeExecutable
  if (path === undefined || trusted) return Effect.succeed(() => Effect.void)
  return Effect.map(
    Effect.cached(readVersion(path, agentEnvironment(process.env, options.env, options.inheritEnv === true))),
    (version) => (input) =>
      Effect.flatMap(
        version,
        (cli: Option.Option<CliVersion.CliVersion>) =>
          Option.isNone(cli) ? Effect.void : UserMessage.requireVerbatim(provider, cli.value, input, trusted)
      )
  )
}

/** The Agent SDK module, imported on first use; a failure is not kept, so installing it later is enough. */
const sdkLoader = (specifier: string): Effect.Effect<AgentSdkModule, ProviderError> => {
  let loaded: AgentSdkModule | undefined
  return Effect.suspend(() =>
    loaded !== undefined ? Effect.succeed(loaded) : Effect.tap(loadAgentSdk(specifier), (sdk) =>
      Effect.sync(() => {
        loaded = sdk
      }))
  )
}

/** What every query of a client shares, and the pieces of it the client's turns use. */
const makeQuerySetup = Effect.fnUntraced(function*(options: Options) {
  const serverName = options.serverName ?? "gtb"
  const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
  const appServers: Record<string, AgentSdk.McpServerConfig> = {}
  for (const [name, server] of Object.entries(options.mcpServers ?? {})) {
    appServers[name] = mcpConfigEntry(server) as AgentSdk.McpServerConfig
  }
  const decidedDenials = new Set<string>()
  const permissionWaits = Stall.makePermissionWaits()
  const gate = Approvals.makeGate(
    options.canUseTool === undefined ? undefined : (request) => permissionWaits.around(options.canUseTool!(request)),
    decidedDenials
  )
  // Where the tool servers' calls find the turn they belong to (for their spans).
  const runSlot = Telemetry.makeRunSlot()
  const sessionStore = yield* Effect.serviceOption(ClaudeSessionStore)
  // Built before the client's CLIs: its finalizer runs after theirs, when their last entries are sent.
  const store = Option.isNone(sessionStore) ? undefined : yield* AgentStore.make(sessionStore.value, {
    projectKey: options.projectKey,
    storeTimeout: options.storeTimeout
  })
  const setup: QuerySetup = {
    options,
    serverName,
    policy: yield* ProviderPolicy.fromOptions(provider, options, {
      permissionMode: options.permissionMode ?? "default",
      servers: Object.keys(appServers)
    }),
    permissionMode: options.permissionMode ?? "default",
    grace: Duration.toMillis(options.killGrace ?? Duration.seconds(2)),
    sdk: sdkLoader(options.sdkSpecifier ?? "@anthropic-ai/claude-agent-sdk"),
    tools: Ref.get(tools),
    appServers,
    runSlot,
    canUseTool: permissionCallback(options, decidedDenials, permissionWaits),
    // Bound here, once: the hooks run in the layer's context, whichever turn they fire in.
    hooks: Effect.succeed(yield* sdkHooks(options.hooks, permissionWaits)),
    store,
    gate: yield* gateServer(serverName, gate, permissionWaits)
  }
  const timeout = Duration.fromInputUnsafe(options.requestTimeout ?? DefaultRequestTimeout)
  return { setup, serverName, timeout, tools, decidedDenials, permissionWaits, runSlot, sessionStore, store, gate }
})

/**
 * The approvals' gate served as an HTTP hook (the SDK's in-process hooks fire too late when a
 * parked call is replayed on resume): a bridge of the client's scope, on 127.0.0.1 behind its own
 * bearer token, serving only the gate, started by the first query whose tools `needsApproval`.
 */
const gateServer = Effect.fnUntraced(function*(
  serverName: string,
  gate: Approvals.Gate,
  waits: Stall.PermissionWaits
) {
  const scope = yield* Effect.scope
  const context = yield* Effect.context<never>()
  return yield* Effect.cached(
    NodeMcpBridge.make({
      // It serves a replay's tools under the tool server's name too (see `QueryParams.replay`).
      serverName,
      // A decision at work is the application deciding, not the run going silent.
      hooks: (name, input) =>
        name === Approvals.GateRoute
          ? waits.around(gate.hook(input)).pipe(Effect.provideContext(context))
          : Effect.fail(`No hook ${name}`)
    }).pipe(
      Scope.provide(scope),
      Effect.map((bridge): GateBridge => ({
        url: bridge.url.replace(/\/mcp$/, `/hooks/${Approvals.GateRoute}`),
        token: Redacted.value(bridge.token),
        bridge
      })),
      Effect.mapError((error) =>
        new ProviderError({
          provider,
          reason: new ConfigurationError({ message: `The approvals' hook server did not start: ${error.message}` })
        })
      )
    )
  )
})

/** The store step: the SDK mirrors to the store when there is one; the CLI's file is the rest. */
const agentTranscripts = (
  options: Options,
  sessionStore: Option.Option<ClaudeSessionStoreService>,
  store: AgentStore.AgentStore | undefined
) =>
  makeTranscripts({
    store: sessionStore,
    projectKey: options.projectKey,
    storeTimeout: options.storeTimeout,
    configDir: () => SessionFile.configDir(agentEnvironment(process.env, options.env, options.inheritEnv === true)),
    cwd: options.cwd,
    snapshot: options.snapshot,
    ...(store === undefined ? {} : { mirror: { flush: store.flush } })
  })

/**
 * `prewarm`: the warm CLI resumes at once, so an imported snapshot must be where it reads (the
 * store, or the local session file) first. A failure is the first turn's, which tries again.
 */
const warmStart = (options: Options, transcripts: Transcripts, warm: Effect.Effect<void>) =>
  Effect.andThen(
    options.snapshot === undefined ? Effect.void : transcripts.beforeRun(options.snapshot.sessionId).pipe(
      Effect.catch((error) =>
        Effect.logWarning("snapshot not restored before the warm start").pipe(
          Effect.annotateLogs({ error: error.message })
        )
      )
    ),
    warm
  )

/**
 * Builds a ChatClient on the Agent SDK. Every turn owns its CLI process and its tool server, and
 * releases both before it returns — with `keepAlive`, the kept-alive CLI and its tool server are
 * the client's until a turn fails or is interrupted, the tools change, an `ask` runs, or the scope
 * closes — so closing the scope of `make` leaves nothing behind.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: (options?: Options) => Effect.Effect<SessionClient, never, Scope.Scope> = Effect.fn(
  "ClaudeAgent.make"
)(function*(options: Options = {}) {
  const { decidedDenials, gate, permissionWaits, runSlot, serverName, sessionStore, setup, store, timeout, tools } =
    yield* makeQuerySetup(options)
  const keepAlive = options.keepAlive === true || options.prewarm === true
  const requireVerbatim = yield* verbatimGate(options)
  const controls = AgentControls.makeControls(keepAlive, {
    check: requireVerbatim,
    message: (input, delivery) => UserMessage.make(input, options.trustedPrompts !== true, delivery)
  })
  // Settings changed through ClaudeLive: every query started from now on is given them.
  const start = (params: QueryParams) => Effect.suspend(() => startQuery(controls.withOverrides(setup), params))
  // Turns in flight belong to the client's scope too: closing it interrupts them, and each
  // turn's finalizers end its CLI before the scope is closed.
  const turns = yield* FiberSet.make<RunOutcome, ChatError>()
  const userMessage = (input: RunInput, uuid?: UserMessage.Uuid) =>
    UserMessage.make(input, options.trustedPrompts !== true, { uuid })
  const reading: InterpretSetup = {
    serverName,
    allowPermissionDenials: options.allowPermissionDenials === true,
    decidedDenials
  }
  const read = (
    started: Parameters<typeof interpret>[2],
    emit: RunInput["emit"],
    untilResult: boolean,
    turnEnd?: TurnEnd
  ) =>
    consume({
      started,
      serverName,
      emit,
      untilResult,
      turnEnd,
      // A kept-alive turn: its query outlives an interrupted reading (see KeepAlive's polite stop).
      keepOnInterrupt: turnEnd !== undefined,
      timeout,
      stallTimeout: options.stallTimeout,
      partialMessages: true,
      permissionWaits,
      observe: gate.batches.observe
    })

  /** A turn on a query (and CLI) of its own, resuming the session. */
  const freshTurn = Effect.fnUntraced(function*(input: RunInput) {
    const started = yield* start({
      // A replay sends no message: the resumed CLI asks the gate for the parked call again.
      prompt: input.replay === true
        ? noMessage
        // A prompt with media is one SDK user message carrying image/document blocks.
        : input.parts === undefined
        ? input.prompt
        : singleMessage(userMessage(input)),
      resume: input.sessionId,
      fork: input.fork,
      responseFormat: input.responseFormat,
      // Partial messages let the stall watchdog tell a long answer from a silent run.
      partialMessages: true,
      budgetUsd: input.budgetUsd,
      replay: input.replay
    })
    return yield* interpret(reading, input, started, yield* read(started, input.emit, false))
  }, Effect.scoped)

  const resume = options.snapshot?.sessionId ?? options.resume
  const session: KeepAlive.SessionState = {
    last: Option.fromNullishOr(resume),
    fork: resume !== undefined && options.forkSession === true
  }
  const pool = yield* Effect.serviceOption(Pool.ClaudeProcessPool)
  const live = KeepAlive.make({
    applySettings: controls.applySettings,
    interrupted: AgentControls.interruptedError(serverName),
    clientScope: yield* Effect.scope,
    pool,
    spare: AgentSpare.claim(() => controls.withOverrides(setup), pool),
    session,
    start,
    consume: read,
    interpret: (input, started, transcript) => interpret(reading, input, started, transcript),
    userMessage
  })
  controls.attach(live)

  const turnOf = (input: RunInput) =>
    !keepAlive
      ? freshTurn(input)
      // A replay runs on a CLI of its own; the kept-alive one holds the session as it was.
      : input.replay === true
      ? Effect.andThen(live.drop, freshTurn(input))
      : input.responseFormat === undefined
      ? live.turn(input)
      // The output format is fixed per query: `ask` runs on its own CLI, after which the kept-alive
      // one would not know the answer; it restarts (resuming the session) on the next turn.
      : Effect.andThen(live.drop, freshTurn(input))

  // Refused before any CLI starts, and without dropping a warm one.
  const runTurn = (input: RunInput) =>
    Effect.andThen(input.replay === true ? Effect.void : requireVerbatim(input), turnOf(input)).pipe(
      (turn) => store === undefined ? turn : store.explain(input.sessionId)(turn),
      Effect.tap((outcome) =>
        Effect.andThen(
          Effect.sync(() => {
            if (outcome.sessionId !== undefined) session.last = Option.some(outcome.sessionId)
            session.fork = false
          }),
          // A kept-alive CLI holds a parked call as it was: the decision runs on a fresh one.
          outcome.deferred !== undefined && keepAlive ? live.drop : Effect.void
        )
      ),
      // An interrupted turn ran in the session too: the kept query continues it.
      Effect.tapError((error) =>
        Effect.sync(() => {
          if (!isInterrupted(error) || error.reason.sessionId === undefined) return
          session.last = Option.some(error.reason.sessionId)
          session.fork = false
        })
      )
    )

  // Each turn runs in a fiber of the client's scope: closing the scope ends turns in flight.
  const run = (input: RunInput) =>
    Effect.flatMap(
      // A kept-alive query's tool server outlives the turn that built it: each turn marks itself.
      // Turns are serialised: a call a failed turn parked does not count against this one.
      FiberSet.run(turns, runSlot.within(Effect.andThen(Effect.sync(() => gate.deferred.clear()), runTurn(input)))),
      (fiber) => Fiber.join(fiber).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
    )

  // Read at the start of each query: every query gets a fresh server built from this set; a
  // kept-alive query was built from the old one, so it ends.
  const setTools = (set: Tool.ToolSet, budgetUsd: number | undefined) =>
    Effect.andThen(Ref.set(tools, set), live.drop).pipe(
      Effect.andThen(options.prewarm === true ? live.warm(budgetUsd) : Effect.void)
    )

  const transcripts = agentTranscripts(options, sessionStore, store)
  // Nothing is spent before the first turn.
  if (options.prewarm === true) {
    yield* warmStart(options, transcripts, live.warm(remainingBudget(options.maxBudgetUsd, 0)))
  }

  // The approvals resume a session in this client: its conversation, once built.
  const built: { client?: SessionClient } = {}
  const approvals = Approvals.makeApprovals({
    provider,
    gate,
    store: Option.getOrUndefined(yield* Effect.serviceOption(ClaudeApprovalStore)) ?? (yield* approvalsInMemory),
    projectKey: options.projectKey ?? "default",
    toolPrefix: `mcp__${serverName}__`,
    ttl: options.approvalTtl,
    replay: (sessionId) =>
      built.client === undefined
        ? Effect.die(new Error("ClaudeAgent is not built yet"))
        : replayOf(built.client)(sessionId)
  })
  const client = yield* makeSessionClient({
    provider,
    model: options.model,
    run,
    setTools,
    media: Media.claudeCode(provider),
    resume,
    forkSession: options.forkSession,
    maxBudgetUsd: options.maxBudgetUsd,
    transcripts,
    initialUsage: options.snapshot?.usage,
    toolPolicy: Effect.flatMap(setup.tools, (toolSet) => setup.policy.resolve(requestedServers(setup, toolSet))),
    live: controls.service,
    onDeferred: approvals.onDeferred
  })
  built.client = client
  return Approvals.withApprovals(client, approvals.service)
})

/** The context the layer provides: the client, its session, live controls and approvals. */
const clientContext = (client: SessionClient) =>
  Context.add(liveSessionContext(client), ClaudeApprovals, Approvals.approvalsOf(client))

/** A streaming prompt with no message: the resumed session goes on from where it stopped. */
const noMessage: AsyncIterable<AgentSdk.SDKUserMessage> = {
  async *[Symbol.asyncIterator]() {}
}

/**
 * A ChatClient layer on the Claude Agent SDK. The SDK is loaded on the first call; calls fail with
 * `ProviderError` (reason `ConfigurationError` when the SDK or the executable is missing or the tool server
 * did not connect, `TimeoutError` after `requestTimeout`, `AuthenticationError` saying how to log in when the CLI
 * is not logged in or its key is refused, the status's reason with `status` for an API error,
 * `ProcessError` for any other failed turn, `ApprovalRequired` for a call parked for an approval),
 * `PermissionDeniedError` (unless `allowPermissionDenials`), `StructuredOutputError`,
 * `EmptyPromptError` and `InvalidToolsError`. It also provides `ClaudeApprovals` for this client's
 * sessions.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ChatClient } from "effect-chat-bridge"
 * import { ClaudeAgent } from "effect-chat-bridge/claude-agent"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   return yield* client.chat("Summarise README.md in one line")
 * }).pipe(Effect.provide(ClaudeAgent.layer({ cwd: process.cwd() })))
 * ```
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = (
  options: Options = {}
): Layer.Layer<ChatClient | ClaudeSession | ClaudeLive | ClaudeApprovals, ProviderError> =>
  // A refused tool policy fails the build rather than every turn.
  Layer.effectContext(Effect.map(Effect.tap(make(options), (client) => client.toolPolicy), clientContext))

/**
 * The options read from the library's environment variables, all optional: `CLAUDE_BINARY` (the
 * executable), `CLAUDE_MODEL`, `CLAUDE_SYSTEM_PROMPT`, `CLAUDE_REQUEST_TIMEOUT` (a duration such
 * as `5 minutes`), `CLAUDE_PERMISSION_MODE` (a `ToolPolicy.AgentSdkPermissionMode`: the CLI's
 * `manual` is not one), `CLAUDE_CWD`. Options given in `overrides` win over the variables.
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
  Config.map(ClaudeEnv.claudeEnv(ToolPolicy.AgentSdkPermissionMode), ({ binary, ...env }): Options => ({
    ...ClaudeEnv.defined({ ...env, pathToClaudeCodeExecutable: binary }),
    ...ClaudeEnv.defined(overrides)
  }))

/**
 * {@link layer} with its options read from `Config` values: each option is a `Config` (or the
 * whole options one `Config`), as `PgClient.layerConfig` takes them.
 *
 * **When to use**
 *
 * Your application names its own configuration. For the library's `CLAUDE_*` variables use
 * {@link layerFromEnv}.
 *
 * **Gotchas**
 *
 * Options that are functions or services (`canUseTool`, `sessionStore`, `extraOptions` holding
 * callbacks, …) cannot come from a `ConfigProvider`: pass them as `Config.succeed(value)`.
 *
 * **Example** (Model and working directory from your own variables)
 *
 * ```ts
 * import { Config } from "effect"
 * import { ClaudeAgent } from "effect-chat-bridge/claude-agent"
 *
 * const Live = ClaudeAgent.layerConfig({
 *   model: Config.String("AGENT_MODEL").pipe(Config.withDefault("sonnet")),
 *   cwd: Config.String("AGENT_WORKSPACE")
 * })
 * ```
 *
 * @since 2.0.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Wrap<Options>
): Layer.Layer<ChatClient | ClaudeSession | ClaudeLive | ClaudeApprovals, Config.ConfigError | ProviderError> =>
  Layer.unwrap(Effect.map(Config.unwrap(config), layer))

/**
 * {@link layer} configured from the environment ({@link configFromEnv}); options given here win
 * over the environment.
 *
 * @since 2.0.0
 * @category layers
 */
export const layerFromEnv = (
  overrides: Options = {}
): Layer.Layer<ChatClient | ClaudeSession | ClaudeLive | ClaudeApprovals, Config.ConfigError | ProviderError> =>
  layerConfig(configFromEnv(overrides))
