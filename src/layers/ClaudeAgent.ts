/**
 * Claude Code through the Claude Agent SDK as a ChatClient. Each turn is one SDK `query` (one CLI
 * process); conversations continue with `resume` of the session id. Your in-process tools are
 * served by an MCP server that lives in this process and talks to the CLI over the CLI's own
 * stdin/stdout control channel: no port, no bearer token, no config file. Built-in Claude Code
 * tools are limited by the registry policy (`ToolPolicy.toAgentSdkOptions`).
 *
 * The SDK (`@anthropic-ai/claude-agent-sdk`) is an optional peer dependency, imported when the
 * first turn runs; without it every call fails with a `config` ProviderError saying how to
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
 * turn starts a new one resuming the session.
 *
 * A prompt with images or PDFs (`Content` parts) goes as an SDK user message with image/document
 * blocks (base64 only, Messages API limits); a tool's images reach the model as MCP image content.
 *
 * @since 0.1.0
 * @module
 */
import type * as AgentSdk from "@anthropic-ai/claude-agent-sdk"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import { execFile } from "node:child_process"
import { access, constants, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  agentEnvironment,
  type AgentSdkModule,
  loadAgentSdk,
  makeToolServer,
  provider,
  reap,
  type SpawnedCli,
  spawner
} from "../internal/claudeAgentSdk.js"
import * as CliVersion from "../internal/claudeCliVersion.js"
import { decide, mcpConfigEntry, permissionAnswer, sdkOptions } from "../internal/claudeCodeRun.js"
import {
  authError,
  bounded,
  interpretRun,
  isAuthFailure,
  makeSessionClient,
  remainingBudget,
  type RunInput,
  type RunOutcome,
  type SessionClient,
  sessionContext,
  withTurnTimeout
} from "../internal/claudeSession.js"
import {
  type InitLine,
  makeRunReader,
  type ResultLine,
  toChatEvent,
  type ToolUse
} from "../internal/claudeStreamJson.js"
import * as UserMessage from "../internal/claudeUserMessage.js"
import type { Emit } from "../internal/loopClient.js"
import * as Media from "../internal/media.js"
import * as Telemetry from "../internal/telemetry.js"
import * as ClaudeCodeCatalog from "../registry/ClaudeCodeCatalog.js"
import * as Conditions from "../registry/Conditions.js"
import * as ToolPolicy from "../registry/ToolPolicy.js"
import { type ChatClient, type ChatError, ProviderError } from "../services/ChatClient.js"
import type { AgentToolEnd, AgentToolStart } from "../services/ChatEvent.js"
import type { ClaudeCodeOptions, ClaudeSession } from "../services/ClaudeCodeOptions.js"
import * as Pool from "../services/ClaudeProcessPool.js"
import * as Tool from "../services/Tool.js"
import type { ToolPolicyInput } from "./ClaudeLocal.js"

export type { ToolPolicyInput } from "./ClaudeLocal.js"

/** The Agent SDK's permission modes. */
export type PermissionMode = AgentSdk.PermissionMode

/**
 * Options of {@link make} and {@link layer}; every field is optional. The shared Claude Code
 * options ({@link ClaudeCodeOptions}) mean the same on `ClaudeLocal`.
 */
