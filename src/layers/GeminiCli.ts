/**
 * Google's Gemini CLI (`@google/gemini-cli`) as a ChatClient. Each turn runs a fresh
 * `gemini --acp` (the Agent Client Protocol over stdio) and sends the prompt as text content
 * blocks, which the CLI passes to the model verbatim; conversations continue with `session/load`.
 * With `keepAlive` one `gemini --acp` serves the client's turns, one `session/prompt` each, until
 * it sits idle for `idleTimeout`. With `sessionStore` the CLI's session log is mirrored into a
 * `ClaudeSessionStore`, so another home (another machine) can resume the conversation.
 * Your in-process tools reach the CLI through the same loopback MCP bridge as `ClaudeLocal`'s,
 * started on the first non-empty `setTools`; each run gets a bearer of its own, sent in the ACP
 * `session/new` request on stdin (never argv, environment or a file), and a `--policy` file that
 * allows exactly your tools (the CLI drops tools that need a confirmation otherwise).
 *
 * **Details**
 *
 * Runs are isolated: the CLI gets its own home (`GEMINI_CLI_HOME`, `HOME`, `TMPDIR`) with a
 * settings file that only selects the auth type and turns off usage statistics and update
 * checks, so no user settings or extensions load; an allow-list of this process's environment;
 * `--skip-trust`; and, unless you pass `cwd`, an empty private working directory, because the CLI
 * lists its working directory into every request. `-p` is not used: it expands `@path` anywhere in
 * the text (reading the file) and runs `/commands`, with no escape that leaves the text as it was.
 * ACP runs six built-in commands (`/memory`, `/extensions`, `/init`, `/restore`, `/about`,
 * `/help`, also with `$`); a prompt starting with one fails with `NotSupportedError`.
 *
 * @summary Gemini CLI as a `ChatClient`, your tools served over a loopback MCP bridge.
 * @group Chat providers
 * @since 2.2.0
 * @module
 */
import * as Config from "effect/Config"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { mergeEnvOptions } from "../internal/agentCli/envOptions.ts"
import * as VersionCheck from "../internal/agentCli/versionCheck.ts"
import { makeSessionClient } from "../internal/claude/conversation.ts"
import { DefaultProjectKey, type Transcripts } from "../internal/claude/transcripts.ts"
import * as Live from "../internal/geminiCli/live.ts"
import type { Options } from "../internal/geminiCli/options.ts"
import * as Run from "../internal/geminiCli/run.ts"
import * as Store from "../internal/geminiCli/sessionStore.ts"
import { ChatClient, type ChatClientService, ConfigurationError, ProviderError } from "../services/ChatClient.ts"
import {
  ClaudeSessionStore,
  type ClaudeSessionStoreService,
  NoSession,
  SessionStoreError
} from "../services/ClaudeSessionStore.ts"
import type { McpBridgeService } from "../services/McpBridge.ts"
import { Subprocess } from "../services/Subprocess.ts"
import type * as Tool from "../services/Tool.ts"
import * as NodeMcpBridge from "./NodeMcpBridge.ts"
import * as NodeSubprocess from "./NodeSubprocess.ts"

export type { Options } from "../internal/geminiCli/options.ts"
export type { PolicyRule } from "../internal/geminiCli/policy.ts"

/**
 * The default bound on one CLI run (`requestTimeout`): 10 minutes.
 *
 * @category config
 * @since 2.2.0
 */
export const DefaultRequestTimeout: Duration.Duration = Run.DefaultRequestTimeout

/**
 * How long a `keepAlive` CLI may sit idle before it is stopped (`idleTimeout`): 5 minutes.
 *
 * @category config
 * @since 2.2.0
 */
export const DefaultIdleTimeout: Duration.Duration = Live.DefaultIdleTimeout

/**
 * The model used when `model` is not set.
 *
 * @category config
 * @since 2.2.0
 */
export const DefaultModel: string = Run.DefaultModel

/**
 * A Gemini CLI conversation: a ChatClient that also tells its session, for `resume`.
 *
 * @category models
 * @since 2.2.0
 */
export interface GeminiCliClient extends ChatClientService {
  /** The CLI's session id once a turn ran (or the one resumed). */
  readonly sessionId: Effect.Effect<Option.Option<string>>
}

/**
 * The store step: with `sessionStore`, each turn's new session lines are stored after it (the
 * restore happens in the run, before a `session/load`, since a kept CLI loads nothing). There is
 * no snapshot of a Gemini CLI session.
 */
