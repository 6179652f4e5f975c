/**
 * OpenAI's Codex CLI (`@openai/codex`) as a ChatClient. Each turn runs a fresh `codex exec --json`
 * whose whole prompt is written to its stdin (`-`), never argv; conversations continue with
 * `codex exec resume <thread>`. With `keepAlive` one `codex app-server` serves the client's turns,
 * a `turn/start` each with the prompt as a text item (JSON-RPC on stdio). Your in-process tools reach the CLI through the same loopback MCP
 * bridge as `ClaudeLocal`'s, started on the first non-empty `setTools`; each run gets a bearer of
 * its own, in the child's environment only (`bearer_token_env_var`), and the bridge's tools are
 * pre-approved (`exec` refuses MCP calls that would need an approval).
 *
 * **Details**
 *
 * Runs are isolated: the CLI gets its own `CODEX_HOME`, `HOME` and `TMPDIR`;
 * `--ignore-user-config` and `--ignore-rules`; an allow-list of this process's environment;
 * `--sandbox read-only`; analytics, the release check and the `plugins`/`apps` features off; and,
 * unless you pass `cwd`, an empty private working directory. Codex expands a `$name` mention of a
 * skill into the skill's body (on argv, on stdin and in `app-server` text items alike), so unless
 * `loadSkills` is set every run switches off each skill it could load (and `AGENTS.md` files): the
 * user's text reaches the model as typed.
 *
 * @summary Codex CLI as a `ChatClient`, your tools served over a loopback MCP bridge.
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
import { trackDirectory } from "../internal/agentCli/exitCleanup.ts"
import * as VersionCheck from "../internal/agentCli/versionCheck.ts"
import { makeSessionClient } from "../internal/claude/conversation.ts"
import type { Transcripts } from "../internal/claude/transcripts.ts"
import * as Live from "../internal/codexCli/live.ts"
import type { Options } from "../internal/codexCli/options.ts"
import * as Run from "../internal/codexCli/run.ts"
import { ChatClient, type ChatClientService, ConfigurationError, ProviderError } from "../services/ChatClient.ts"
import { NoSession, SessionStoreError } from "../services/ClaudeSessionStore.ts"
import type { McpBridgeService } from "../services/McpBridge.ts"
import { Subprocess } from "../services/Subprocess.ts"
import type * as Tool from "../services/Tool.ts"
import * as NodeMcpBridge from "./NodeMcpBridge.ts"
import * as NodeSubprocess from "./NodeSubprocess.ts"

export type { Options } from "../internal/codexCli/options.ts"

/**
 * The default bound on one CLI run (`requestTimeout`): 10 minutes.
 *
 * @category config
 * @since 2.2.0
 */
export const DefaultRequestTimeout: Duration.Duration = Run.DefaultRequestTimeout

/**
 * A Codex CLI conversation: a ChatClient that also tells its thread, for `resume`.
 *
 * @category models
 * @since 2.2.0
 */
export interface CodexCliClient extends ChatClientService {
  /** The CLI's thread id once a turn ran (or the one resumed). */
  readonly sessionId: Effect.Effect<Option.Option<string>>
}

/** Codex CLI keeps its threads in its home: the library's session store does not apply. */
const noTranscripts: Transcripts = {
  beforeRun: () => Effect.void,
  afterRun: () => Effect.void,
  load: () =>
    Effect.fail(
      new SessionStoreError({
        operation: "load",
        reason: new NoSession({ message: "Codex CLI threads have no snapshot; keep the CLI's `home` instead" })
      })
    )
}

/**
 * The client's private directory (0700), removed with its scope, or when the process ends without
 * closing it (a signal, `process.exit`).
 */
const privateDir = Effect.map(
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-"))
      for (const sub of ["codex", "home", "tmp", "work"]) fs.mkdirSync(path.join(dir, sub), { mode: 0o700 })
      return { dir, untrack: trackDirectory(dir) }
    }),
    ({ dir, untrack }) =>
      Effect.sync(() => {
        fs.rmSync(dir, { recursive: true, force: true })
        untrack()
      })
  ),
  ({ dir }) => dir
)