export interface Options extends ClaudeCodeOptions {
  /**
   * The `claude` executable. Default: the binary shipped with the Agent SDK. `mcpServers` reach it
   * over stdin, which needs a Claude Code at least as new as that binary (an older one fails the turn
   * with an error naming `mcpServersDelivery`); for an older one pass
   * `extraOptions: { mcpServersDelivery: "argv" }`, which puts their headers and env on its command line.
   */
  readonly pathToClaudeCodeExecutable?: string | undefined
  /** The model (an alias such as `sonnet` or a full model name). Default: the CLI's. */
  readonly model?: string | undefined
  /** Replaces Claude Code's default system prompt. */
  readonly systemPrompt?: string | undefined
  /** Bound on one whole turn (all of its model calls and tool calls). Default 10 minutes. */
  readonly requestTimeout?: Duration.DurationInput | undefined
  /** Working directory of the CLI. Default: the process's. */
  readonly cwd?: string | undefined
  /** Default `default`: only allowed tools run; anything that would ask is denied. */
  readonly permissionMode?: PermissionMode | undefined
  /**
   * Changes to the CLI's environment (`undefined` removes a variable). The base is a filtered copy
   * of this process's environment (PATH, HOME, locale, proxies, `ANTHROPIC_*`, `CLAUDE_*`, cloud
   * provider credentials), or all of it with `inheritEnv`.
   */
  readonly env?: Readonly<Record<string, string | undefined>> | undefined
  /** Which built-in Claude Code tools the agent may use. Default: the registry's defaults, no opt-outs. */
  readonly toolPolicy?: ToolPolicyInput | undefined
  /** The in-process MCP server's name; tools appear as `mcp__<serverName>__<tool>`. Default `gtb`. */
  readonly serverName?: string | undefined
  /**
   * When the CLI denied tool calls: `false` (default) fails with `PermissionDeniedError` (which
   * carries the answer); `true` returns the answer and logs a warning.
   */
  readonly allowPermissionDenials?: boolean | undefined
  /** How long the CLI gets to exit on its own before SIGTERM, then SIGKILL. Default 2 seconds. */
  readonly killGrace?: Duration.DurationInput | undefined
  /**
   * Keep one CLI alive across `chat`/`chatStream` turns (streaming input) instead of starting a
   * fresh CLI per turn with `resume`. Default `false`. Turns after the first skip the CLI's
   * start-up; the CLI lives in the client's scope until it closes. A failed or interrupted turn,
   * `setTools` and `ask` end it (an `ask` runs on its own fresh CLI, as without this option); the
   * next turn starts a new one that resumes the session. `maxTurns` bounds each turn and
   * `maxBudgetUsd` the whole conversation, as without this option.
   */
  readonly keepAlive?: boolean | undefined
  /**
   * Start the kept-alive CLI when the client is built, so that the first turn pays no start-up;
   * implies `keepAlive`. Default `false`. It starts on the session to `resume` (forking it with
   * `forkSession`), with every other option as a turn would. A `setTools` restarts it right away
   * (resuming the session), not at the next turn. The CLI belongs to the layer's scope.
   */
  readonly prewarm?: boolean | undefined
  /**
   * Agent SDK options the library does not model, passed to `query` as given. The library's own
   * (abort controller, spawner, environment, tool servers, hooks) are set after them and win; its
   * default `mcpServersDelivery: "initialize"` is set before them.
   */
  readonly extraOptions?: Partial<AgentSdk.Options> | undefined
  /** Module specifier of the Agent SDK; for tests of the missing-SDK error. */
  readonly sdkSpecifier?: string | undefined
}

/** The default bound on one turn (`requestTimeout`): 10 minutes. */
export const DefaultRequestTimeout = Duration.minutes(10)

/** What the CLI printed during one query (or one turn of a kept-alive query) that the provider reads. */
interface Transcript {
  readonly init: InitLine | undefined
  readonly result: ResultLine | undefined
  readonly lastText?: string | undefined
  readonly activity?: ReadonlyArray<AgentToolStart | AgentToolEnd> | undefined
  readonly toolUses?: ReadonlyArray<ToolUse> | undefined
}

/** A started query: its messages, its abort switch, and its CLI once spawned. */
interface Started {
  readonly next: () => Promise<IteratorResult<AgentSdk.SDKMessage, void>>
  readonly controller: AbortController
  readonly cli: () => SpawnedCli | undefined
  readonly mounted: boolean
}

/** The query a `keepAlive` client keeps between turns; it and its CLI live in `scope`. */
interface LiveQuery extends Started {
  readonly scope: Scope.CloseableScope
  readonly send: (message: UserMessage.UserMessage) => void
  /** Its ClaudeProcessPool permit (bounds nothing without a pool). */
  readonly permit: Pool.Permit
  /** The CLI prints its init line once per process (or per turn); the last one seen. */
  init: InitLine | undefined
}

