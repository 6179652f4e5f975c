/**
 * Approvals that wait for a person: a tool call parked with its conversation until someone
 * approves or denies it — in this process or another one sharing the store, after any restart.
 *
 * **Details**
 *
 * A tool made with `needsApproval: true` asks the provider's `canUseTool` before each call
 * (without one, every call waits). An answer of `ClaudeCodeOptions.defer()` ends the turn with a
 * `ProviderError` whose reason is `ApprovalRequired` (`approvalId`, the session, the tool, its
 * input), and stores a {@link PendingApproval} in the {@link ClaudeApprovalStore}.
 * {@link ClaudeApprovals.approve} or {@link ClaudeApprovals.deny} resumes that session (a new CLI,
 * `--resume`, no user message), runs or refuses the call, and returns the turn's answer.
 *
 * **Gotchas**
 *
 * - One call per turn can wait: a second deferred call of the same turn is denied, and the model
 *   reads why (it may ask again once the first is decided). Calls that are allowed or denied at
 *   once run beside it as usual.
 * - The first decision wins: approving or denying a call that was already decided fails with
 *   `AlreadyDecided`, or returns the stored answer once that decision's turn has finished — the
 *   tool never runs twice.
 * - A pending approval expires `approvalTtl` (default 24 hours) after it was made; then `approve`
 *   and `deny` fail with `ApprovalExpired` and `list` no longer shows it.
 *
 * @summary Tool calls parked until a person approves or denies them, stored with the conversation.
 * @group Chat providers
 * @since 2.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SynchronizedRef from "effect/SynchronizedRef"
import type { ChatError } from "./ChatClient.ts"
import { StoreFailed, StoreUnavailable } from "./ClaudeSessionStore.ts"

/**
 * How long a deferred call waits by default: 24 hours.
 *
 * @category config
 * @since 2.1.0
 */
export const DefaultTtl: Duration.Duration = Duration.hours(24)

/**
 * Where an approval stands: `pending` (waits), `approved` / `denied` (decided, its turn is
 * running or failed), `answered` (its turn finished; `answer` holds the answer).
 *
 * @category schemas
 * @since 2.1.0
 */
export const ApprovalState = Schema.Literals(["pending", "approved", "denied", "answered"])

/**
 * The type of {@link ApprovalState}.
 *
 * @category models
 * @since 2.1.0
 */
export type ApprovalState = typeof ApprovalState.Type

/**
 * A parked tool call, as the store keeps it.
 *
 * @category schemas
 * @since 2.1.0
 */
export class PendingApproval extends Schema.Class<PendingApproval>("effect-chat-bridge/PendingApproval")({
  /** The id `approve` and `deny` take. */
  approvalId: Schema.String,
  /** The client's `projectKey`. */
  projectKey: Schema.String,
  /** The session the call is parked in. */
  sessionId: Schema.String,
  /** The model's tool use id (the CLI asks again with it on resume). */
  toolUseId: Schema.String,
  /** The tool, as the application named it. */
  tool: Schema.String,
  /** The call's input as the model wrote it. */
  input: Schema.Unknown,
  /** Where it stands. */
  state: ApprovalState,
  /** When it was deferred (epoch milliseconds). */
  createdAt: Schema.Number,
  /** When it expires (epoch milliseconds). */
  expiresAt: Schema.Number,
  /** `approve`'s replacement input, once approved with one. */
  updatedInput: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)),
  /** `deny`'s reason, once denied. */
  reason: Schema.optional(Schema.String),
  /** The resumed turn's answer, once `answered`. */
  answer: Schema.optional(Schema.String)
}) {}

/**
 * No approval has this id (or it belongs to another `projectKey`).
 *
 * @category errors
 * @since 2.1.0
 */
