/**
 * Live controls for a running Claude Code conversation: stop the turn in progress without losing
 * the process or the session, add a message to it, and retune the conversation (model, permission
 * mode, thinking budget) between or during turns. A Claude Code layer provides `ClaudeLive` next to
 * `ChatClient` and `ClaudeSession`, for the same conversation; for a conversation on the cluster,
 * `ClaudeConversation.live(id)` (or `layerLive(id)`) gives the same service.
 *
 * **Details**
 *
 * With `keepAlive` (or `prewarm`) one `claude` CLI runs the whole conversation and every control is
 * a `control_request` on its stdin, answered by the CLI. On a fresh CLI per turn (the default) only
 * what can wait for the next turn applies (`setModel`, `setPermissionMode`); the rest fails with the
 * `NotKeptAlive` reason, which says to use `keepAlive`.
 *
 * A turn stopped by `interrupt` ends the `chat` call with a `ClaudeLiveError` whose reason is
 * `Interrupted`: the partial answer and the tools that ran. (A `steer` with `when: "now"` replaces
 * the running turn instead: the same `chat` call goes on and returns the steered turn's answer.) The process and the session stay; the next turn continues with the interrupted
 * one in its history, the model told "[Request interrupted by user]" (for a tool: "… for tool use",
 * and the tool's result marked rejected even when it ran — the CLI does not roll side effects back).
 * A tool handler of yours running at that moment is interrupted (unless it is uninterruptible:
 * `Tool.make`'s `uninterruptible` option; then it finishes and its result is dropped).
 *
 * **Gotchas**
 *
 * - Interrupting the fiber of a `chat` still works, and the caller's interruption wins: the CLI is
 *   then asked to stop too, and kept when it does so within a moment.
 * - A steered message is data like any prompt: the CLI passes it to the model verbatim.
 *
 * **Example** (A stop button)
 *
 * ```ts
 * import { Effect, Fiber } from "effect"
 * import { ChatClient, ClaudeLive } from "effect-chat-bridge"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   const live = yield* ClaudeLive.ClaudeLive
 *   const turn = yield* Effect.forkChild(client.chat("Write a long story"))
 *   yield* Effect.sleep("2 seconds")
 *   yield* live.interrupt
 *   return yield* Fiber.join(turn).pipe(
 *     Effect.catchReason("ClaudeLiveError", "Interrupted", (reason) => Effect.succeed(reason.answer))
 *   )
 * })
 * ```
 *
 * @summary Stop, steer and retune a running Claude Code conversation.
 * @group Claude Code
 * @since 2.0.0
 * @module
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { PermissionMode } from "../internal/core/permissionMode.ts"

/**
 * When a steered message reaches the model: folded into the running turn at its next tool
 * boundary (`next`), as its own turn after it (`later`), or in place of it (`now`).
 *
 * @since 2.0.0
 * @category schemas
 */
export const SteerWhen = Schema.Literals(["next", "later", "now"])

/**
 * @since 2.0.0
 * @category models
 */
export type SteerWhen = typeof SteerWhen.Type

/**
 * One row of the context window's breakdown (system prompt, tools, messages, free space, …).
 *
 * @since 2.0.0
 * @category models
 */
export class ContextCategory extends Schema.Class<ContextCategory>("effect-chat-bridge/ClaudeLive/ContextCategory")({
  name: Schema.String,
  tokens: Schema.Number,
  /** `used`, `free`, `buffer` (the compaction reserve) or `deferred`; absent from older CLIs. */
  kind: Schema.optional(Schema.String)
}) {}

/**
 * How full the conversation's context window is, as the CLI counts it.
 *
 * @since 2.0.0
 * @category models
 */
export class ContextUsage extends Schema.Class<ContextUsage>("effect-chat-bridge/ClaudeLive/ContextUsage")({
  totalTokens: Schema.Number,
  maxTokens: Schema.Number,
  percentage: Schema.Number,
  model: Schema.String,
  categories: Schema.Array(ContextCategory)
}) {}

/**
 * An MCP server of the running CLI (the bridge serving your tools among them) and its connection.
 *
 * @since 2.0.0
 * @category models
 */
