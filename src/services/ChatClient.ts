/**
 * The provider-neutral chat contract: a conversation with a model that can call your tools.
 * Every provider layer (`Scripted`, the HTTP providers, the `claude` CLI, `Fallback`) provides it.
 *
 * @summary The provider-neutral chat contract (`chat`, `ask`, `chatStream`, `setTools`) every provider implements.
 * @group Chat
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { ChatEvent } from "./ChatEvent.ts"
import { ClaudeLiveError } from "./ClaudeLive.ts"
import { SessionStoreError } from "./ClaudeSessionStore.ts"
import { type Prompt, UnsupportedContentError } from "./Content.ts"
import { InvalidToolsError, type Tool } from "./Tool.ts"
import { Usage } from "./Usage.ts"

export { Usage }

/**
 * A prompt (or question, or added text) was empty or only whitespace.
 *
 * @category errors
 * @since 1.0.0
 */
export class EmptyPromptError extends Schema.TaggedError<EmptyPromptError>()("EmptyPromptError", {
  /** Says which operation got the empty text. */
  message: Schema.String
}) {}

/**
 * The model still wanted tools after `maxSteps` model turns.
 *
 * @category errors
 * @since 1.0.0
 */
export class MaxStepsError extends Schema.TaggedError<MaxStepsError>()("MaxStepsError", {
  /** The limit that was reached. */
  maxSteps: Schema.Number,
  /** A human-readable summary. */
  message: Schema.String
}) {}

/**
 * `ask` got an answer that does not decode with the requested schema.
 *
 * @category errors
 * @since 1.0.0
 */
export class StructuredOutputError extends Schema.TaggedError<StructuredOutputError>()("StructuredOutputError", {
  /** The decoding error, formatted. */
  message: Schema.String,
  /** The model's answer as text, bounded, for debugging. */
  answer: Schema.String
}) {}

const ReasonMessage = {
  /** What went wrong and, where it helps, what to do about it. Never contains a secret. */
  message: Schema.String
}

const HttpStatus = {
  /** The HTTP status, when the provider answered with one. */
  status: Schema.optional(Schema.Number)
}

/**
 * The provider refused the credentials: HTTP 401/403, or the `claude` CLI's invalid key / not
 * logged in. The message names the variable or command that fixes it. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class AuthenticationError extends Schema.TaggedError<AuthenticationError>()("AuthenticationError", {
  ...ReasonMessage,
  ...HttpStatus
}) {
  /** Not retryable: the credentials must change first. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider rate-limited the request (HTTP 429, or a stream's rate-limit event).
 * `retryAfter` is set when the provider said how long to wait. Retryable.
 *
 * **Details**
 *
 * On the Claude Code providers logged in to a subscription, a spent plan window (five-hour,
 * seven-day, …) is this reason too, with `window` and `resetsAt`: the same request passes once the
 * window resets, or at once on another provider (`Fallback` fails over on it by default).
 *
 * @since 2.0.0
 * @category errors
 */
