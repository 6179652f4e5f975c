/**
 * One Agent SDK query of the ClaudeAgent provider: the options it is given (tool policy, tool
 * server, isolation, session), the executable checks made before it starts, and the prompt forms
 * it takes (a string, one message with media, or a streaming input kept open across turns).
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { execFile } from "node:child_process"
import { access, constants, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { basename, join } from "node:path"
import * as ToolPolicy from "../../registry/ToolPolicy.ts"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"
import type { McpBridgeService } from "../../services/McpBridge.ts"
import type * as Tool from "../../services/Tool.ts"
import type * as Telemetry from "../chat/telemetry.ts"
import * as Approvals from "../claude/approvals.ts"
import * as CliVersion from "../claude/cliVersion.ts"
import { sdkOptions } from "../claude/codeRun.ts"
import { agentEnvironment } from "../claude/environment.ts"
import * as Extensions from "../claude/extensions.ts"
import type * as ProviderPolicy from "../claude/providerPolicy.ts"
import type { RunInput } from "../claude/session.ts"
import type * as UserMessage from "../claude/userMessage.ts"
import type { Options } from "./options.ts"
import { type AgentSdkModule, makeToolServer, provider, reap, type SpawnedCli, spawner } from "./sdk.ts"
import type { AgentStore } from "./store.ts"

/** A started query: its messages, its abort switch, and its CLI once spawned. */
export interface Started {
  /**
   * The query's next message: the same pull until `take` consumes it, so a reader stopped while
   * waiting (an interrupted turn of a kept-alive query) leaves it to the next reader, in order.
   */
  readonly next: () => Promise<IteratorResult<AgentSdk.SDKMessage, void>>
  /** Consumes the message `next` gave. */
  readonly take: () => void
  readonly controller: AbortController
  readonly cli: () => SpawnedCli | undefined
  /** Whether the query serves the client's tools (so its init line must show the server connected). */
  readonly mounted: boolean
  /** The SDK's query: its live controls (`interrupt`, `setModel`, …) for `ClaudeLive`. */
  readonly controls: AgentSdk.Query
}

/** What one query is started with. */
export interface QueryParams {
  readonly prompt: string | AsyncIterable<AgentSdk.SDKUserMessage>
  readonly resume: Option.Option<string>
  readonly fork: boolean
  readonly responseFormat: RunInput["responseFormat"]
  readonly partialMessages: boolean
  /** What the query's CLI may spend (its `maxBudgetUsd`): what the conversation has left now. */
  readonly budgetUsd: number | undefined
  /**
   * A resumed session replaying a call parked for an approval: the CLI replays it before the SDK's
   * `initialize`, so the tools must come from an `--mcp-config` server, not the in-process one.
   */
  readonly replay?: boolean | undefined
}

/** What every query of one client shares. */
export interface QuerySetup {
  readonly options: Options
  readonly serverName: string
  /** The tool policy, checked when the client was built (see `providerPolicy.ts`). */
  readonly policy: ProviderPolicy.ProviderPolicy
  readonly permissionMode: ToolPolicy.AgentSdkPermissionMode
  /** Milliseconds the CLI gets to exit on its own before SIGTERM, then SIGKILL. */
  readonly grace: number
  /** The Agent SDK module (loaded once). */
  readonly sdk: Effect.Effect<AgentSdkModule, ProviderError>
  /** The tool set of now. */
  readonly tools: Effect.Effect<Tool.ToolSet>
  /** The application's MCP servers, as SDK configs. */
  readonly appServers: Readonly<Record<string, AgentSdk.McpServerConfig>>
  readonly runSlot: Telemetry.RunSlot
  /** The SDK callback for `options.canUseTool`, bound to the running fiber's context. */
  readonly canUseTool: Effect.Effect<AgentSdk.CanUseTool | undefined>
  /** The application's hooks (`options.hooks`) as SDK callbacks, bound to the layer's context. */
  readonly hooks: Effect.Effect<AgentSdk.Options["hooks"]>
  /** The session store's adapter, when a `ClaudeSessionStore` is provided: every query mirrors to it. */
  readonly store?: AgentStore | undefined
  /**
   * Where the approvals' gate is served (started on first use): the URL and bearer token of an
   * HTTP hook for the settings file of a query whose tools `needsApproval`.
   */
  readonly gate?: Effect.Effect<GateBridge, ProviderError> | undefined
}