const transcriptsOf = (store: Store.StoreSetup | undefined): Transcripts => ({
  beforeRun: () => Effect.void,
  afterRun: (sessionId) => (store === undefined ? Effect.void : Store.storeTurn(store, sessionId)),
  load: () =>
    Effect.fail(
      new SessionStoreError({
        operation: "load",
        reason: new NoSession({
          message: "Gemini CLI sessions have no snapshot; keep the CLI's `home`, or use `sessionStore`"
        })
      })
    )
})

/** `sessionStore` without a `ClaudeSessionStore` to use: every turn fails, before any run. */
const storeMissing = Effect.fail(Run.fail(
  new ConfigurationError({
    message: "GeminiCli sessionStore needs a ClaudeSessionStore: provide one (ClaudeSessionStoreSql.layerSqlite, …)"
  })
))

/** The client's private directory (0700), removed with its scope. */
const privateDir = Effect.acquireRelease(
  Effect.sync(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-gemini-"))
    for (const sub of ["home", "tmp", "work"]) fs.mkdirSync(path.join(dir, sub), { mode: 0o700 })
    return dir
  }),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/**
 * The oldest Gemini CLI this client runs on (the release it was checked on); an older one fails at the
 * first turn with `ConfigurationError`, naming the upgrade command.
 *
 * @category config
 * @since 2.2.0
 */
export const MinimumCliVersion: string = Run.versionRequirement.minimum

/**
 * Builds a ChatClient on Gemini CLI. The bridge (if tools are set) and the client's private
 * directory live in the scope of `make`, and are closed with it.
 *
 * @category constructors
 * @since 2.2.0
 */
export const make: (
  options?: Options
) => Effect.Effect<GeminiCliClient, never, Subprocess | Scope.Scope> = Effect.fn("GeminiCli.make")(
  function*(options: Options = {}) {
    const scope = yield* Scope.Scope
    const subprocess = yield* Subprocess
    const dir = yield* privateDir
    const home = options.home ?? path.join(dir, "home")
    yield* Effect.sync(() => fs.mkdirSync(path.join(home, ".gemini"), { recursive: true, mode: 0o700 }))
    yield* Run.writePrivate(path.join(home, ".gemini", "settings.json"), JSON.stringify(Run.settings(options)))
    const serverName = options.serverName ?? "gtb"
    const bridge = yield* Ref.make(Option.none<McpBridgeService>())
    const tools = yield* Ref.make<Tool.ToolSet>({ tools: [], byName: new Map() })
    const service = options.sessionStore === true
      ? yield* Effect.serviceOption(ClaudeSessionStore)
      : Option.none<ClaudeSessionStoreService>()
    const cwd = options.cwd ?? path.join(dir, "work")
    const store: Store.StoreSetup | undefined = Option.isSome(service)
      ? {
        store: service.value,
        projectKey: options.projectKey ?? DefaultProjectKey,
        storeTimeout: options.storeTimeout,
        home,
        cwd,
        unstored: new Set()
      }
      : undefined
    const env: Run.GeminiEnv = {
      options,
      store,
      subprocess,
      serverName,
      dir,
      home,
      cwd,
      bridge: () => Ref.getUnsafe(bridge),
      tools: () => Ref.getUnsafe(tools)
    }

    const setTools = Effect.fnUntraced(function*(set: Tool.ToolSet) {
      const running = yield* Ref.get(bridge)
      if (Option.isSome(running)) {
        yield* running.value.setTools(set.tools)
      } else if (set.tools.length > 0) {
        // Started once, in the client's scope: port and token stay stable across turns.
        const started = yield* NodeMcpBridge.make({ serverName, tools: set.tools, guardJsonText: true }).pipe(
          Scope.provide(scope),
          Effect.mapError((e) =>
            e._tag === "InvalidToolsError"
              ? e
              : new ProviderError({ provider: Run.provider, reason: new ConfigurationError({ message: e.message }) })
          )
        )
        yield* Ref.set(bridge, Option.some(started))
      }
      yield* Ref.set(tools, set)
    })

    const checkVersion = yield* VersionCheck.make(
      Run.versionRequirement,
      subprocess,
      () => ({ command: options.binary ?? "gemini", env: Run.runEnv(env, {}), cwd: env.cwd }),
      Run.fromSubprocess
    )
    const runTurn = options.keepAlive === true ? (yield* Live.makeLive(env, scope)).run : Run.freshRun(env)
    const run = options.sessionStore === true && store === undefined ? () => storeMissing : runTurn
    const client = yield* makeSessionClient({
      provider: Run.provider,
      model: options.model ?? Run.DefaultModel,
      run: (input) => Effect.andThen(checkVersion, run(input)),
      setTools,
      resume: options.resume,
      transcripts: transcriptsOf(store)
    })
    return {
      add: client.add,
      chat: client.chat,
      chatStream: client.chatStream,
      ask: client.ask,
      setTools: client.setTools,
      usage: client.usage,
      sessionId: client.sessionId
    }
  }
)