export class RateLimitError extends Schema.TaggedError<RateLimitError>()("RateLimitError", {
  ...ReasonMessage,
  ...HttpStatus,
  /** How long the provider asked to wait (`retry-after`), when it said. */
  retryAfter: Schema.optional(Schema.Duration),
  /** When the spent plan window resets (Claude Code on a subscription). Since 2.1.0. */
  resetsAt: Schema.optional(Schema.DateTimeUtc),
  /** The spent plan window, as the CLI names it: `five_hour`, `seven_day`, …. Since 2.1.0. */
  window: Schema.optional(Schema.String)
}) {
  /** Retryable: the same request may pass after a while. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The account's quota or credit is used up: OpenAI's `insufficient_quota` (HTTP 429) or
 * Anthropic's "credit balance is too low" (HTTP 400). Not retryable: someone has to add credit
 * or raise the limit first.
 *
 * @since 2.0.0
 * @category errors
 */
export class QuotaExhaustedError extends Schema.TaggedError<QuotaExhaustedError>()("QuotaExhaustedError", {
  ...ReasonMessage,
  ...HttpStatus
}) {
  /** Not retryable: the account must change first. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider rejected the request itself (an HTTP 4xx other than 401, 403, 408 and 429). Not
 * retryable: the same request fails again.
 *
 * @since 2.0.0
 * @category errors
 */
export class InvalidRequestError extends Schema.TaggedError<InvalidRequestError>()("InvalidRequestError", {
  ...ReasonMessage,
  ...HttpStatus
}) {
  /** Not retryable: the request must change first. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider failed on its side: an HTTP 5xx (529, Anthropic's "overloaded", included), or a
 * stream that reported a transient error mid-answer (no `status` then). Retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class InternalProviderError extends Schema.TaggedError<InternalProviderError>()("InternalProviderError", {
  ...ReasonMessage,
  ...HttpStatus,
  /** How long the provider asked to wait (`retry-after`), when it said. */
  retryAfter: Schema.optional(Schema.Duration)
}) {
  /** Retryable: the provider may recover. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The provider could not be reached, or the connection broke off (an HTTP request that never got
 * an answer, a stream cut short, a CLI that could not reach its API, a cluster that could not
 * deliver the turn). `transient: false` marks the failures repeating cannot fix or may make worse:
 * a request that could not be built (bad URL, body that cannot be encoded), or a tool call the
 * `claude` CLI lost on its way to the bridge, whose handler may or may not have run.
 *
 * @since 2.0.0
 * @category errors
 */
export class NetworkError extends Schema.TaggedError<NetworkError>()("NetworkError", {
  ...ReasonMessage,
  /** Whether repeating the request may help; absent means `true`. */
  transient: Schema.optional(Schema.Boolean)
}) {
  /** Retryable unless `transient` is `false`. */
  get isRetryable(): boolean {
    return this.transient !== false
  }
}

/**
 * The call took longer than its bound (`requestTimeout`, a process pool's wait, a scripted turn's
 * bound) or the provider answered HTTP 408. The message names the option that sets the bound.
 * Retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class TimeoutError extends Schema.TaggedError<TimeoutError>()("TimeoutError", {
  ...ReasonMessage,
  ...HttpStatus
}) {
  /** Retryable: a later attempt may finish in time. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The provider answered in a shape we cannot read: a body that is not JSON, a response or stream
 * event that does not match the wire schema, a CLI that printed no result line. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class InvalidResponseError extends Schema.TaggedError<InvalidResponseError>()("InvalidResponseError", {
  ...ReasonMessage
}) {
  /** Not retryable: the same answer is expected again. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider's process failed: the `claude` CLI exited with an error (with `exitCode` when it
 * exited) or reported one in its result line, the Agent SDK's query failed, or the cluster runner
 * hosting a streamed turn stopped. The message carries the CLI's own words (its stderr tail or
 * result). `transient: true` marks the failures a new attempt may pass (a runner that stopped
 * mid-turn); otherwise not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class ProcessError extends Schema.TaggedError<ProcessError>()("ProcessError", {
  ...ReasonMessage,
  /** The process's exit code, when it exited with one. */
  exitCode: Schema.optional(Schema.Number),
  /** Whether a new attempt may pass; absent means `false`. */
  transient: Schema.optional(Schema.Boolean)
}) {
  /** Retryable only when `transient` is `true`. */
  get isRetryable(): boolean {
    return this.transient === true
  }
}

/**
 * The provider is set up wrongly: a missing key or binary, an invalid base URL or option, a CLI
 * too old, a tool server the CLI could not use. The message says what to change. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class ConfigurationError extends Schema.TaggedError<ConfigurationError>()("ConfigurationError", {
  ...ReasonMessage
}) {
  /** Not retryable: the configuration must change first. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * A Claude Code run printed nothing for its `stallTimeout` while the model was answering (no tool
 * or permission decision pending). Its CLI was stopped and the next turn resumes the session.
 * Retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class StalledError extends Schema.TaggedError<StalledError>()("StalledError", {
  ...ReasonMessage
}) {
  /** Retryable: the next turn resumes the session. */
  get isRetryable(): boolean {
    return true
  }
}

/**
 * The turn stopped at a tool call that waits for a person: `canUseTool` answered `defer` (or the
 * tool `needsApproval`). The call is stored with the conversation; `ClaudeApprovals.approve` or
 * `deny` with `approvalId`, from any process sharing the store, resumes the turn and returns its
 * answer. Not retryable: running the turn again does not decide the call.
 *
 * @since 2.1.0
 * @category errors
 */