/** The client's loopback bridge: the approvals' gate as an HTTP hook, and the tools of a replay. */
export interface GateBridge {
  /** The gate's hook URL. */
  readonly url: string
  /** The bridge's bearer token. */
  readonly token: string
  readonly bridge: McpBridgeService
}

/** The servers a query started now mounts: the tool server when it serves tools, and the application's. */
export const requestedServers = (setup: QuerySetup, toolSet: Tool.ToolSet): ReadonlyArray<string> => [
  ...(toolSet.tools.length > 0 ? [setup.serverName] : []),
  ...Object.keys(setup.appServers)
]

/** The streaming-input prompt of a kept-alive query: user messages pushed in as turns come. */
export const makeInbox = () => {
  const queue: Array<AgentSdk.SDKUserMessage> = []
  let wake: (() => void) | undefined
  let done = false
  // Waiting for every pushed message to be taken, and written, by the SDK.
  let idle: Array<() => void> = []
  const iterable: AsyncIterable<AgentSdk.SDKUserMessage> = {
    async *[Symbol.asyncIterator]() {
      while (!done) {
        if (queue.length === 0) {
          // The SDK asks for the next message once it has written the last one.
          for (const resolve of idle) resolve()
          idle = []
          await new Promise<void>((resolve) => (wake = resolve))
        }
        wake = undefined
        while (queue.length > 0) yield queue.shift()!
      }
    }
  }
  return {
    iterable,
    push: (message: UserMessage.UserMessage) => {
      queue.push(message)
      wake?.()
    },
    end: () => {
      done = true
      wake?.()
      for (const resolve of idle) resolve()
      idle = []
    },
    /**
     * Resolves once the SDK has taken every message pushed so far (and written it to the CLI):
     * a control request sent after it cannot overtake them.
     */
    flushed: (): Promise<void> =>
      queue.length === 0 && wake !== undefined || done
        ? Promise.resolve()
        : new Promise<void>((resolve) => idle.push(resolve))
  }
}

/** A streaming-input prompt of one user message, for a turn with media on a query of its own. */
export const singleMessage = (message: UserMessage.UserMessage): AsyncIterable<AgentSdk.SDKUserMessage> => ({
  async *[Symbol.asyncIterator]() {
    yield message
  }
})

/**
 * The version of a claude executable the application chose (`--version`); none when it prints
 * none or does not run (the run then reports why), as `ClaudeLocal` assumes the newest features.
 */
export const readVersion = (
  path: string,
  env: Record<string, string>
): Effect.Effect<Option.Option<CliVersion.CliVersion>> =>
  Effect.callback<Option.Option<CliVersion.CliVersion>>((resume) => {
    const child = execFile(
      path,
      ["--version"],
      { timeout: 30_000, env },
      (error, stdout) => resume(Effect.succeed(error === null ? CliVersion.parse(stdout) : Option.none()))
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const executableHint = (path: string) =>
  `The claude executable ${JSON.stringify(path)} is missing or not executable. Omit ` +
  "pathToClaudeCodeExecutable to use the binary shipped with @anthropic-ai/claude-agent-sdk, or install " +
  "Claude Code (https://docs.claude.com/claude-code) and pass its path."

const configError = (message: string) => new ProviderError({ provider, reason: new ConfigurationError({ message }) })

/** Fails with a `ConfigurationError` ProviderError saying what to do when `path` is not an executable. */
export const checkExecutable = (path: string): Effect.Effect<void, ProviderError> =>
  Effect.tryPromise({ try: () => access(path, constants.X_OK), catch: () => configError(executableHint(path)) })

/** A settings file (0600, in a fresh 0700 directory) that lives as long as the current scope. */
export const writeSettingsFile = (settings: unknown): Effect.Effect<string, ProviderError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const dir = await mkdtemp(join(tmpdir(), "ecb-settings-"))
        const file = join(dir, "settings.json")
        await writeFile(file, JSON.stringify(settings), { mode: 0o600 })
        return { dir, file }
      },
      catch: (e) =>
        configError(
          `Could not write the tool policy's settings file in ${tmpdir()} (set TMPDIR to a writable directory): ${
            e instanceof Error ? e.message : String(e)
          }`
        )
    }),
    ({ dir }) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ).pipe(Effect.map(({ file }) => file))

