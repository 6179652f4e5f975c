/**
 * Serves a tool set over MCP Streamable HTTP on loopback, so another process (the `claude` CLI)
 * can call the caller's in-process handlers. The implementation lives in
 * `layers/NodeMcpBridge.ts`; this module holds the contract.
 *
 * @summary The contract of the loopback MCP server that lets another process (the `claude` CLI) call your tools.
 * @group Tools
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { InvalidToolsError, Tool } from "./Tool.ts"

/**
 * The server name used when none is given: tools appear to the CLI as `mcp__gtb__<tool>`.
 *
 * @category config
 * @since 1.0.0
 */
export const defaultServerName = "gtb"

/**
 * Default upper bound on a request body, the same as the MCP SDK's own (4 MiB).
 *
 * @category config
 * @since 1.0.0
 */
export const defaultMaxBodyBytes = 4 * 1024 * 1024

/**
 * Default idle time after which a session is closed: no request for 30 minutes and no tool call
 * in flight. Longer than a CLI run's default bound (10 minutes), so a live run is never cut.
 *
 * @category config
 * @since 1.0.0
 */
export const defaultIdleTimeout: Duration.Duration = Duration.minutes(30)

/**
 * Default bound on live sessions; past it an `initialize` gets a JSON-RPC error (HTTP 503).
 *
 * @category config
 * @since 1.0.0
 */
export const defaultMaxSessions = 100

/**
 * Server names become part of `mcp__<server>__<tool>`, so they follow the tool-name rule.
 *
 * @category models
 * @since 1.0.0
 */
export const ServerNamePattern = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * One entry of an MCP config file, in the HTTP form the `claude` CLI reads. `alwaysLoad` puts the
 * tools in the model's context without a tool-search round trip.
 *
 * @category models
 * @since 1.0.0
 */
export interface McpHttpServerConfig {
  /** The transport: Streamable HTTP. */
  readonly type: "http"
  /** The bridge's `/mcp` endpoint. */
  readonly url: string
  /** `Authorization: Bearer <token>`: a secret. */
  readonly headers: { readonly Authorization: string }
  /** Always `true` for the bridge. */
  readonly alwaysLoad: boolean
}

/**
 * The document passed to `claude --mcp-config <file>`. It contains the bearer token in clear: write
 * it only to a secret file (see `SecretFile`), never to argv or logs.
 *
 * @category models
 * @since 1.0.0
 */
export interface McpConfig {
  /** Server configs by server name. */
  readonly mcpServers: { readonly [serverName: string]: McpHttpServerConfig }
}

/**
 * Builds the MCP config document for a bridge at `url` guarded by `token`.
 *
 * @category constructors
 * @since 1.0.0
 */
export const makeMcpConfig = (options: {
  readonly serverName: string
  readonly url: string
  readonly token: Redacted.Redacted<string>
}): McpConfig => ({
  mcpServers: {
    [options.serverName]: {
      type: "http",
      url: options.url,
      headers: { Authorization: `Bearer ${Redacted.value(options.token)}` },
      alwaysLoad: true
    }
  }
})

/**
 * Renders an MCP config as the JSON text of the config file.
 *
 * @category utils
 * @since 1.0.0
 */
export const renderMcpConfig = (config: McpConfig): string => JSON.stringify(config, null, 2) + "\n"

/**
 * An option of {@link McpBridgeOptions} was refused: a bad server name, body limit, session bound,
 * idle timeout or implementation. Fix the option; retrying cannot help.
 *
 * @since 2.0.0
 * @category errors
 */