/**
 * The oldest Codex CLI this client runs on (the release it was checked on); an older one fails at the
 * first turn with `ConfigurationError`, naming the upgrade command.
 *
 * @category config
 * @since 2.2.0
 */
export const MinimumCliVersion: string = Run.versionRequirement.minimum

/**
 * Builds a ChatClient on Codex CLI. The bridge (if tools are set) and the client's private
 * directory live in the scope of `make`, and are closed with it.
 *
 * @category constructors
 * @since 2.2.0
 */
export const make: (
  options?: Options
) => Effect.Effect<CodexCliClient, never, Subprocess | Scope.Scope> = Effect.fn("CodexCli.make")(
  function*(options: Options = {}) {
    const scope = yield* Scope.Scope
    const subprocess = yield* Subprocess
    const dir = yield* privateDir
    const serverName = options.serverName ?? "gtb"
    const bridge = yield* Ref.make(Option.none<McpBridgeService>())
    const tools = yield* Ref.make<Tool.ToolSet>({ tools: [], byName: new Map() })
    const env: Run.CodexEnv = {
      options,
      subprocess,
      serverName,
      dir,
      codexHome: options.home ?? path.join(dir, "codex"),
      home: path.join(dir, "home"),
      cwd: options.cwd ?? path.join(dir, "work"),
      bridge: () => Ref.getUnsafe(bridge),
      tools: () => Ref.getUnsafe(tools),
      seen: new Map()
    }
    yield* Effect.sync(() => fs.mkdirSync(env.codexHome, { recursive: true, mode: 0o700 }))

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
      () => ({ command: options.binary ?? "codex", env: Run.runEnv(env, {}), cwd: env.cwd }),
      Run.fromSubprocess
    )
    const run = options.keepAlive === true ? Live.makeLive(env, scope).run : Run.freshRun(env)
    const client = yield* makeSessionClient({
      provider: Run.provider,
      model: options.model,
      run: (input) => Effect.andThen(checkVersion, run(input)),
      setTools,
      resume: options.resume,
      transcripts: noTranscripts
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
 * A ChatClient layer on Codex CLI; needs a Subprocess implementation (use {@link layerNode} for
 * Node's). Calls fail with `ProviderError` whose reason is `ConfigurationError` with an install
 * hint when the binary is missing (also: a `toolPolicy` refusal, a bridge the CLI never reached),
 * the status's reason when the model API answered an error (`AuthenticationError` for 401: set
 * `OPENAI_API_KEY` or `apiKey`), `TimeoutError` after `requestTimeout`, `ProcessError` for any
 * other failed run (with the exit code and stderr), and `NotSupportedError` for what Codex CLI
 * cannot do (see `docs/codex-cli.md`).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ChatClient, CodexCli } from "effect-chat-bridge"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   return yield* client.chat("Say hello in one word")
 * }).pipe(Effect.provide(CodexCli.layerNode({ model: "gpt-5.4" })))
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
 * The options read from the library's environment variables, all optional: `CODEX_CLI_BINARY`,
 * `CODEX_CLI_MODEL`, `CODEX_CLI_BASE_URL`, `CODEX_CLI_API_KEY` (read as a redacted secret),
 * `CODEX_CLI_SYSTEM_PROMPT`, `CODEX_CLI_REQUEST_TIMEOUT` (a duration such as `5 minutes`),
 * `CODEX_CLI_CWD`, `CODEX_CLI_HOME`. Options given in `overrides` win.
 *
 * @category config
 * @since 2.2.0
 */
export const configFromEnv = (overrides: Options = {}): Config.Config<Options> =>
  Config.map(
    Config.all({
      binary: Config.option(Config.String("CODEX_CLI_BINARY")),
      model: Config.option(Config.String("CODEX_CLI_MODEL")),
      baseUrl: Config.option(Config.String("CODEX_CLI_BASE_URL")),
      apiKey: Config.option(Config.Redacted("CODEX_CLI_API_KEY")),
      systemPrompt: Config.option(Config.String("CODEX_CLI_SYSTEM_PROMPT")),
      requestTimeout: Config.option(Config.Duration("CODEX_CLI_REQUEST_TIMEOUT")),
      cwd: Config.option(Config.String("CODEX_CLI_CWD")),
      home: Config.option(Config.String("CODEX_CLI_HOME"))
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