export class ApprovalRequired extends Schema.TaggedError<ApprovalRequired>()("ApprovalRequired", {
  ...ReasonMessage,
  /** Pass it to `ClaudeApprovals.approve` or `deny`. */
  approvalId: Schema.String,
  /** The session the call is parked in (the conversation's). */
  sessionId: Schema.String,
  /** The tool, as the application named it (bridge tools without their `mcp__<server>__` prefix). */
  tool: Schema.String,
  /** The call's input as the model wrote it. */
  input: Schema.Unknown,
  /**
   * The cluster conversation the call is parked in, when the turn ran through `ClaudeConversation`
   * (approve or deny it there: `ClaudeConversation.approvals(conversationId)`).
   *
   * @since 2.2.0
   */
  conversationId: Schema.optional(Schema.String)
}) {
  /** Not retryable: only an approval or a denial moves the turn on. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * A Claude Code run was asked to resume a session (`resume`, or the session the client carries)
 * and the CLI found no single conversation to load for it: the session is gone, was written under
 * another config dir or working directory, or cannot be read for now. `sessionId` names it. Not
 * retryable: a retry finds the same until that changes (start a new conversation, or resume
 * another session).
 *
 * **Details**
 *
 * claude 2.1.335 and newer say so in the result's `startup_failure_reason`
 * (`resume_target_not_found`); older ones only print "No conversation found with session ID", which
 * is read too.
 *
 * @since 2.1.0
 * @category errors
 */
export class SessionNotFoundError extends Schema.TaggedError<SessionNotFoundError>()("SessionNotFoundError", {
  ...ReasonMessage,
  /** The session id the CLI was asked to resume. */
  sessionId: Schema.String
}) {
  /** Not retryable: the session must exist first. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The provider cannot do what was asked: an option or operation its runtime has no means for
 * (`GeminiCli`'s `keepAlive`, a session snapshot, images), or a prompt its runtime would
 * interpret instead of sending as text. `feature` names it; the message says what to use instead.
 * Not retryable.
 *
 * @since 2.2.0
 * @category errors
 */
export class NotSupportedError extends Schema.TaggedError<NotSupportedError>()("NotSupportedError", {
  ...ReasonMessage,
  /** What is not supported, such as `keepAlive` or `snapshot`. */
  feature: Schema.String
}) {
  /** Not retryable: the same request is refused again. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Any other failure: an HTTP status outside the classes above, a stream error the provider does
 * not mark transient, an answer with nothing in it, a script that ran out of turns. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class UnknownError extends Schema.TaggedError<UnknownError>()("UnknownError", {
  ...ReasonMessage,
  ...HttpStatus
}) {
  /** Not retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Why a provider call failed: one of the reason classes above, each with `isRetryable`. Handle one
 * with `Effect.catchReason("ProviderError", "RateLimitError", …)`.
 *
 * @since 2.0.0
 * @category schemas
 */
export const ProviderErrorReason = Schema.Union([
  AuthenticationError,
  RateLimitError,
  QuotaExhaustedError,
  InvalidRequestError,
  InternalProviderError,
  NetworkError,
  TimeoutError,
  InvalidResponseError,
  ProcessError,
  ConfigurationError,
  StalledError,
  ApprovalRequired,
  UnknownError,
  SessionNotFoundError,
  NotSupportedError
])

/**
 * The type of {@link ProviderErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type ProviderErrorReason = typeof ProviderErrorReason.Type

/**
 * The reason an HTTP status stands for: 401/403 `AuthenticationError`, 408 `TimeoutError`, 429
 * `RateLimitError`, other 4xx `InvalidRequestError`, 5xx `InternalProviderError`, anything else
 * `UnknownError`. (The HTTP providers also read the body: a used-up quota or credit is a
 * `QuotaExhaustedError`.)
 *
 * @since 2.0.0
 * @category constructors
 */
export const reasonFromHttpStatus = (params: {
  readonly status: number
  readonly message: string
  readonly retryAfter?: Duration.Duration | undefined
}): ProviderErrorReason => {
  const { message, retryAfter, status } = params
  const wait = retryAfter === undefined ? {} : { retryAfter }
  if (status === 401 || status === 403) return new AuthenticationError({ message, status })
  if (status === 408) return new TimeoutError({ message, status })
  if (status === 429) return new RateLimitError({ message, status, ...wait })
  if (status >= 400 && status < 500) return new InvalidRequestError({ message, status })
  if (status >= 500 && status < 600) return new InternalProviderError({ message, status, ...wait })
  return new UnknownError({ message, status })
}

/**
 * A provider call failed; `reason` says how (see {@link ProviderErrorReason}). The message is the
 * reason's and never contains a secret.
 *
 * **Details**
 *
 * `isRetryable` is the reason's:
 *
 * | reason | retryable | fields |
 * |---|---|---|
 * | `AuthenticationError` | no | `status?` |
 * | `RateLimitError` | yes | `status?`, `retryAfter?`, `resetsAt?`, `window?` |
 * | `QuotaExhaustedError` | no | `status?` |
 * | `InvalidRequestError` | no | `status?` |
 * | `InternalProviderError` | yes | `status?`, `retryAfter?` |
 * | `NetworkError` | yes, unless `transient: false` | `transient?` |
 * | `TimeoutError` | yes | `status?` (408) |
 * | `InvalidResponseError` | no | |
 * | `ProcessError` | only with `transient: true` | `exitCode?`, `transient?` |
 * | `ConfigurationError` | no | |
 * | `StalledError` | yes | |
 * | `UnknownError` | no | `status?` |
 * | `SessionNotFoundError` | no | `sessionId` |
 * | `NotSupportedError` | no | `feature` |
 *
 * **Gotchas**
 *
 * `isRetryable` says whether the same request may pass later. The HTTP providers' own retries
 * are narrower (408, 429, 500, 502, 503, 504, 529 and connection failures) and so is `Fallback`'s
 * default policy (see `Fallback.defaultPolicy`).
 *
 * **Example** (Waiting out a rate limit)
 *
 * ```ts
 * import { Duration, Effect } from "effect"
 * import { ChatClient } from "effect-chat-bridge"
 *
 * const answer = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   return yield* client.chat("Hello")
 * }).pipe(
 *   Effect.catchReason("ProviderError", "RateLimitError", (reason) =>
 *     Effect.as(Effect.sleep(reason.retryAfter ?? Duration.seconds(1)), "try again later"))
 * )
 * ```
 *
 * @since 2.0.0
 * @category errors
 */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  /** Which provider failed, such as `anthropic` or `claude-local`. */
  provider: Schema.String,
  /** How it failed. */
  reason: ProviderErrorReason
}) {
  /** Whether the same request may succeed later: the reason's. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }

  /** The HTTP status, when the reason has one. */
  get status(): number | undefined {
    return "status" in this.reason ? this.reason.status : undefined
  }

  /** How long the provider asked to wait, when it said. */
  get retryAfter(): Duration.Duration | undefined {
    return "retryAfter" in this.reason ? this.reason.retryAfter : undefined
  }

  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }
}