export class InvalidOptions
  extends Schema.TaggedError<InvalidOptions>("effect-chat-bridge/McpBridgeError/InvalidOptions")(
    "InvalidOptions",
    {
      /** The option that was refused, such as `serverName` or `idleTimeout`. */
      option: Schema.String,
      /** What was wrong with it. */
      message: Schema.String
    }
  )
{
  /** Never retryable: the same options are refused again. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The loopback listener could not start (no free port, too many open files). Retryable: the
 * condition is usually transient.
 *
 * @since 2.0.0
 * @category errors
 */
export class BindFailed extends Schema.TaggedError<BindFailed>("effect-chat-bridge/McpBridgeError/BindFailed")(
  "BindFailed",
  {
    /** The address the bridge tried to listen on (always `127.0.0.1`). */
    host: Schema.String,
    /** The port asked for (`0`: any free port). */
    port: Schema.Number,
    /** The operating system's words. */
    message: Schema.String
  }
) {
  /** Retryable: another attempt may find a free port or descriptor. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * Why the bridge could not start.
 *
 * @since 2.0.0
 * @category schemas
 */
export const McpBridgeErrorReason: Schema.Union<[typeof InvalidOptions, typeof BindFailed]> = Schema.Union([
  InvalidOptions,
  BindFailed
])

/**
 * The type of {@link McpBridgeErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type McpBridgeErrorReason = typeof McpBridgeErrorReason.Type

/**
 * The bridge could not start: bad options (`InvalidOptions`), or the loopback listener could not
 * bind (`BindFailed`). Select a reason with `Effect.catchReason("McpBridgeError", "BindFailed", …)`.
 *
 * @since 2.0.0
 * @category errors
 */
export class McpBridgeError extends Schema.TaggedError<McpBridgeError>()("McpBridgeError", {
  /** What went wrong. Its message never contains the token. */
  reason: McpBridgeErrorReason
}) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether trying again may succeed; the reason decides. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * Options of the bridge. `R` is what the initial tools' handlers need.
 *
 * @category config
 * @since 1.0.0
 */
export interface McpBridgeOptions<R = never> {
  /** Name the CLI knows the server by (`mcp__<serverName>__<tool>`). Default `gtb`. */
  readonly serverName?: string | undefined
  /**
   * Largest accepted request body in bytes; larger bodies get 413, which the client can read: the
   * bridge drains up to 64 MiB more (10 s at most) before it closes the connection. Default 4 MiB.
   */
  readonly maxBodyBytes?: number | undefined
  /** What the server reports as its implementation in `initialize`. Default `{ name: serverName, version: "0.1.0" }`. */
  readonly implementation?: { readonly name: string; readonly version: string } | undefined
  /** Tools served from the start; their requirements are taken from the context that builds the bridge. */
  readonly tools?: ReadonlyArray<Tool<R>> | undefined
  /**
   * A session with no request for this long (and no tool call in flight) is closed; its client
   * gets 404 and may initialize again. Default {@link defaultIdleTimeout} (30 minutes).
   */
  readonly idleTimeout?: Duration.Input | undefined
  /**
   * Bound on live sessions. Past it an `initialize` is answered with HTTP 503 and a JSON-RPC error
   * naming the bound; open sessions are untouched. Default {@link defaultMaxSessions} (100).
   */
  readonly maxSessions?: number | undefined
  /**
   * Answers Claude Code HTTP hooks at `POST /hooks/<name>`, behind the same checks as `/mcp`
   * (loopback Host and Origin, a bearer token of the bridge or of a live run, the body limit):
   * the JSON body goes to it with `<name>`, its answer is the JSON response. A failure or defect
   * answers 500, which the CLI treats as a non-blocking hook error; a client that hangs up
   * interrupts it. It runs in the context that built the bridge. Default: none (404).
   *
   * @since 2.0.0
   */
  readonly hooks?: ((name: string, input: unknown) => Effect.Effect<unknown, unknown>) | undefined
  /**
   * Gemini CLI's MCP client reads a result whose first text item parses as JSON as the call's
   * structured content, and rejects the call when that is not an object (a tool answering `5`,
   * `true` or `[1]`). With this set such a result starts with an empty text item, so the text
   * reaches the model unchanged. Default `false`.
   *
   * @since 2.2.0
   */
  readonly guardJsonText?: boolean | undefined
}

/**
 * One run's access to a bridge (see {@link McpBridgeService.openRun}): a bearer token of its own,
 * valid until the run's scope closes. Sessions opened with it belong to the run, and the run's
 * tool calls run in fibers of the run: closing the scope revokes the token, closes those sessions
 * and interrupts those calls (their finalizers run) before it completes. The calls are forked
 * from where `openRun` ran, so they carry its fiber state (log annotations, say) and are traced
 * as children of the span current there, with its metric labels; the handler's own services
 * still come from the context that set the tools. Runs sharing one bridge never share a span.
 *
 * @category models
 * @since 1.0.0
 */
export interface McpBridgeRun {
  /** The run's bearer token (32 random bytes, base64url); refused once the run has ended. */
  readonly token: Redacted.Redacted<string>
  /** The config document for `claude --mcp-config`, carrying the run's token. */
  readonly mcpConfig: McpConfig
  /** Number of MCP sessions currently open with the run's token. */
  readonly sessionCount: Effect.Effect<number>
  /**
   * Runs `effect` so that this run's tool calls served meanwhile are traced as children of its
   * current span and measured with its metric labels, instead of under the span `openRun` ran in:
   * for a run that outlives that span, such as a kept-alive CLI answering turn after turn.
   */
  readonly withRunSpan: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * A running bridge. It stops when the scope that built it closes. It never closes an idle
 * keep-alive connection on its own (clients such as the claude CLI reuse pooled sockets after any
 * gap, and one reused just as the server closed it would lose the call): connections end when
 * their client closes them, when the run they served ends, or when the bridge stops.
 *
 * @category models
 * @since 1.0.0
 */
export interface McpBridgeService {
  /** `http://127.0.0.1:<port>/mcp`. */
  readonly url: string
  /** The bound loopback port. */
  readonly port: number
  /** The bearer token every request must carry (32 random bytes, base64url). */
  readonly token: Redacted.Redacted<string>
  /** The server name used in `mcpConfig`. */
  readonly serverName: string
  /** The config document for `claude --mcp-config`; see {@link renderMcpConfig}. Contains the token. */
  readonly mcpConfig: McpConfig
  /**
   * Replaces the served tools atomically (never merges). Port and token stay the same; connected
   * sessions are told with `notifications/tools/list_changed`. Handlers' requirements `R` come from
   * the caller's context. On an invalid set nothing changes.
   */
  readonly setTools: <R>(tools: ReadonlyArray<Tool<R>>) => Effect.Effect<void, InvalidToolsError, R>
  /** Names of the tools currently served. */
  readonly toolNames: Effect.Effect<ReadonlyArray<string>>
  /** Number of MCP sessions currently open (the bridge's own and every run's). */
  readonly sessionCount: Effect.Effect<number>
  /**
   * Opens a run in the current scope: a token that only lives as long as the scope, for one
   * client process (such as one `claude -p` run). When the scope closes — success, failure,
   * timeout or interruption — the token is revoked, the sessions opened with it are closed, the
   * connections it used are closed, and every tool call they started is interrupted, awaited
   * before the close completes. The bridge's
   * own token, port and lifetime are unaffected. The run's tool calls are traced under the span
   * current here (see {@link McpBridgeRun.withRunSpan}); calls made with the bridge's own token
   * stay under the span that built the bridge.
   */
  readonly openRun: Effect.Effect<McpBridgeRun, never, Scope.Scope>
}

/**
 * The MCP bridge service.
 *
 * @category services
 * @since 1.0.0
 */
export class McpBridge extends Context.Service<McpBridge, McpBridgeService>()("effect-chat-bridge/McpBridge") {}