/**
 * The settings `hooks` sending the calls of the tools that `needsApproval` to the approvals' gate:
 * an HTTP hook from a settings file, which the CLI asks again when it replays a parked call on
 * resume (the SDK's in-process hooks are registered too late for that). None without such tools.
 */
const gateHooks = Effect.fnUntraced(function*(setup: QuerySetup, toolSet: Tool.ToolSet) {
  if (setup.gate === undefined || !toolSet.tools.some((tool) => tool.needsApproval === true)) return undefined
  const { token, url } = yield* setup.gate
  const entry = Approvals.gateSettings(`mcp__${setup.serverName}__`, toolSet.tools, url, token)
  return entry === undefined ? undefined : { PreToolUse: [entry] }
})

/**
 * The `--mcp-config` file of a replay: the client's bridge serving the tool set of now under the
 * tool server's name, behind a token of this query's own (revoked when its scope closes).
 */
const replayTools = Effect.fnUntraced(function*(setup: QuerySetup, toolSet: Tool.ToolSet) {
  if (setup.gate === undefined) return undefined
  const { bridge } = yield* setup.gate
  yield* bridge.setTools(toolSet.tools).pipe(Effect.mapError((e) => configError(e.message)))
  const run = yield* bridge.openRun
  const server = run.mcpConfig.mcpServers[bridge.serverName]
  return yield* writeSettingsFile({ mcpServers: { [setup.serverName]: server } })
})

/** The parts of a query's options decided per query, beside the client's own options. */
export interface PerQuery {
  readonly params: QueryParams
  /** The resolved tool policy (the typed extension options go through it). */
  readonly policy: ToolPolicy.ToolPolicy
  readonly fromPolicy: ToolPolicy.AgentSdkOptions<AgentSdk.McpServerConfig>
  readonly bounded: ToolPolicy.BoundedPolicy
  readonly settingsPath: string | undefined
  /** A replay's `--mcp-config` file (see `replayTools`). */
  readonly mcpConfigPath?: string | undefined
  readonly canUseTool: AgentSdk.CanUseTool | undefined
  /** The application's hooks as SDK callbacks. */
  readonly hooks?: AgentSdk.Options["hooks"]
  readonly controller: AbortController
  readonly onSpawn: (cli: SpawnedCli) => void
  /** The environment the SDK spawns the CLI with (after its own changes). */
  readonly onSpawnEnv?: ((env: Readonly<Record<string, string | undefined>>) => void) | undefined
  readonly store?: AgentStore | undefined
}

const withHooks = (hooks: SdkHooks | undefined) => (hooks === undefined ? {} : { hooks })

/** Hook matchers as the SDK's `hooks` option takes them. */
type SdkHooks = Partial<Record<AgentSdk.HookEvent, Array<AgentSdk.HookCallbackMatcher>>>

/**
 * Every source's hook matchers, event by event, the policy's first. None replaces another: the
 * CLI runs every matching hook of an event, and a `deny` from any of them blocks the call, so a
 * user's hook can add a denial but never lift the policy's.
 */
export const mergeHooks = (...sources: ReadonlyArray<AgentSdk.Options["hooks"]>): SdkHooks | undefined => {
  const merged: SdkHooks = {}
  for (const source of sources) {
    const entries = Object.entries(source ?? {}) as Array<
      [AgentSdk.HookEvent, ReadonlyArray<AgentSdk.HookCallbackMatcher> | undefined]
    >
    for (const [event, matchers] of entries) {
      if (matchers !== undefined && matchers.length > 0) (merged[event] ??= []).push(...matchers)
    }
  }
  return Object.keys(merged).length === 0 ? undefined : merged
}

/**
 * The SDK options of one query. The caller's `extraOptions` come first but for the MCP delivery
 * default, so the library's own (abort controller, spawner, environment, tool servers) win; hooks
 * are merged (see {@link mergeHooks}).
 */