/** The streaming-input prompt of a kept-alive query: user messages pushed in as turns come. */
const makeInbox = () => {
  const queue: Array<AgentSdk.SDKUserMessage> = []
  let wake: (() => void) | undefined
  let done = false
  const iterable: AsyncIterable<AgentSdk.SDKUserMessage> = {
    async *[Symbol.asyncIterator]() {
      while (!done) {
        if (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve))
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
    }
  }
}

/** A streaming-input prompt of one user message, for a turn with media on a query of its own. */
const singleMessage = (message: UserMessage.UserMessage): AsyncIterable<AgentSdk.SDKUserMessage> => ({
  async *[Symbol.asyncIterator]() {
    yield message
  }
})

/**
 * The version of a claude executable the application chose (`--version`); none when it prints
 * none or does not run (the run then reports why), as `ClaudeLocal` assumes the newest features.
 */
const readVersion = (path: string, env: Record<string, string>): Effect.Effect<Option.Option<CliVersion.CliVersion>> =>
  Effect.async<Option.Option<CliVersion.CliVersion>>((resume) => {
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

/** A settings file (0600, in a fresh 0700 directory) that lives as long as the current scope. */
const writeSettingsFile = (settings: unknown) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const dir = await mkdtemp(join(tmpdir(), "ecb-settings-"))
        const file = join(dir, "settings.json")
        await writeFile(file, JSON.stringify(settings), { mode: 0o600 })
        return { dir, file }
      },
      catch: (e) =>
        new ProviderError({
          provider,
          kind: "config",
          message:
            `Could not write the tool policy's settings file in ${tmpdir()} (set TMPDIR to a writable directory): ${
              e instanceof Error ? e.message : String(e)
            }`,
          retryable: false
        })
    }),
    ({ dir }) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  ).pipe(Effect.map(({ file }) => file))

/**
 * Builds a ChatClient on the Agent SDK. Every turn owns its CLI process and its tool server, and
 * releases both before it returns — with `keepAlive`, the kept-alive CLI and its tool server are
 * the client's until a turn fails or is interrupted, the tools change, an `ask` runs, or the scope
 * closes — so closing the scope of `make` leaves nothing behind.
 */