/**
 * An agent runtime (the `claude` CLI) refused some tool calls for lack of permission. The model's
 * answer is kept in `answer`, so nothing is lost; providers may offer to return it instead.
 *
 * @category errors
 * @since 1.0.0
 */
export class PermissionDeniedError extends Schema.TaggedError<PermissionDeniedError>()("PermissionDeniedError", {
  /** The provider whose runtime refused the calls. */
  provider: Schema.String,
  /** The denied tools, in the order they were denied. */
  tools: Schema.Array(Schema.String),
  /** The model's answer despite the denials. */
  answer: Schema.String,
  /** Names the denied tools and how to allow them. */
  message: Schema.String
}) {}

/**
 * A Claude Code run stopped at a bound the caller set (`maxTurns` or `maxBudgetUsd`). What the
 * model had answered so far and what the run used are kept.
 *
 * @category errors
 * @since 1.0.0
 */
export class RunLimitError extends Schema.TaggedError<RunLimitError>()("RunLimitError", {
  /** The provider whose run stopped. */
  provider: Schema.String,
  /** Which bound was reached. */
  limit: Schema.Literals(["maxTurns", "maxBudgetUsd"]),
  /** The partial answer (may be empty). */
  answer: Schema.String,
  /** What the run used, cost included when known. */
  usage: Usage,
  /** Names the bound and how to raise it. */
  message: Schema.String
}) {}