export const queryOptions = (options: Options, q: PerQuery): AgentSdk.Options => {
  const { params } = q
  const { resume, responseFormat } = params
  return {
    // The application's MCP servers go to the CLI over stdin (its initialize request), so their
    // headers and env (bearer tokens) never reach argv, where other users can read them; it also
    // ends the SDK's deprecation warning for the argv default.
    mcpServersDelivery: "initialize",
    ...options.extraOptions,
    ...q.fromPolicy,
    ...(q.bounded.settings === undefined ? {} : {
      disallowedTools: q.bounded.disallowedChunks.flat(),
      allowedTools: [...q.bounded.allowedTools]
    }),
    ...(q.settingsPath === undefined ? {} : { settings: q.settingsPath }),
    ...sdkOptions(options, params.budgetUsd, q.policy),
    // The SDK cannot merge `sandbox` into a settings file: then it is in the file already.
    ...(options.sandbox === undefined || q.settingsPath !== undefined
      ? {}
      : { sandbox: Extensions.sdkSandbox(options.sandbox) }),
    ...(q.canUseTool === undefined ? {} : { canUseTool: q.canUseTool }),
    ...withHooks(mergeHooks(q.fromPolicy.hooks, q.hooks, options.extraOptions?.hooks)),
    ...(q.mcpConfigPath === undefined
      ? {}
      : { extraArgs: { ...options.extraOptions?.extraArgs, "mcp-config": q.mcpConfigPath } }),
    // The application's hooks show in `chatStream` as HookStarted / HookFinished.
    ...(q.hooks === undefined ? {} : { includeHookEvents: true }),
    ...(Option.isSome(resume) && params.fork ? { forkSession: true } : {}),
    // A plugin that asked for its MCP servers needs it off (see `Extensions.mcpDiscovery`).
    strictMcpConfig: !Extensions.mcpDiscovery(options),
    abortController: q.controller,
    env: agentEnvironment(process.env, options.env, options.inheritEnv === true),
    spawnClaudeCodeProcess: (spawn) => {
      q.onSpawnEnv?.(spawn.env)
      return spawner(q.onSpawn)(spawn)
    },
    ...(options.pathToClaudeCodeExecutable === undefined
      ? {}
      : { pathToClaudeCodeExecutable: options.pathToClaudeCodeExecutable }),
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.model === undefined ? {} : { model: options.model }),
    ...(Option.isSome(resume) ? { resume: resume.value } : {}),
    ...(responseFormat === undefined ? {} : { outputFormat: { type: "json_schema", schema: responseFormat.schema } }),
    ...(params.partialMessages ? { includePartialMessages: true } : {}),
    // A turn's entries are stored before the SDK hands out its result (`eager` would store half
    // turns, which a redelivered prompt then repeats); the adapter's bound answers before the SDK's.
    ...(q.store === undefined ? {} : {
      sessionStore: q.store.sdkStore,
      sessionStoreFlush: "batched" as const,
      loadTimeoutMs: q.store.loadTimeoutMs
    }),
    // The string prompt of a fresh turn is marked by the SDK; streamed ones by `UserMessage.make`.
    verbatimPrompts: options.trustedPrompts !== true
  }
}

/**
 * The temporary config dir the SDK wrote a session loaded from the store into, for the CLI to
 * resume from: the CLI's `CLAUDE_CONFIG_DIR` when the SDK replaced the client's by a
 * `claude-resume-*` folder. The SDK removes it only when it sees the CLI exit on its own.
 */
const materializedDir = (env: Readonly<Record<string, string | undefined>>, options: Options) => {
  const dir = env["CLAUDE_CONFIG_DIR"]
  const ours = agentEnvironment(process.env, options.env, options.inheritEnv === true)["CLAUDE_CONFIG_DIR"]
  return dir !== undefined && dir !== ours && basename(dir).startsWith("claude-resume-") ? dir : undefined
}

/** Removes a materialized session folder once its CLI is gone (it holds a copy of the credentials). */
const removeMaterialized = (dir: string | undefined) =>
  dir === undefined
    ? Effect.void
    : Effect.promise(() => rm(dir, { recursive: true, force: true }).catch(() => undefined))

/** Reads a query's messages to their end (the SDK has then sent its last mirror batch), bounded. */
const readToEnd = (next: Started["next"], grace: number) =>
  Effect.promise(async () => {
    try {
      for (;;) if ((await next()).done === true) return
    } catch {
      // Its end either way.
    }
  }).pipe(Effect.timeoutOption(grace), Effect.asVoid)

/**
 * The tool policy of a query serving `toolSet`, and whether it mounts the tool server. The same
 * rule as ClaudeLocal: every turn is headless, so interactive tools are blocked unless the
 * permission mode is bypassPermissions; the SDK's PreToolUse hook also covers a mode changed
 * while the query runs.
 */