export class McpServerStatus extends Schema.Class<McpServerStatus>("effect-chat-bridge/ClaudeLive/McpServerStatus")({
  name: Schema.String,
  /** `connected`, `failed`, `needs-auth`, `pending` or `disabled`. */
  status: Schema.String,
  error: Schema.optional(Schema.String)
}) {}

/**
 * A tool call of an interrupted turn: its id, name, and whether its result was an error (the CLI
 * marks a tool stopped mid-run as rejected); `isError` is absent when it had no result yet.
 *
 * @since 2.0.0
 * @category models
 */
export class InterruptedTool extends Schema.Class<InterruptedTool>("effect-chat-bridge/ClaudeLive/InterruptedTool")({
  id: Schema.String,
  name: Schema.String,
  isError: Schema.optional(Schema.Boolean)
}) {}

/**
 * The control needs a kept-alive CLI: the client runs a fresh one per turn.
 *
 * @since 2.0.0
 * @category errors
 */
export class NotKeptAlive extends Schema.TaggedError<NotKeptAlive>()("NotKeptAlive", {
  control: Schema.String
}) {
  /** Whether the same control (or turn) may succeed if tried again. */
  get isRetryable(): boolean {
    return false
  }
  /** What happened and what to do about it. */
  override get message(): string {
    return `${this.control} needs a kept-alive claude CLI; build the client with \`keepAlive: true\``
  }
}

/**
 * `interrupt` or `steer` while no turn runs (for `steer`, also while the running turn is being
 * stopped: the stop drops queued messages, so send the text as the next turn instead).
 *
 * @since 2.0.0
 * @category errors
 */
export class NoRunningTurn extends Schema.TaggedError<NoRunningTurn>()("NoRunningTurn", {
  control: Schema.String
}) {
  /** Whether the same control (or turn) may succeed if tried again. */
  get isRetryable(): boolean {
    return false
  }
  /** What happened and what to do about it. */
  override get message(): string {
    return `${this.control}: no turn is running; send the text with chat instead`
  }
}

/**
 * A control that needs the CLI process while none runs (before the first turn, without `prewarm`,
 * or after a failed turn stopped it).
 *
 * @since 2.0.0
 * @category errors
 */
export class NoProcess extends Schema.TaggedError<NoProcess>()("NoProcess", {
  control: Schema.String
}) {
  /** Whether the same control (or turn) may succeed if tried again. */
  get isRetryable(): boolean {
    return false
  }
  /** What happened and what to do about it. */
  override get message(): string {
    return `${this.control}: no claude CLI is running for this conversation yet; run a turn first (or use \`prewarm\`)`
  }
}

/**
 * The CLI refused the control request; `error` is what it said.
 *
 * @since 2.0.0
 * @category errors
 */
export class Rejected extends Schema.TaggedError<Rejected>()("Rejected", {
  control: Schema.String,
  error: Schema.String
}) {
  /** Whether the same control (or turn) may succeed if tried again. */
  get isRetryable(): boolean {
    return false
  }
  /** What happened and what to do about it. */
  override get message(): string {
    return `The claude CLI refused ${this.control}: ${this.error}`
  }
}

/**
 * The CLI ended, or did not answer the control request in time.
 *
 * @since 2.0.0
 * @category errors
 */
export class NoAnswer extends Schema.TaggedError<NoAnswer>()("NoAnswer", {
  control: Schema.String,
  detail: Schema.String
}) {
  /** Whether the same control (or turn) may succeed if tried again. */
  get isRetryable(): boolean {
    return true
  }
  /** What happened and what to do about it. */
  override get message(): string {
    return `The claude CLI did not answer ${this.control} (${this.detail})`
  }
}

/**
 * The turn was stopped by `interrupt`: what the model had written so far and the tools it called. The process and the session stay, and the next
 * turn has this one in its history.
 *
 * @since 2.0.0
 * @category errors
 */