export class ApprovalNotFound extends Schema.TaggedError<ApprovalNotFound>(
  "effect-chat-bridge/ApprovalError/ApprovalNotFound"
)("ApprovalNotFound", { message: Schema.String }) {
  /** Not retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * The approval waited longer than `approvalTtl`.
 *
 * @category errors
 * @since 2.1.0
 */
export class ApprovalExpired extends Schema.TaggedError<ApprovalExpired>(
  "effect-chat-bridge/ApprovalError/ApprovalExpired"
)("ApprovalExpired", { message: Schema.String }) {
  /** Not retryable. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Someone already decided the call and its turn has not finished (or failed): nothing runs again.
 *
 * @category errors
 * @since 2.1.0
 */
export class AlreadyDecided extends Schema.TaggedError<AlreadyDecided>(
  "effect-chat-bridge/ApprovalError/AlreadyDecided"
)("AlreadyDecided", { message: Schema.String, state: ApprovalState }) {
  /** Not retryable: the other decision stands. */
  get isRetryable(): boolean {
    return false
  }
}

/**
 * Why an approval operation failed.
 *
 * @category schemas
 * @since 2.1.0
 */
export const ApprovalErrorReason: Schema.Union<[
  typeof ApprovalNotFound,
  typeof ApprovalExpired,
  typeof AlreadyDecided,
  typeof StoreUnavailable,
  typeof StoreFailed
]> = Schema.Union([ApprovalNotFound, ApprovalExpired, AlreadyDecided, StoreUnavailable, StoreFailed])

/**
 * The type of {@link ApprovalErrorReason}.
 *
 * @category models
 * @since 2.1.0
 */
export type ApprovalErrorReason = typeof ApprovalErrorReason.Type

/**
 * An approval could not be found, decided or stored; select a reason with
 * `Effect.catchReason("ApprovalError", "ApprovalExpired", …)`.
 *
 * @category errors
 * @since 2.1.0
 */
export class ApprovalError extends Schema.TaggedError<ApprovalError>()("ApprovalError", {
  /** The approval, when known. */
  approvalId: Schema.optional(Schema.String),
  /** Why. */
  reason: ApprovalErrorReason,
  /** The store's own error, when it failed. */
  cause: Schema.optional(Schema.Defect())
}) {
  /** The reason's message. */
  override get message(): string {
    return this.reason.message
  }

  /** Whether trying again may succeed: the reason's. */
  get isRetryable(): boolean {
    return this.reason.isRetryable
  }
}

/**
 * A decision on a pending approval.
 *
 * @category models
 * @since 2.1.0
 */
export interface Decision {
  /** `approved` runs the call, `denied` refuses it. */
  readonly state: "approved" | "denied"
  /** With `approved`: the input to run the call with instead of the model's. */
  readonly updatedInput?: Readonly<Record<string, unknown>> | undefined
  /** With `denied`: what the model reads. */
  readonly reason?: string | undefined
}

/**
 * Where pending approvals live. `ClaudeSessionStoreSql.layer` provides it beside the session
 * store (a table of its own, migrated with the others); {@link layerMemory} keeps them in memory.
 *
 * @category models
 * @since 2.1.0
 */
export interface ClaudeApprovalStoreService {
  /** Stores a new approval. */
  readonly put: (approval: PendingApproval) => Effect.Effect<void, ApprovalError>
  /** The approval with this id in `projectKey`, if any. */
  readonly get: (projectKey: string, approvalId: string) => Effect.Effect<Option.Option<PendingApproval>, ApprovalError>
  /**
   * Moves a `pending` approval to the decision's state, atomically: `true` for the one caller that
   * moved it, `false` when it was not pending any more.
   */
  readonly decide: (projectKey: string, approvalId: string, decision: Decision) => Effect.Effect<boolean, ApprovalError>
  /** Records the resumed turn's answer (state `answered`). */
  readonly answer: (projectKey: string, approvalId: string, answer: string) => Effect.Effect<void, ApprovalError>
  /** The approvals of `projectKey` (of one session when given), oldest first, in every state. */
  readonly list: (
    projectKey: string,
    sessionId?: string | undefined
  ) => Effect.Effect<ReadonlyArray<PendingApproval>, ApprovalError>
}

/**
 * The store of pending approvals.
 *
 * @category services
 * @since 2.1.0
 */
export class ClaudeApprovalStore extends Context.Service<ClaudeApprovalStore, ClaudeApprovalStoreService>()(
  "effect-chat-bridge/ClaudeApprovalStore"
) {}

/**
 * An approval store in this process's memory: approvals do not survive it. A provider without a
 * `ClaudeApprovalStore` keeps its approvals in one of these.
 *
 * @category constructors
 * @since 2.1.0
 */
export const makeMemory: Effect.Effect<ClaudeApprovalStoreService> = Effect.gen(function*() {
  const ref = yield* SynchronizedRef.make<ReadonlyMap<string, PendingApproval>>(new Map())
  const key = (projectKey: string, id: string) => JSON.stringify([projectKey, id])
  const update = (projectKey: string, id: string, f: (a: PendingApproval) => PendingApproval | undefined) =>
    SynchronizedRef.modify(ref, (all): readonly [boolean, ReadonlyMap<string, PendingApproval>] => {
      const before = all.get(key(projectKey, id))
      const after = before === undefined ? undefined : f(before)
      return after === undefined ? [false, all] : [true, new Map(all).set(key(projectKey, id), after)]
    })
  return ClaudeApprovalStore.of({
    put: (approval) =>
      SynchronizedRef.update(ref, (all) => new Map(all).set(key(approval.projectKey, approval.approvalId), approval)),
    get: (projectKey, id) =>
      Effect.map(SynchronizedRef.get(ref), (all) => Option.fromUndefinedOr(all.get(key(projectKey, id)))),
    decide: (projectKey, id, decision) =>
      update(projectKey, id, (a) =>
        a.state !== "pending" ? undefined : new PendingApproval({
          ...a,
          state: decision.state,
          ...(decision.updatedInput === undefined ? {} : { updatedInput: { ...decision.updatedInput } }),
          ...(decision.reason === undefined ? {} : { reason: decision.reason })
        })),
    answer: (projectKey, id, answer) =>
      Effect.asVoid(update(projectKey, id, (a) => new PendingApproval({ ...a, state: "answered", answer }))),
    list: (projectKey, sessionId) =>
      Effect.map(SynchronizedRef.get(ref), (all) =>
        [...all.values()]
          .filter((a) => a.projectKey === projectKey && (sessionId === undefined || a.sessionId === sessionId))
          .sort((a, b) => a.createdAt - b.createdAt))
  })
})

/**
 * {@link makeMemory} as a layer.
 *
 * @category layers
 * @since 2.1.0
 */
export const layerMemory: Layer.Layer<ClaudeApprovalStore> = Layer.effect(ClaudeApprovalStore, makeMemory)

/**
 * What `approve` takes.
 *
 * @category models
 * @since 2.1.0
 */
export interface ApproveOptions {
  /** Run the call with this input instead of the model's. */
  readonly updatedInput?: Readonly<Record<string, unknown>> | undefined
}

/**
 * Decides parked calls of a Claude Code client's conversations. Each operation continues the
 * approval's session in this client (its tools must serve the parked tool again).
 *
 * @category models
 * @since 2.1.0
 */
export interface ClaudeApprovalsService {
  /**
   * Runs the parked call (with `updatedInput` when given) and returns the resumed turn's answer.
   * Fails with `ApprovalError` (not found, expired, already decided) or the turn's `ChatError`
   * (`ApprovalRequired` again when the resumed turn parks another call).
   */
  readonly approve: (
    approvalId: string,
    options?: ApproveOptions
  ) => Effect.Effect<string, ApprovalError | ChatError>
  /** Refuses the parked call (the model reads `reason`) and returns the resumed turn's answer. */
  readonly deny: (approvalId: string, reason: string) => Effect.Effect<string, ApprovalError | ChatError>
  /** The approvals still waiting (pending, not expired) in the client's project, of one session when given. */
  readonly list: (sessionId?: string | undefined) => Effect.Effect<ReadonlyArray<PendingApproval>, ApprovalError>
}

/**
 * The approvals of the Claude Code client a `ClaudeLocal` or `ClaudeAgent` layer provides (each
 * decides the calls its own provider parked).
 *
 * **Example** (Approving a parked call later)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { ClaudeApprovals } from "effect-chat-bridge"
 *
 * const approveAll = Effect.gen(function*() {
 *   const approvals = yield* ClaudeApprovals.ClaudeApprovals
 *   for (const pending of yield* approvals.list()) {
 *     yield* Effect.log(yield* approvals.approve(pending.approvalId))
 *   }
 * })
 * ```
 *
 * @category services
 * @since 2.1.0
 */
export class ClaudeApprovals extends Context.Service<ClaudeApprovals, ClaudeApprovalsService>()(
  "effect-chat-bridge/ClaudeApprovals"
) {}

/**
 * Approves a parked call with the client in context (see {@link ClaudeApprovalsService.approve}).
 *
 * @category accessors
 * @since 2.1.0
 */
export const approve = Effect.fn("ClaudeApprovals.approve")(function*(approvalId: string, options?: ApproveOptions) {
  const approvals = yield* ClaudeApprovals
  return yield* approvals.approve(approvalId, options)
})

/**
 * Denies a parked call with the client in context (see {@link ClaudeApprovalsService.deny}).
 *
 * @category accessors
 * @since 2.1.0
 */
export const deny = Effect.fn("ClaudeApprovals.deny")(function*(approvalId: string, reason: string) {
  const approvals = yield* ClaudeApprovals
  return yield* approvals.deny(approvalId, reason)
})

/**
 * Lists the approvals still waiting (see {@link ClaudeApprovalsService.list}).
 *
 * @category accessors
 * @since 2.1.0
 */
export const list = Effect.fn("ClaudeApprovals.list")(function*(sessionId?: string) {
  const approvals = yield* ClaudeApprovals
  return yield* approvals.list(sessionId)
})