/**
 * Errors a single provider can fail with (what `FallbackError` collects; nested chains are flattened).
 *
 * @category schemas
 * @since 1.0.0
 */
export const ProviderFailure = Schema.Union([
  EmptyPromptError,
  MaxStepsError,
  StructuredOutputError,
  ProviderError,
  PermissionDeniedError,
  RunLimitError,
  InvalidToolsError,
  UnsupportedContentError,
  SessionStoreError,
  ClaudeLiveError
])
/**
 * The type of {@link ProviderFailure}.
 *
 * @category errors
 * @since 1.0.0
 */
export type ProviderFailure = typeof ProviderFailure.Type

/** Whether a provider's failure says the same request may pass later (errors without `isRetryable` do not). */
const failureIsRetryable = (error: ProviderFailure): boolean => "isRetryable" in error && error.isRetryable === true

const FallbackMessage = {
  /** Lists the providers tried and why each failed (a status or reason, never a provider's message). */
  message: Schema.String
}

const FallbackErrors = {
  /** The providers' errors, in the order they happened. */
  errors: Schema.Array(ProviderFailure)
}

/**
 * Every provider of the chain failed; `errors` holds each one's error in order. Retryable when
 * every one of them is.
 *
 * @since 2.0.0
 * @category errors
 */
export class Exhausted extends Schema.TaggedError<Exhausted>()("Exhausted", {
  ...FallbackMessage,
  ...FallbackErrors
}) {
  /** Retryable when every provider's error is. */
  get isRetryable(): boolean {
    return this.errors.length > 0 && this.errors.every(failureIsRetryable)
  }
}

/**
 * A provider failed after a tool had run, and the chain is strict (`strictToolContext`):
 * replaying the call on the next provider could repeat the tool's side effects. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class RefusedAfterToolRun extends Schema.TaggedError<RefusedAfterToolRun>()("RefusedAfterToolRun", {
  ...FallbackMessage,
  ...FallbackErrors
}) {
  /** Not retryable: a retry would run the tool again. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The chain was built without providers. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class NoProviders extends Schema.TaggedError<NoProviders>()("NoProviders", {
  ...FallbackMessage
}) {
  /** Not retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * None of the chain's providers' layers could be built; the message names each one and why, and
 * `errors` holds those that were provider failures. Not retryable.
 *
 * @since 2.0.0
 * @category errors
 */
export class NoneBuilt extends Schema.TaggedError<NoneBuilt>()("NoneBuilt", {
  ...FallbackMessage,
  ...FallbackErrors
}) {
  /** Not retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Why a fallback chain gave up. Handle one with `Effect.catchReason("FallbackError", "Exhausted", …)`.
 *
 * @since 2.0.0
 * @category schemas
 */
export const FallbackErrorReason = Schema.Union([Exhausted, RefusedAfterToolRun, NoProviders, NoneBuilt])

/**
 * The type of {@link FallbackErrorReason}.
 *
 * @since 2.0.0
 * @category models
 */
export type FallbackErrorReason = typeof FallbackErrorReason.Type

/**
 * A fallback chain gave up; `reason` says why (see {@link FallbackErrorReason}).
 *
 * **Details**
 *
 * | reason | retryable | `errors` |
 * |---|---|---|
 * | `Exhausted` | when every provider's error is | each provider's error, in order |
 * | `RefusedAfterToolRun` | no | the errors so far |
 * | `NoProviders` | no | none |
 * | `NoneBuilt` | no | the build failures that were provider failures |
 *
 * `errors` reads the reason's errors (empty for `NoProviders`).
 *
 * **Example** (Every provider failed)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { ChatClient } from "effect-chat-bridge"
 *
 * const answer = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   return yield* client.chat("Hello")
 * }).pipe(
 *   Effect.catchReason("FallbackError", "Exhausted", (reason) =>
 *     Effect.succeed(`all ${reason.errors.length} providers failed`))
 * )
 * ```
 *
 * @since 2.0.0
 * @category errors
 */
export class FallbackError extends Schema.TaggedError<FallbackError>()("FallbackError", {
  /** Why the chain gave up. */
  reason: FallbackErrorReason
}) {
  /** The reason's `isRetryable`. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }

  /** The providers' errors, in the order they happened (empty for `NoProviders`). */
  get errors(): ReadonlyArray<ProviderFailure> {
    return "errors" in this.reason ? this.reason.errors : []
  }

  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }
}