export class Interrupted extends Schema.TaggedError<Interrupted>()("Interrupted", {
  /** The partial answer: the text of the last assistant message, possibly cut mid-sentence. */
  answer: Schema.String,
  tools: Schema.Array(InterruptedTool),
  /** The CLI's `terminal_reason`: `aborted_streaming` or `aborted_tools`, when it said. */
  terminalReason: Schema.optional(Schema.String),
  /** The session the next turn continues. */
  sessionId: Schema.optional(Schema.String)
}) {
  /** Whether the same control (or turn) may succeed if tried again. */
  get isRetryable(): boolean {
    return false
  }
  /** What happened and what to do about it. */
  override get message(): string {
    return `The turn was interrupted${this.terminalReason === undefined ? "" : ` (${this.terminalReason})`}`
  }
}

/**
 * Why a live control (or an interrupted turn) failed.
 *
 * @since 2.0.0
 * @category schemas
 */
export const ClaudeLiveErrorReason = Schema.Union([
  NotKeptAlive,
  NoRunningTurn,
  NoProcess,
  Rejected,
  NoAnswer,
  Interrupted
])

/**
 * @since 2.0.0
 * @category models
 */
export type ClaudeLiveErrorReason = typeof ClaudeLiveErrorReason.Type

/**
 * A live control failed, or a turn was interrupted (reason `Interrupted`); catch one reason with
 * `Effect.catchReason("ClaudeLiveError", "Interrupted", …)`.
 *
 * @since 2.0.0
 * @category errors
 */
export class ClaudeLiveError extends Schema.TaggedError<ClaudeLiveError>()("ClaudeLiveError", {
  provider: Schema.String,
  reason: ClaudeLiveErrorReason
}) {
  /** Whether the same control (or turn) may succeed if tried again. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
  /** What happened and what to do about it. */
  override get message(): string {
    return `${this.provider}: ${this.reason.message}`
  }
}

/**
 * The live controls of one Claude Code conversation.
 *
 * @since 2.0.0
 * @category models
 */
export interface ClaudeLiveService {
  /**
   * Stops the running turn: its `chat` ends with the `Interrupted` reason (queued `later` messages
   * are dropped). Fails with `NoRunningTurn` when none runs.
   */
  readonly interrupt: Effect.Effect<void, ClaudeLiveError>
  /**
   * Adds `text` to the running turn (see {@link SteerWhen}; default `next`). The running `chat`
   * returns the answer of the last turn it ran; with `now`, the replaced turn's text is dropped.
   * Fails with `NoRunningTurn` when none runs, or when the running one is being stopped.
   */
  readonly steer: (text: string, options?: { readonly when?: SteerWhen | undefined }) => Effect.Effect<
    void,
    ClaudeLiveError
  >
  /** The model of the next request (`undefined`: the CLI's default); kept for later turns and new processes. */
  readonly setModel: (model: string | undefined) => Effect.Effect<void, ClaudeLiveError>
  /**
   * The permission mode of the next tool call (`ToolPolicy.PermissionMode`: the option
   * `permissionMode`'s values); kept for later turns and new processes.
   */
  readonly setPermissionMode: (mode: PermissionMode) => Effect.Effect<void, ClaudeLiveError>
  /** The thinking budget of the next request (`undefined`: the default); kept for new processes. */
  readonly setMaxThinkingTokens: (tokens: number | undefined) => Effect.Effect<void, ClaudeLiveError>
  /** How full the context window is (answered after the running turn, if any). */
  readonly contextUsage: Effect.Effect<ContextUsage, ClaudeLiveError>
  /** The running CLI's MCP servers and their connections. */
  readonly mcpStatus: Effect.Effect<ReadonlyArray<McpServerStatus>, ClaudeLiveError>
}

/**
 * The live controls of the conversation a Claude Code layer (`ClaudeLocal`) provides.
 *
 * @since 2.0.0
 * @category services
 */
export class ClaudeLive extends Context.Service<ClaudeLive, ClaudeLiveService>()("effect-chat-bridge/ClaudeLive") {}

/**
 * Whether `u` is a `ClaudeLiveError` for an interrupted turn.
 *
 * @since 2.0.0
 * @category guards
 */
export const isInterrupted = (u: unknown): u is ClaudeLiveError & { readonly reason: Interrupted } =>
  Schema.is(ClaudeLiveError)(u) && u.reason._tag === "Interrupted"