export const make = (options: Options = {}): Effect.Effect<SessionClient, never, Scope.Scope> =>
  Effect.gen(function*() {
    const serverName = options.serverName ?? "gtb"
    const registry = options.toolPolicy?.registry ?? ClaudeCodeCatalog.registry
    const agent = { disabledTools: options.toolPolicy?.disabledTools ?? [] }
    const conditions = yield* Conditions.detectNodeConditions({
      cwd: options.cwd,
      given: options.toolPolicy?.conditions
    })
    const timeout = Duration.decode(options.requestTimeout ?? DefaultRequestTimeout)
    const grace = Duration.toMillis(options.killGrace ?? Duration.seconds(2))
    const permissionMode: PermissionMode = options.permissionMode ?? "default"
    // Loaded once per client; a failure is not cached, so installing the SDK later is enough.
    const sdk = yield* Effect.cachedFunction((specifier: string) => loadAgentSdk(specifier))
    const specifier = options.sdkSpecifier ?? "@anthropic-ai/claude-agent-sdk"

    const tools = yield* Ref.make<Tool.ToolSet>(Tool.empty)
    const appServers = options.mcpServers ?? {}
    const appServerConfigs: Record<string, AgentSdk.McpServerConfig> = {}
    for (const [name, server] of Object.entries(appServers)) {
      appServerConfigs[name] = mcpConfigEntry(server) as AgentSdk.McpServerConfig
    }
    // Tool use ids the application denied through `canUseTool`: its decisions, not failures.
    const decidedDenials = new Set<string>()
    const permissionCallback = Effect.map(
      Effect.runtime<never>(),
      (runtime): AgentSdk.CanUseTool | undefined => {
        const canUseTool = options.canUseTool
        if (canUseTool === undefined) return undefined
        const runPromise = Runtime.runPromise(runtime)
        return async (toolName, input, { toolUseID }) => {
          const request = { toolName, input, toolUseId: toolUseID }
          const decision = await runPromise(decide(canUseTool, request))
          if (decision._tag === "Deny") decidedDenials.add(toolUseID)
          return permissionAnswer(request, decision)
        }
      }
    )
    // Where the tool servers' calls find the turn they belong to (for their spans).
    const runSlot = Telemetry.makeRunSlot()
    // Turns in flight belong to the client's scope too: closing it interrupts them, and each
    // turn's finalizers end its CLI before the scope is closed.
    const turns = yield* FiberSet.make<RunOutcome, ChatError>()

    const trusted = options.trustedPrompts === true
    const userMessage = (input: RunInput) => UserMessage.make(input, !trusted)
    // The SDK's own binary marks messages verbatim; another one may be older than that.
    const executableVersion = options.pathToClaudeCodeExecutable === undefined || trusted
      ? Effect.succeed(Option.none<CliVersion.CliVersion>())
      : yield* Effect.cached(
        readVersion(
          options.pathToClaudeCodeExecutable,
          agentEnvironment(process.env, options.env, options.inheritEnv === true)
        )
      )
    const requireVerbatim = (input: RunInput) =>
      Effect.flatMap(
        executableVersion,
        (cli) => Option.isNone(cli) ? Effect.void : UserMessage.requireVerbatim(provider, cli.value, input, trusted)
      )

    const checkExecutable = (path: string) =>
      Effect.tryPromise({
        try: () => access(path, constants.X_OK),
        catch: () => new ProviderError({ provider, kind: "config", message: executableHint(path), retryable: false })
      })

    /**
     * Reads the query's messages, collecting what the provider reads: to its end, or (for a
     * kept-alive query) to this turn's result line.
     */
    const consume = (
      { cli, controller, next }: Started,
      emit: Emit | undefined,
      untilResult: boolean
    ) =>
      Effect.flatMap(Effect.runtime<never>(), (runtime) =>
        Effect.tryPromise({
          try: async (signal) => {
            const reader = makeRunReader(`mcp__${serverName}__`)
            const runEmit = Runtime.runPromise(runtime)
            signal.addEventListener("abort", () => controller.abort(), { once: true })
            try {
              for (;;) {
                const step = await next()
                if (step.done === true) break
                const events = reader.message(step.value)
                if (emit !== undefined) { for (const event of events) await runEmit(emit(toChatEvent(event))) }
                if (untilResult && reader.result() !== undefined) break
              }
            } catch (e) {
              // The SDK throws after an error result; the result line says more (status, subtype).
              if (reader.result() === undefined) throw e
            }
            const { activity, init, lastText, result, toolUses } = reader.done()
            return { init, result, lastText, activity, toolUses } satisfies Transcript
          },
          catch: (e) => {
            const stderr = bounded((cli()?.stderr() ?? "").trim(), 1_000)
            const said = e instanceof Error ? e.message : String(e)
            if (isAuthFailure(stderr) || isAuthFailure(said)) return authError(provider, stderr === "" ? said : stderr)
            return new ProviderError({
              provider,
              kind: "process",
              message: `The claude CLI failed: ${said}${stderr === "" ? "" : ` (stderr: ${stderr})`}`,
              retryable: false
            })
          }
        })).pipe(withTurnTimeout(provider, timeout))

    /**
     * Starts a query in the current scope: its CLI, its tool server (from the tool set of now) and
     * the SDK's query. Closing the scope ends all three, the CLI last.
     */
    const start = (params: {
      readonly prompt: string | AsyncIterable<AgentSdk.SDKUserMessage>
      readonly resume: Option.Option<string>
      readonly fork: boolean
      readonly responseFormat: RunInput["responseFormat"]
      readonly partialMessages: boolean
      /** What the query's CLI may spend (its `maxBudgetUsd`): what the conversation has left now. */
      readonly budgetUsd: number | undefined
    }) =>
      Effect.gen(function*() {
        const module: AgentSdkModule = yield* sdk(specifier)
        if (options.pathToClaudeCodeExecutable !== undefined) yield* checkExecutable(options.pathToClaudeCodeExecutable)
        const toolSet = yield* Ref.get(tools)
        const serving = toolSet.tools.length > 0
        const requested = [...(serving ? [serverName] : []), ...Object.keys(appServers)]
        // The same rule as ClaudeLocal: every turn is headless, so interactive tools are blocked
        // unless the permission mode is bypassPermissions; the SDK's PreToolUse hook also covers
        // a mode changed while the query runs.
        const policy = ToolPolicy.resolveValidated(registry, agent, {
          conditions,
          headless: true,
          permissionMode,
          ...(requested.length > 0 ? { mcpServers: requested } : {})
        })
        const mounted = serving && policy.mountedServers.includes(serverName)

        const controller = new AbortController()
        let cli: SpawnedCli | undefined
        // Registered first, so it runs last: after the tool server and its fibers are gone.
        yield* Effect.addFinalizer(() =>
          Effect.suspend(() => {
            controller.abort()
            return cli === undefined ? Effect.void : reap(cli, grace)
          })
        )
        const mcpServers: Record<string, AgentSdk.McpServerConfig> = {
          ...appServerConfigs,
          ...(mounted ? { [serverName]: yield* makeToolServer(serverName, toolSet, controller.signal, runSlot) } : {})
        }
        const fromPolicy = ToolPolicy.toAgentSdkOptions(policy, { permissionMode, headless: true, mcpServers })
        // The SDK passes disallowedTools as one argument: a long list goes to a settings file.
        const bounded = yield* ToolPolicy.boundPolicy(policy, { inlineBytes: ToolPolicy.defaultArgvBounds.argBytes })
          .pipe(
            Effect.mapError((e) =>
              new ProviderError({ provider, kind: "config", message: e.message, retryable: false })
            )
          )
        const settingsPath = bounded.settings === undefined ? undefined : yield* writeSettingsFile(bounded.settings)
        const { responseFormat, resume } = params
        const canUseTool = yield* permissionCallback
        const query = module.query({
          prompt: params.prompt,
          options: {
            // The application's MCP servers go to the CLI over stdin (its initialize request), so
            // their headers and env (bearer tokens) never reach argv, where other users can read
            // them; it also ends the SDK's deprecation warning for the argv default.
            mcpServersDelivery: "initialize",
            ...options.extraOptions,
            ...fromPolicy,
            ...(settingsPath === undefined ? {} : {
              disallowedTools: bounded.disallowedChunks.flat(),
              allowedTools: [...bounded.allowedTools],
              settings: settingsPath
            }),
            ...sdkOptions(options, params.budgetUsd),
            ...(canUseTool === undefined ? {} : { canUseTool }),
            ...(Option.isSome(resume) && params.fork ? { forkSession: true } : {}),
            strictMcpConfig: true,
            abortController: controller,
            env: agentEnvironment(process.env, options.env, options.inheritEnv === true),
            spawnClaudeCodeProcess: spawner((spawned) => {
              cli = spawned
            }),
            ...(options.pathToClaudeCodeExecutable === undefined
              ? {}
              : { pathToClaudeCodeExecutable: options.pathToClaudeCodeExecutable }),
            ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
            ...(options.model === undefined ? {} : { model: options.model }),
            ...(Option.isSome(resume) ? { resume: resume.value } : {}),
            ...(responseFormat === undefined
              ? {}
              : { outputFormat: { type: "json_schema", schema: responseFormat.schema } }),
            ...(params.partialMessages ? { includePartialMessages: true } : {}),
            // The string prompt of a fresh turn is marked by the SDK; streamed ones by `userMessage`.
            verbatimPrompts: !trusted
          }
        })
        yield* Effect.addFinalizer(() => Effect.sync(() => query.close()))
        const iterator = query[Symbol.asyncIterator]()
        return { next: () => iterator.next(), controller, cli: () => cli, mounted } satisfies Started
      })

    const interpret = (input: RunInput, started: Started, transcript: Transcript) =>
      interpretRun({
        provider,
        serverName,
        mounted: started.mounted,
        init: transcript.init,
        result: transcript.result,
        // Only for a run without a result: after one, the CLI may still be on its way out.
        exitCode: transcript.result === undefined ? started.cli()?.child.exitCode ?? undefined : undefined,
        stderr: started.cli()?.stderr(),
        toolUses: transcript.toolUses,
        allowPermissionDenials: options.allowPermissionDenials === true,
        recordResult: input.recordResult,
        lastText: transcript.lastText,
        decidedDenials,
        noResult: () => {
          const stderr = bounded((started.cli()?.stderr() ?? "").trim(), 1_000)
          return new ProviderError({
            provider,
            kind: "process",
            message: `The claude CLI ended without a result${stderr === "" ? "" : `: ${stderr}`}`,
            retryable: false
          })
        }
      }).pipe(Effect.map((outcome) => ({ ...outcome, activity: transcript.activity })))

    /** A turn on a query (and CLI) of its own, resuming the session. */
    const freshTurn = (input: RunInput) =>
      Effect.scoped(Effect.gen(function*() {
        const started = yield* start({
          // A prompt with media is one SDK user message carrying image/document blocks.
          prompt: input.parts === undefined ? input.prompt : singleMessage(userMessage(input)),
          resume: input.sessionId,
          fork: input.fork,
          responseFormat: input.responseFormat,
          partialMessages: input.emit !== undefined,
          budgetUsd: input.budgetUsd
        })
        return yield* interpret(input, started, yield* consume(started, input.emit, false))
      }))

    // keepAlive: the query kept between turns. Turns (and setTools) are serialised by the session
    // shell, so only one of them touches it at a time.
    const clientScope = yield* Effect.scope
    const pool = yield* Effect.serviceOption(Pool.ClaudeProcessPool)
    let live: LiveQuery | undefined

    /** Ends the kept-alive query and its CLI; the next turn starts a new one. */
    const dropLive = Effect.suspend(() => {
      const ending = live
      live = undefined
      return ending === undefined ? Effect.void : Scope.close(ending.scope, Exit.void)
    })

    /**
     * Starts the kept-alive query. Its CLI counts its own spend from its start, so it gets what the
     * conversation has left then, and stops when the conversation's total reaches the bound.
     */
    const startLive = (resume: Option.Option<string>, fork: boolean, budgetUsd: number | undefined) =>
      Effect.gen(function*() {
        const scope = yield* Scope.fork(clientScope, ExecutionStrategy.sequential)
        // ClaudeProcessPool: a permit while the query lives; eviction ends it (the next turn resumes).
        const permit = yield* Pool.acquireFrom(
          pool,
          Effect.suspend(() => {
            if (live?.scope === scope) live = undefined
            return Scope.close(scope, Exit.void)
          })
        ).pipe(
          Scope.extend(scope),
          Effect.onError(() => Scope.close(scope, Exit.void)),
          Effect.mapError(Pool.toProviderError(provider))
        )
        const inbox = makeInbox()
        const started = yield* start({
          prompt: inbox.iterable,
          resume,
          fork,
          responseFormat: undefined,
          partialMessages: true,
          budgetUsd
        })
          .pipe(Scope.extend(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
        // Runs first on close: the SDK sees the end of its input, then the query is closed.
        yield* Scope.addFinalizer(scope, Effect.sync(inbox.end))
        return { ...started, scope, send: inbox.push, permit, init: undefined } satisfies LiveQuery
      })

    /**
     * A turn on the kept-alive query: the message goes in through the streaming input, and the
     * turn ends at its result line. Any failure or interruption ends the query (and its CLI).
     */
    const liveTurn = (input: RunInput) =>
      Effect.gen(function*() {
        // A warm CLI started on another session than the conversation's (a failed `ask`) is not it.
        if (
          live !== undefined &&
          (live.permit.evicted() || !Option.getEquivalence(Equal.equals)(lastSession, input.sessionId) ||
            lastFork !== input.fork)
        ) yield* dropLive
        const query = live ?? (yield* startLive(input.sessionId, input.fork, input.budgetUsd))
        live = query
        const transcript = yield* query.permit.busy(Effect.suspend(() => {
          query.send(userMessage(input))
          return consume(query, input.emit, true)
        }))
        if (transcript.init !== undefined) query.init = transcript.init
        // Only the init line is per process rather than per turn: the rest reads as a fresh turn's.
        return yield* interpret(input, query, { ...transcript, init: query.init })
      }).pipe(Effect.onError(() => dropLive))

    // The session of the last successful turn (at first, the one to resume, and whether the first
    // turn forks it): a warm start (prewarm) continues it as the next turn would.
    let lastSession = Option.fromNullable(options.resume)
    let lastFork = options.resume !== undefined && options.forkSession === true
    // With the budget spent the next turn fails without a CLI, so none is started.
    const warm = (budgetUsd: number | undefined) =>
      budgetUsd === 0 ? Effect.void : Effect.suspend(() => startLive(lastSession, lastFork, budgetUsd)).pipe(
        Effect.tap((query) => {
          live = query
        }),
        Effect.catchAll((error) =>
          Effect.logWarning("claude CLI warm start failed; the first turn starts it").pipe(
            Effect.annotateLogs({ error: error.message })
          )
        )
      )
    const keepAlive = options.keepAlive === true || options.prewarm === true

    const runTurn = (input: RunInput) =>
      Effect.tap(dispatchTurn(input), (outcome) => {
        if (outcome.sessionId !== undefined) lastSession = Option.some(outcome.sessionId)
        lastFork = false
      })

    // Refused before any CLI starts, and without dropping a warm one.
    const dispatchTurn = (input: RunInput) => Effect.zipRight(requireVerbatim(input), turnOf(input))

    const turnOf = (input: RunInput) =>
      !keepAlive
        ? freshTurn(input)
        : input.responseFormat === undefined
        ? liveTurn(input)
        // The output format is fixed per query: `ask` runs on its own CLI, after which the kept-alive
        // one would not know the answer; it restarts (resuming the session) on the next turn.
        : Effect.zipRight(dropLive, freshTurn(input))

    // Each turn runs in a fiber of the client's scope: closing the scope ends turns in flight.
    const run = (input: RunInput) =>
      Effect.flatMap(
        // A kept-alive query's tool server outlives the turn that built it: each turn marks itself.
        FiberSet.run(turns, runSlot.within(runTurn(input))),
        (fiber) => Fiber.join(fiber).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
      )

    // Read at the start of each query: every query gets a fresh server built from this set; a
    // kept-alive query was built from the old one, so it ends.
    const setTools = (set: Tool.ToolSet, budgetUsd: number | undefined) =>
      Effect.zipRight(Ref.set(tools, set), dropLive).pipe(
        Effect.zipRight(options.prewarm === true ? warm(budgetUsd) : Effect.void)
      )

    // Nothing is spent before the first turn.
    if (options.prewarm === true) yield* warm(remainingBudget(options.maxBudgetUsd, 0))

    return yield* makeSessionClient({
      provider,
      model: options.model,
      run,
      setTools,
      media: Media.claudeCode(provider),
      resume: options.resume,
      forkSession: options.forkSession,
      maxBudgetUsd: options.maxBudgetUsd
    })
  })

/**
 * A ChatClient layer on the Claude Agent SDK. The SDK is loaded on the first call; calls fail with
 * `ProviderError` (`kind: "config"` when the SDK or the executable is missing or the tool server
 * did not connect, `"timeout"` after `requestTimeout`, `"auth"` saying how to log in when the CLI
 * is not logged in or its key is refused, `"http"` with `status` for an API error,
 * `"process"` for any other failed turn), `PermissionDeniedError` (unless
 * `allowPermissionDenials`), `StructuredOutputError`, `EmptyPromptError` and `InvalidToolsError`.
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
 */
export const layer = (options: Options = {}): Layer.Layer<ChatClient | ClaudeSession> =>
  Layer.scopedContext(Effect.map(make(options), sessionContext))

/**
 * {@link layer} configured from the environment: `CLAUDE_BINARY` (the executable), `CLAUDE_MODEL`,
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
        Config.literal("acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan", "default")(
          "CLAUDE_PERMISSION_MODE"
        )
      )
      return layer({
        pathToClaudeCodeExecutable: yield* opt("CLAUDE_BINARY"),
        model: yield* opt("CLAUDE_MODEL"),
        systemPrompt: yield* opt("CLAUDE_SYSTEM_PROMPT"),
        cwd: yield* opt("CLAUDE_CWD"),
        requestTimeout: Option.getOrUndefined(timeout),
        permissionMode: Option.getOrUndefined(permissionMode),
        ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined))
      })
    })
  )