/**
 * A ChatClient layer on Gemini CLI; needs a Subprocess implementation (use {@link layerNode} for
 * Node's). Calls fail with `ProviderError` whose reason is `ConfigurationError` with an install
 * hint when the binary is missing, `AuthenticationError` (exit 41: set `GEMINI_API_KEY`),
 * `InvalidRequestError` (exit 42), `TimeoutError` after `requestTimeout`, `ProcessError` for any
 * other failed run (with the exit code and stderr), the status's reason when the CLI reports an
 * API error, and `NotSupportedError` for what Gemini CLI cannot do (see `docs/gemini-cli.md`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ChatClient, GeminiCli } from "effect-chat-bridge"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   return yield* client.chat("Say hello in one word")
 * }).pipe(Effect.provide(GeminiCli.layerNode({ model: "gemini-2.5-flash" })))
 * ```
 *
 * @category layers
 * @since 2.2.0
 */
export const layer = (options: Options = {}): Layer.Layer<ChatClient, never, Subprocess> =>
  Layer.effect(ChatClient, make(options))

/**
 * {@link layer} with the Node implementation of Subprocess.
 *
 * @category layers
 * @since 2.2.0
 */
export const layerNode = (options: Options = {}): Layer.Layer<ChatClient> =>
  layer(options).pipe(Layer.provide(NodeSubprocess.layer))

/**
 * The options read from the library's environment variables, all optional: `GEMINI_CLI_BINARY`,
 * `GEMINI_CLI_MODEL`, `GEMINI_CLI_SYSTEM_PROMPT`, `GEMINI_CLI_REQUEST_TIMEOUT` (a duration such as
 * `5 minutes`), `GEMINI_CLI_CWD`, `GEMINI_CLI_HOME`, `GEMINI_CLI_KEEP_ALIVE` (`true`/`false`),
 * `GEMINI_CLI_IDLE_TIMEOUT` (a duration). Options given in `overrides` win.
 *
 * @category config
 * @since 2.2.0
 */
export const configFromEnv = (overrides: Options = {}): Config.Config<Options> =>
  Config.map(
    Config.all({
      binary: Config.option(Config.String("GEMINI_CLI_BINARY")),
      model: Config.option(Config.String("GEMINI_CLI_MODEL")),
      systemPrompt: Config.option(Config.String("GEMINI_CLI_SYSTEM_PROMPT")),
      requestTimeout: Config.option(Config.Duration("GEMINI_CLI_REQUEST_TIMEOUT")),
      cwd: Config.option(Config.String("GEMINI_CLI_CWD")),
      home: Config.option(Config.String("GEMINI_CLI_HOME")),
      keepAlive: Config.option(Config.Boolean("GEMINI_CLI_KEEP_ALIVE")),
      idleTimeout: Config.option(Config.Duration("GEMINI_CLI_IDLE_TIMEOUT"))
    }),
    (env): Options => mergeEnvOptions<Options>(env, overrides)
  )

/**
 * {@link layerNode} with its options read from `Config` values: each option is a `Config` (or the
 * whole options one `Config`).
 *
 * @category layers
 * @since 2.2.0
 */
export const layerConfig = (config: Config.Wrap<Options>): Layer.Layer<ChatClient, Config.ConfigError> =>
  Layer.unwrap(Effect.map(Config.unwrap(config), layerNode))

/**
 * {@link layerNode} configured from the environment ({@link configFromEnv}); options given here
 * win over the environment.
 *
 * @category layers
 * @since 2.2.0
 */
export const layerFromEnv = (overrides: Options = {}): Layer.Layer<ChatClient, Config.ConfigError> =>
  layerConfig(configFromEnv(overrides))