/**
 * Every error a ChatClient operation can fail with.
 *
 * @category errors
 * @since 1.0.0
 */
export type ChatError =
  | EmptyPromptError
  | MaxStepsError
  | StructuredOutputError
  | ProviderError
  | PermissionDeniedError
  | RunLimitError
  | InvalidToolsError
  | UnsupportedContentError
  | SessionStoreError
  | FallbackError
  | ClaudeLiveError

/**
 * The schema of `ChatError`, for callers that serialise errors.
 *
 * @category schemas
 * @since 1.0.0
 */
export const ChatError = Schema.Union([
  EmptyPromptError,
  MaxStepsError,
  StructuredOutputError,
  ProviderError,
  PermissionDeniedError,
  RunLimitError,
  InvalidToolsError,
  UnsupportedContentError,
  SessionStoreError,
  FallbackError,
  ClaudeLiveError
])

/**
 * A conversation with a model. Prompts are a string or a list of `Content` parts (text, images,
 * PDF documents); a provider that cannot send a part fails with `UnsupportedContentError` before
 * any request. Closing the provider layer's scope closes the client and
 * releases whatever it owns (servers, processes).
 *
 * @category models
 * @since 1.0.0
 */
export interface ChatClientService {
  /** Buffers a user message; it is sent with the next `chat` or `ask` and kept if that call fails. */
  readonly add: (prompt: Prompt) => Effect.Effect<void, ChatError>
  /** Sends a prompt and runs the tool loop until the model answers in text. */
  readonly chat: (prompt: Prompt) => Effect.Effect<string, ChatError>
  /**
   * `chat` as a stream of events: text deltas, tool calls starting and ending, usage, and a final
   * `Complete` whose text equals what `chat` would return. History, the `add` buffer and usage
   * change exactly as with `chat`. Interrupting the consumer cancels the request (or kills the CLI).
   * Every model turn's text is streamed, including text before a tool call; on failure the turn is
   * discarded as `chat` discards it, so a UI should clear what it showed when the stream fails.
   */
  readonly chatStream: (prompt: Prompt) => Stream.Stream<ChatEvent, ChatError>
  /** Asks for an answer shaped by `schema`, decoded with it. The answer joins the history. */
  readonly ask: <A, I>(question: Prompt, schema: Schema.Codec<A, I>) => Effect.Effect<A, ChatError>
  /** Replaces the tool set (never merges). Handlers' requirements come from the caller's context. */
  readonly setTools: <R = never>(tools: ReadonlyArray<Tool<R>>) => Effect.Effect<void, ChatError, R>
  /** Running totals over every call on this client. */
  readonly usage: Effect.Effect<Usage>
}

/**
 * The ChatClient service tag. Provide it with a provider layer (`ClaudeApi`, `OpenAi`, `Gemini`,
 * `ClaudeLocal`, `Fallback`, `Scripted`); every operation fails with a {@link ChatError}.
 *
 * **Example** (A chat whose model calls a tool)
 *
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { ChatClient, Scripted, Tool } from "effect-chat-bridge"
 *
 * const add = Tool.make("add", {
 *   description: "Adds two numbers",
 *   parameters: { a: Schema.Number, b: Schema.Number },
 *   handler: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* ChatClient.ChatClient
 *   yield* client.setTools([add])
 *   return yield* client.chat("What is 1 + 2?")
 * }).pipe(
 *   Effect.provide(Scripted.layer({
 *     script: [Scripted.toolCalls({ name: "add", arguments: { a: 1, b: 2 } }), Scripted.text("3")]
 *   }))
 * )
 * ```
 *
 * @category services
 * @since 1.0.0
 */
export class ChatClient extends Context.Service<ChatClient, ChatClientService>()("effect-chat-bridge/ChatClient") {}