export const resolvePolicy = Effect.fnUntraced(function*(setup: QuerySetup, toolSet: Tool.ToolSet) {
  const policy = yield* setup.policy.resolve(requestedServers(setup, toolSet))
  return { policy, mounted: toolSet.tools.length > 0 && policy.mountedServers.includes(setup.serverName) }
})

/** The SDK passes disallowedTools as one argument: a long list goes to a settings file (with the sandbox). */
export const boundedPolicy = (options: Options, policy: ToolPolicy.ToolPolicy) =>
  Effect.fromResult(ToolPolicy.boundPolicy(policy, { inlineBytes: ToolPolicy.defaultArgvBounds.argBytes })).pipe(
    Effect.mapError((e) => configError(e.message)),
    Effect.map((bounded) => ({
      bounded,
      sandbox: options.sandbox === undefined ? undefined : Extensions.sandboxSettings(options.sandbox)
    }))
  )

/**
 * Starts a query in the current scope: its CLI, its tool server (from the tool set of now) and
 * the SDK's query. Closing the scope ends all three, the CLI last.
 */
export const startQuery = Effect.fnUntraced(
  function*(setup: QuerySetup, params: QueryParams): Effect.fn.Return<Started, ProviderError, Scope.Scope> {
    const { options, permissionMode, serverName } = setup
    const module = yield* setup.sdk
    if (options.pathToClaudeCodeExecutable !== undefined) yield* checkExecutable(options.pathToClaudeCodeExecutable)
    const toolSet = yield* setup.tools
    const { mounted, policy } = yield* resolvePolicy(setup, toolSet)

    const controller = new AbortController()
    let cli: SpawnedCli | undefined
    let materialized: string | undefined
    // Registered first, so it runs last: after the tool server and its fibers are gone.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        controller.abort()
        return cli === undefined ? Effect.void : reap(cli, setup.grace)
      }).pipe(Effect.andThen(removeMaterialized(materialized)))
    )
    const mcpConfigPath = mounted && params.replay === true ? yield* replayTools(setup, toolSet) : undefined
    const mcpServers: Record<string, AgentSdk.McpServerConfig> = {
      ...setup.appServers,
      ...(mounted && mcpConfigPath === undefined
        ? { [serverName]: yield* makeToolServer(serverName, toolSet, controller.signal, setup.runSlot) }
        : {})
    }
    const fromPolicy = ToolPolicy.toAgentSdkOptions(policy, { permissionMode, headless: true, mcpServers })
    const { bounded, sandbox } = yield* boundedPolicy(options, policy)
    const gate = mounted ? yield* gateHooks(setup, toolSet) : undefined
    // A settings file, never argv: the gate's hook carries a bearer token.
    const settingsPath = bounded.settings === undefined && gate === undefined
      ? undefined
      : yield* writeSettingsFile({
        ...bounded.settings,
        ...(sandbox === undefined ? {} : { sandbox }),
        ...(gate === undefined ? {} : { hooks: gate })
      })
    const query = module.query({
      prompt: params.prompt,
      options: queryOptions(options, {
        params,
        policy,
        fromPolicy,
        bounded,
        settingsPath,
        mcpConfigPath,
        canUseTool: yield* setup.canUseTool,
        hooks: yield* setup.hooks,
        controller,
        store: setup.store,
        onSpawnEnv: (env) => {
          materialized = materializedDir(env, options)
        },
        onSpawn: (spawned) => {
          cli = spawned
        }
      })
    })
    const iterator = query[Symbol.asyncIterator]()
    // A CLI whose streaming input ended writes its last transcript entries as it exits; closing
    // the query first would cut them from the store's mirror, so it gets `grace` to exit.
    const settled = setup.store === undefined || typeof params.prompt === "string"
      ? Effect.void
      : readToEnd(() => iterator.next(), setup.grace)
    yield* Effect.addFinalizer(() => Effect.andThen(settled, Effect.sync(() => query.close())))
    let pull: Promise<IteratorResult<AgentSdk.SDKMessage, void>> | undefined
    return {
      next: () => (pull ??= iterator.next()),
      take: () => {
        pull = undefined
      },
      controller,
      cli: () => cli,
      mounted,
      controls: query
    } satisfies Started
  }
)
