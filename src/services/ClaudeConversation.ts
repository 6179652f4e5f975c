/**
 * A Claude Code conversation as an entity of Effect's cluster (`effect/cluster`): each
 * conversation id is one entity, hosted by whichever runner owns its shard, and its turns are
 * persisted RPCs whose primary key is a turn id the caller chooses. A turn sent again with the
 * same id returns the stored reply without a model call; a turn whose runner died before replying
 * is delivered again to the conversation's next runner (at least once), which resumes the session
 * from the `ClaudeSessionStore` and runs it again.
 *
 * Live controls (`ClaudeLive`'s `interrupt`, `steer`, `setModel`, …) are RPCs too, not persisted,
 * run by the hosting runner beside the running turn ({@link live}).
 *
 * This module holds the protocol (the entity and its RPCs) and the caller's side
 * ({@link client}); the runner's side is `ClaudeConversationRunner`.
 *
 * @summary A Claude Code conversation as a cluster entity: its protocol and the caller's `client`.
 * @group Cluster
 * @since 1.0.0
 * @module
 */
import * as Cause from "effect/Cause"
import type * as ClusterError from "effect/cluster/ClusterError"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as Entity from "effect/cluster/Entity"
import type * as Sharding from "effect/cluster/Sharding"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Rpc from "effect/rpc/Rpc"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { PermissionMode } from "../internal/core/permissionMode.ts"
import { decodeAnswer, responseFormatFor } from "../internal/core/structuredAnswer.ts"
import {
  ChatClient,
  type ChatClientService,
  ChatError,
  ConfigurationError,
  EmptyPromptError,
  NetworkError,
  ProcessError,
  ProviderError,
  StructuredOutputError,
  Usage
} from "./ChatClient.ts"
import { ChatEvent } from "./ChatEvent.ts"
import {
  ApprovalError,
  type ApproveOptions,
  ClaudeApprovals,
  type ClaudeApprovalsService,
  PendingApproval
} from "./ClaudeApprovals.ts"
import {
  ClaudeLive,
  ClaudeLiveError,
  type ClaudeLiveService,
  ContextUsage,
  McpServerStatus,
  NoAnswer,
  SteerWhen
} from "./ClaudeLive.ts"
import { StoreUnavailable } from "./ClaudeSessionStore.ts"
import * as Content from "./Content.ts"

/**
 * Conversation ids name entities and store keys: letters, digits, `-` and `_`, up to 128.
 *
 * @category schemas
 * @since 1.0.0
 */
export const ConversationId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$/, {
    message: "a conversation id is 1 to 128 letters, digits, '-' or '_', not starting with '-'"
  })
)

/**
 * A turn id: the primary key of a persisted turn, unique within its conversation.
 *
 * @category schemas
 * @since 1.0.0
 */
export const TurnId = Schema.String.check(
  Schema.isPattern(/^[\x21-\x7e]{1,200}$/, { message: "a turn id is 1 to 200 printable ASCII characters" })
)

/**
 * The runner could not set the conversation up: its `conversation` function failed, or the
 * conversation id is not one the store can key. Nothing ran; fix the cause and send the turn again.
 *
 * @category errors
 * @since 1.0.0
 */
export class ConversationSetupError extends Schema.TaggedError<ConversationSetupError>()("ConversationSetupError", {
  /** The conversation that could not be set up. */
  conversationId: Schema.String,
  /** What failed and what to do about it. */
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/**
 * Every error a conversation turn can fail with.
 *
 * @category schemas
 * @since 1.0.0
 */
export const TurnError = Schema.Union([ChatError, ConversationSetupError])
/**
 * The type of {@link TurnError}.
 *
 * @category errors
 * @since 1.0.0
 */
export type TurnError = typeof TurnError.Type

/**
 * What `ask` sends: the question and the JSON Schema derived from the caller's schema.
 *
 * @category schemas
 * @since 1.0.0
 */
export const AskFormat = Schema.Struct({
  name: Schema.String,
  schema: Schema.Record(Schema.String, Schema.Json),
  wrapped: Schema.Boolean
})

/**
 * What an `ask` turn returns: the structured answer (when the CLI gave one) and the text.
 *
 * @category schemas
 * @since 1.0.0
 */
export const RawAnswer = Schema.Struct({
  text: Schema.String,
  structured: Schema.optional(Schema.Unknown)
})

const turn = { turnId: TurnId, prompt: Content.Prompt }

/**
 * A `chat` turn (persisted; keyed by `turnId`).
 *
 * @category schemas
 * @since 1.0.0
 */
export const Chat = Rpc.make("Chat", {
  payload: turn,
  success: Schema.String,
  error: TurnError,
  primaryKey: ({ turnId }) => turnId
}).annotate(ClusterSchema.Persisted, true)

/**
 * An `ask` turn (persisted; keyed by `turnId`); the caller decodes the answer with its schema.
 *
 * @category schemas
 * @since 1.0.0
 */
export const Ask = Rpc.make("Ask", {
  payload: { ...turn, format: AskFormat },
  success: RawAnswer,
  error: TurnError,
  primaryKey: ({ turnId }) => turnId
}).annotate(ClusterSchema.Persisted, true)

/**
 * A `chatStream` turn. Not persisted: the cluster keeps a streamed reply's end but not its events,
 * so a re-sent stream would come back empty. The runner's records dedupe it instead: a turn id
 * that finished is answered with its `Complete` event and no model call. A stream cut by a dying
 * runner fails at the caller, who sends it again with the same turn id.
 *
 * @category schemas
 * @since 1.0.0
 */
export const ChatStream = Rpc.make("ChatStream", {
  payload: turn,
  success: ChatEvent,
  error: TurnError,
  stream: true
})

/**
 * The conversation's running usage, over every runner that hosted it.
 *
 * @category schemas
 * @since 1.0.0
 */
export const GetUsage = Rpc.make("Usage", { success: Usage, error: ConversationSetupError })

/**
 * Every error a live control can fail with: the control's own (`ClaudeLiveError`, as on a local
 * client) or the runner's failure to set the conversation up.
 *
 * @category schemas
 * @since 2.1.0
 */
export const ControlError = Schema.Union([ClaudeLiveError, ConversationSetupError])
/**
 * The type of {@link ControlError}.
 *
 * @category errors
 * @since 2.1.0
 */
export type ControlError = typeof ControlError.Type

/**
 * Stops the conversation's running turn (`ClaudeLive.interrupt`). Like every control RPC: not
 * persisted (a control is for the turn running now, not one to run again after a failover), and
 * run by the hosting runner beside the turn, not queued behind it.
 *
 * @category schemas
 * @since 2.1.0
 */
export const Interrupt = Rpc.make("Interrupt", { error: ControlError })

/**
 * Adds a message to the running turn (`ClaudeLive.steer`).
 *
 * @category schemas
 * @since 2.1.0
 */
export const Steer = Rpc.make("Steer", {
  payload: { text: Schema.String, when: Schema.optional(SteerWhen) },
  error: ControlError
})

/**
 * Sets the model of the next request (`ClaudeLive.setModel`; absent: the CLI's default).
 *
 * @category schemas
 * @since 2.1.0
 */
export const SetModel = Rpc.make("SetModel", {
  payload: { model: Schema.optional(Schema.String) },
  error: ControlError
})

/**
 * Sets the permission mode of the next tool call (`ClaudeLive.setPermissionMode`).
 *
 * @category schemas
 * @since 2.1.0
 */
export const SetPermissionMode = Rpc.make("SetPermissionMode", {
  payload: { mode: PermissionMode },
  error: ControlError
})

/**
 * Sets the thinking budget of the next request (`ClaudeLive.setMaxThinkingTokens`; absent: the default).
 *
 * @category schemas
 * @since 2.1.0
 */
export const SetMaxThinkingTokens = Rpc.make("SetMaxThinkingTokens", {
  payload: { tokens: Schema.optional(Schema.Number) },
  error: ControlError
})

/**
 * How full the conversation's context window is (`ClaudeLive.contextUsage`).
 *
 * @category schemas
 * @since 2.1.0
 */
export const GetContextUsage = Rpc.make("ContextUsage", { success: ContextUsage, error: ControlError })

/**
 * The hosting runner's CLI's MCP servers (`ClaudeLive.mcpStatus`).
 *
 * @category schemas
 * @since 2.1.0
 */
export const GetMcpStatus = Rpc.make("McpStatus", { success: Schema.Array(McpServerStatus), error: ControlError })

/**
 * Every error an approval's decision can fail with: the resumed turn's (`ChatError`, with
 * `ApprovalRequired` when it parks another call), the approval's own (`ApprovalError`), or the
 * runner's failure to set the conversation up.
 *
 * @category schemas
 * @since 2.2.0
 */
export const DecisionError = Schema.Union([ChatError, ConversationSetupError, ApprovalError])
/**
 * The type of {@link DecisionError}.
 *
 * @category errors
 * @since 2.2.0
 */
export type DecisionError = typeof DecisionError.Type

/**
 * Approves a call parked in the conversation (`ClaudeApprovals.approve`) and answers the resumed
 * turn's answer. Persisted and keyed by the approval id, like a turn: it waits behind the running
 * turn, the resumed turn runs on the runner hosting the conversation, a runner that dies before
 * replying hands it to the next one, and sending it again returns the stored answer — the tool
 * never runs twice (the approval store's atomic `decide` guards it too).
 *
 * @category schemas
 * @since 2.2.0
 */
export const Approve = Rpc.make("Approve", {
  payload: { approvalId: Schema.String, updatedInput: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)) },
  success: Schema.String,
  error: DecisionError,
  primaryKey: ({ approvalId }) => approvalId
}).annotate(ClusterSchema.Persisted, true)

/**
 * Denies a call parked in the conversation (`ClaudeApprovals.deny`; the model reads `reason`) and
 * answers the resumed turn's answer. Persisted and keyed by the approval id, as {@link Approve}.
 *
 * @category schemas
 * @since 2.2.0
 */
export const Deny = Rpc.make("Deny", {
  payload: { approvalId: Schema.String, reason: Schema.String },
  success: Schema.String,
  error: DecisionError,
  primaryKey: ({ approvalId }) => approvalId
}).annotate(ClusterSchema.Persisted, true)

/**
 * The calls still waiting in the conversation's session (`ClaudeApprovals.list`). A read: not
 * persisted, answered beside a running turn.
 *
 * @category schemas
 * @since 2.2.0
 */
export const ListApprovals = Rpc.make("ListApprovals", {
  success: Schema.Array(PendingApproval),
  error: Schema.Union([ApprovalError, ConversationSetupError])
})

/**
 * The entity: one per conversation id.
 *
 * @category services
 * @since 1.0.0
 */
export const ClaudeConversation = Entity.make("ClaudeConversation", [
  Chat,
  Ask,
  ChatStream,
  GetUsage,
  Interrupt,
  Steer,
  SetModel,
  SetPermissionMode,
  SetMaxThinkingTokens,
  GetContextUsage,
  GetMcpStatus,
  Approve,
  Deny,
  ListApprovals
])

/**
 * Options of one call: the turn id (default: a fresh random one, so a retry must pass it).
 *
 * @category config
 * @since 1.0.0
 */
export interface TurnOptions {
  readonly turnId?: string
}

/**
 * The cluster's own failures while delivering a turn (its mailbox full, its storage down, …).
 *
 * @category errors
 * @since 1.0.0
 */
export type ClusterFailure =
  | ClusterError.MailboxFull
  | ClusterError.AlreadyProcessingMessage
  | ClusterError.PersistenceError
  | ClusterError.EntityNotAssignedToRunner

/**
 * A conversation as an application calls it: `ChatClient`'s operations, with a turn id each.
 *
 * @category models
 * @since 1.0.0
 */
export interface ConversationClient {
  /** Buffers a user message for the next turn (kept here, on the caller's side, until one succeeds). */
  readonly add: (prompt: Content.Prompt) => Effect.Effect<void, EmptyPromptError>
  /** Sends a turn and waits for its answer (wherever the conversation is hosted). */
  readonly chat: (prompt: Content.Prompt, options?: TurnOptions) => Effect.Effect<string, TurnError | ClusterFailure>
  /** `chat` as the turn's events, ending with `Complete`. */
  readonly chatStream: (
    prompt: Content.Prompt,
    options?: TurnOptions
  ) => Stream.Stream<ChatEvent, TurnError | ClusterFailure>
  /**
   * Asks for an answer shaped by `schema`: the runner runs the turn with its JSON Schema, and the
   * answer is decoded here (it joins the conversation's history even when it does not decode).
   */
  readonly ask: <A, I>(
    question: Content.Prompt,
    schema: Schema.Codec<A, I>,
    options?: TurnOptions
  ) => Effect.Effect<A, TurnError | ClusterFailure>
  /** The conversation's usage over every runner that hosted it. */
  readonly usage: Effect.Effect<Usage, ConversationSetupError | ClusterFailure>
  /**
   * The conversation's live controls, run by the runner hosting it beside the running turn (see
   * `ClaudeLive`); {@link live} gives them as a `ClaudeLiveService`.
   */
  readonly controls: ConversationControls
  /**
   * The conversation's parked calls, decided on the runner hosting it (see {@link approvals}).
   *
   * @since 2.2.0
   */
  readonly approvals: ConversationApprovals
}

/**
 * `ClaudeApprovals` of one cluster conversation, with the cluster's own failures typed. A turn
 * through the cluster that parks a call fails with the `ApprovalRequired` reason, its
 * `conversationId` set: the conversation to decide it in.
 *
 * @category models
 * @since 2.2.0
 */
export interface ConversationApprovals {
  /** `ClaudeApprovals.approve`, run where the conversation lives, serialised with its turns. */
  readonly approve: (
    approvalId: string,
    options?: ApproveOptions
  ) => Effect.Effect<string, DecisionError | ClusterFailure>
  /** `ClaudeApprovals.deny`, as {@link ConversationApprovals.approve}. */
  readonly deny: (approvalId: string, reason: string) => Effect.Effect<string, DecisionError | ClusterFailure>
  /** `ClaudeApprovals.list` of the conversation's current session. */
  readonly list: Effect.Effect<
    ReadonlyArray<PendingApproval>,
    ApprovalError | ConversationSetupError | ClusterFailure
  >
}

/**
 * `ClaudeLive`'s controls of one cluster conversation, with the cluster's own failures typed.
 * A control for a conversation no runner hosts sets it up first (so `interrupt` and `steer` then
 * fail with `NoRunningTurn`, and a setting applies to its next turn). Settings last while a runner
 * hosts the conversation: a conversation that went idle, or moved to another runner, starts again
 * from its runner's options.
 *
 * @category models
 * @since 2.1.0
 */
export interface ConversationControls {
  /** `ClaudeLive.interrupt`: the running turn's call fails with the `Interrupted` reason. */
  readonly interrupt: Effect.Effect<void, ControlError | ClusterFailure>
  /** `ClaudeLive.steer`. */
  readonly steer: (
    text: string,
    options?: { readonly when?: SteerWhen | undefined }
  ) => Effect.Effect<void, ControlError | ClusterFailure>
  /** `ClaudeLive.setModel`. */
  readonly setModel: (model: string | undefined) => Effect.Effect<void, ControlError | ClusterFailure>
  /** `ClaudeLive.setPermissionMode`. */
  readonly setPermissionMode: (mode: PermissionMode) => Effect.Effect<void, ControlError | ClusterFailure>
  /** `ClaudeLive.setMaxThinkingTokens`. */
  readonly setMaxThinkingTokens: (tokens: number | undefined) => Effect.Effect<void, ControlError | ClusterFailure>
  /** `ClaudeLive.contextUsage`. */
  readonly contextUsage: Effect.Effect<ContextUsage, ControlError | ClusterFailure>
  /** `ClaudeLive.mcpStatus`. */
  readonly mcpStatus: Effect.Effect<ReadonlyArray<McpServerStatus>, ControlError | ClusterFailure>
}

/**
 * What the caller of a streamed turn sees when the runner hosting it stopped (or moved the
 * conversation) before the turn finished. Persisted turns (`chat`, `ask`) never see it: the
 * cluster runs them again on the conversation's next runner.
 *
 * @category utils
 * @since 1.0.0
 */
export const turnCutShort = (conversationId: string, turnId: string): ProviderError =>
  new ProviderError({
    provider: "claude-cluster",
    reason: new ProcessError({
      message: `The runner hosting conversation ${conversationId} stopped while its streamed turn ${turnId} was ` +
        "running, so the turn was cut short and nothing of it was stored. Sending it again with the same turn id is " +
        "safe: the conversation's next runner runs it from the stored session (or answers it from its records if it " +
        "had finished)",
      transient: true
    })
  })

/**
 * What the caller of a persisted request (`chat`, `ask`, `approve`, `deny`) sees when the cluster
 * stored a bare interrupt as its answer: its runner was interrupted while it ran. The request id
 * is used up (sending it again returns the same answer), so the error says to use a new one.
 *
 * @category utils
 * @since 2.2.0
 */
export const answeredWithInterrupt = (conversationId: string, what: string): ProviderError =>
  new ProviderError({
    provider: "claude-cluster",
    reason: new ProcessError({
      message: `The cluster stored an interrupt as the answer of ${what} of conversation ${conversationId}: its ` +
        "runner was interrupted while it ran, and nothing of it was answered. Send it again with a new id (the " +
        "same id returns this answer again)",
      transient: true
    })
  })

/** A bare interrupt that came back as a persisted request's answer, as a typed error. */
const typedInterrupt = <A, E>(
  send: Effect.Effect<A, E>,
  error: () => ProviderError
): Effect.Effect<A, E | ProviderError> =>
  // The caller's own interruption runs no handler: only an answer that is an interrupt gets here.
  Effect.catchCause(
    send,
    (cause): Effect.Effect<never, E | ProviderError> =>
      Cause.hasInterruptsOnly(cause) ? Effect.fail(error()) : Effect.failCause(cause)
  )

/**
 * Joins buffered prompts and the prompt the way a local client does (text by blank lines).
 *
 * @category utils
 * @since 1.0.0
 */
export const joinPrompts = (prompts: ReadonlyArray<Content.Prompt>): Content.Prompt => {
  if (prompts.length === 1) return prompts[0]!
  if (!prompts.some(Content.hasMedia)) return prompts.map(Content.textOf).filter((t) => t !== "").join("\n\n")
  return prompts.flatMap((p) => typeof p === "string" ? (p === "" ? [] : [Content.text(p)]) : p)
}

const requireText = (what: string, prompt: Content.Prompt) =>
  Content.textOf(prompt).trim() === "" && !Content.hasMedia(prompt)
    ? Effect.fail(new EmptyPromptError({ message: `The ${what} is empty` }))
    : Effect.void

const freshTurnId = Effect.sync(() => crypto.randomUUID())

/**
 * The caller's side: `(conversationId) => ConversationClient`. Needs `Sharding` (a runner's or a
 * client-only cluster layer, see `ClaudeCluster`).
 *
 * @category accessors
 * @since 1.0.0
 */
export const client: Effect.Effect<
  (conversationId: string) => Effect.Effect<ConversationClient, ConversationSetupError>,
  never,
  Sharding.Sharding
> = Effect.gen(function*() {
  const make = yield* ClaudeConversation.client
  return Effect.fnUntraced(function*(conversationId: string) {
    yield* Schema.decodeUnknownEffect(ConversationId)(conversationId).pipe(
      Effect.mapError((issue) =>
        new ConversationSetupError({ conversationId, message: `Invalid conversation id: ${issue.message}` })
      )
    )
    const rpc = make(conversationId)
    const pending = yield* Ref.make<ReadonlyArray<Content.Prompt>>([])
    // The buffered prompts go with the next turn and are dropped only once it succeeded.
    const withPending = <A, E>(prompt: Content.Prompt, send: (joined: Content.Prompt) => Effect.Effect<A, E>) =>
      Effect.flatMap(
        Ref.get(pending),
        (buffered) => Effect.tap(send(joinPrompts([...buffered, prompt])), () => Ref.set(pending, []))
      )
    const turnIdOf = (options?: TurnOptions) =>
      options?.turnId === undefined ? freshTurnId : Effect.succeed(options.turnId)

    return {
      add: (prompt) => Effect.andThen(requireText("added message", prompt), Ref.update(pending, (p) => [...p, prompt])),
      chat: Effect.fn("ClaudeConversation.chat")(function*(prompt: Content.Prompt, options?: TurnOptions) {
        yield* requireText("prompt", prompt)
        const turnId = yield* turnIdOf(options)
        yield* Effect.annotateCurrentSpan({ "conversation.id": conversationId, "conversation.turn_id": turnId })
        return yield* withPending(
          prompt,
          (joined) =>
            typedInterrupt(
              rpc.Chat({ turnId, prompt: joined }),
              () => answeredWithInterrupt(conversationId, `turn ${turnId}`)
            )
        )
      }),
      chatStream: (prompt, options) =>
        Stream.unwrap(Effect.gen(function*() {
          yield* requireText("prompt", prompt)
          const turnId = yield* turnIdOf(options)
          const buffered = yield* Ref.get(pending)
          return rpc.ChatStream({ turnId, prompt: joinPrompts([...buffered, prompt]) }).pipe(
            Stream.tap((event) => event._tag === "Complete" ? Ref.set(pending, []) : Effect.void),
            // The runner interrupted the turn (it stopped, or the conversation moved): say so.
            Stream.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Stream.fail(turnCutShort(conversationId, turnId))
                : Stream.failCause(cause)
            )
          )
        })).pipe(
          Stream.withSpan("ClaudeConversation.chatStream", { attributes: { "conversation.id": conversationId } })
        ),
      ask: Effect.fn("ClaudeConversation.ask")(function*<A, I>(
        question: Content.Prompt,
        schema: Schema.Codec<A, I>,
        options?: TurnOptions
      ) {
        yield* requireText("question", question)
        const { format, wrapped } = yield* responseFormatFor(schema)
        const turnId = yield* turnIdOf(options)
        yield* Effect.annotateCurrentSpan({ "conversation.id": conversationId, "conversation.turn_id": turnId })
        const raw = yield* withPending(
          question,
          (joined) =>
            typedInterrupt(
              rpc.Ask({
                turnId,
                prompt: joined,
                format: { name: format.name, schema: format.schema as Record<string, Schema.Json>, wrapped }
              }),
              () => answeredWithInterrupt(conversationId, `turn ${turnId}`)
            )
        )
        return yield* decodeAnswer(schema, raw, wrapped)
      }),
      usage: rpc.Usage().pipe(Effect.withSpan("ClaudeConversation.usage")),
      controls: controlsOf(conversationId, rpc),
      approvals: approvalsOf(conversationId, rpc)
    } satisfies ConversationClient
  })
})

/** The control RPCs of one conversation's entity client, each in a span named after its `ClaudeLive` method. */
const controlsOf = (
  conversationId: string,
  rpc: ReturnType<Effect.Success<typeof ClaudeConversation.client>>
): ConversationControls => {
  const span = (name: string) =>
    Effect.withSpan(`ClaudeConversation.${name}`, { attributes: { "conversation.id": conversationId } })
  return {
    interrupt: rpc.Interrupt().pipe(span("interrupt")),
    steer: (text, options) =>
      rpc.Steer(options?.when === undefined ? { text } : { text, when: options.when }).pipe(span("steer")),
    setModel: (model) => rpc.SetModel(model === undefined ? {} : { model }).pipe(span("setModel")),
    setPermissionMode: (mode) => rpc.SetPermissionMode({ mode }).pipe(span("setPermissionMode")),
    setMaxThinkingTokens: (tokens) =>
      rpc.SetMaxThinkingTokens(tokens === undefined ? {} : { tokens }).pipe(span("setMaxThinkingTokens")),
    contextUsage: rpc.ContextUsage().pipe(span("contextUsage")),
    mcpStatus: rpc.McpStatus().pipe(span("mcpStatus"))
  }
}

/** The approval RPCs of one conversation's entity client. */
const approvalsOf = (
  conversationId: string,
  rpc: ReturnType<Effect.Success<typeof ClaudeConversation.client>>
): ConversationApprovals => {
  const cutShort = (approvalId: string) => () => answeredWithInterrupt(conversationId, `the decision on ${approvalId}`)
  const span = (name: string, approvalId?: string) =>
    Effect.withSpan(`ClaudeConversation.${name}`, {
      attributes: { "conversation.id": conversationId, ...(approvalId === undefined ? {} : { approvalId }) }
    })
  return {
    approve: (approvalId, options) =>
      typedInterrupt(
        rpc.Approve(
          options?.updatedInput === undefined ?
            { approvalId } :
            { approvalId, updatedInput: { ...options.updatedInput } }
        ),
        cutShort(approvalId)
      ).pipe(span("approve", approvalId)),
    deny: (approvalId, reason) =>
      typedInterrupt(rpc.Deny({ approvalId, reason }), cutShort(approvalId)).pipe(span("deny", approvalId)),
    list: rpc.ListApprovals().pipe(span("listApprovals"))
  }
}

const provider = "claude-cluster"

/**
 * A setup or cluster failure in `ChatClient`'s terms: a `ProviderError` saying what to do.
 *
 * @category utils
 * @since 1.0.0
 */
export const toChatError = (error: TurnError | ClusterFailure): ChatError => {
  switch (error._tag) {
    case "ConversationSetupError":
      return new ProviderError({ provider, reason: new ConfigurationError({ message: error.message }) })
    case "MailboxFull":
    case "AlreadyProcessingMessage":
    case "PersistenceError":
    case "EntityNotAssignedToRunner":
      return new ProviderError({
        provider,
        reason: new NetworkError({
          message: `The cluster could not deliver the turn (${error._tag}); try again shortly. If it keeps failing, ` +
            "check that a runner is up and that every member uses the same ClaudeCluster options"
        })
      })
    default:
      return error
  }
}

/**
 * A conversation as a `ChatClient`, for code written against that contract: each call is a turn
 * with a fresh turn id, and the cluster's and setup failures are `ProviderError`s. `setTools`
 * fails: a cluster conversation's tools come from the runner's `conversation` function. `usage`
 * cannot fail in that contract, so it is `Usage.empty` while the cluster cannot answer.
 *
 * @category constructors
 * @since 1.0.0
 */
export const chatClient: (
  conversationId: string
) => Effect.Effect<ChatClientService, ConversationSetupError, Sharding.Sharding> = Effect.fnUntraced(
  function*(conversationId: string) {
    const conversation = yield* Effect.flatMap(client, (make) => make(conversationId))
    return ChatClient.of({
      add: conversation.add,
      chat: (prompt) => Effect.mapError(conversation.chat(prompt), toChatError),
      chatStream: (prompt) => Stream.mapError(conversation.chatStream(prompt), toChatError),
      ask: (question, schema) => Effect.mapError(conversation.ask(question, schema), toChatError),
      setTools: () =>
        Effect.fail(
          new ProviderError({
            provider,
            reason: new ConfigurationError({
              message: `The tools of cluster conversation ${conversationId} are set by the runner's \`conversation\` ` +
                "function (ClaudeConversationRunner.layer), not by the caller"
            })
          })
        ),
      usage: conversation.usage.pipe(Effect.orElseSucceed(() => Usage.empty))
    })
  }
)

/**
 * {@link chatClient} as a layer: `ChatClient` for one conversation of the cluster.
 *
 * @category layers
 * @since 1.0.0
 */
export const layerChatClient = (
  conversationId: string
): Layer.Layer<ChatClient, ConversationSetupError, Sharding.Sharding> =>
  Layer.effect(ChatClient, chatClient(conversationId))

/**
 * A control's setup or cluster failure in `ClaudeLive`'s terms: the `NoAnswer` reason (retryable),
 * its detail saying what failed.
 *
 * @category utils
 * @since 2.1.0
 */
export const toLiveError = (control: string) => (error: ControlError | ClusterFailure): ClaudeLiveError => {
  switch (error._tag) {
    case "ClaudeLiveError":
      return error
    case "ConversationSetupError":
      return new ClaudeLiveError({ provider, reason: new NoAnswer({ control, detail: error.message }) })
    default:
      return new ClaudeLiveError({
        provider,
        reason: new NoAnswer({
          control,
          detail: `the cluster could not deliver it (${error._tag}); try again shortly. If it keeps failing, check ` +
            "that a runner is up and that every member uses the same ClaudeCluster options"
        })
      })
  }
}

/**
 * A cluster conversation's live controls as a `ClaudeLiveService`, for code written against
 * `ClaudeLive`: each control reaches the runner hosting the conversation, and the cluster's and
 * setup failures are the `NoAnswer` reason. See {@link ConversationControls} for what a control
 * does to a conversation no runner hosts.
 *
 * **Example** (A stop button for a conversation hosted anywhere in the cluster)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { ClaudeConversation } from "effect-chat-bridge/cluster"
 *
 * const stop = (conversationId: string) =>
 *   Effect.gen(function*() {
 *     const live = yield* ClaudeConversation.live(conversationId)
 *     yield* live.interrupt
 *   })
 * ```
 *
 * @category constructors
 * @since 2.1.0
 */
export const live: (
  conversationId: string
) => Effect.Effect<ClaudeLiveService, ConversationSetupError, Sharding.Sharding> = Effect.fnUntraced(
  function*(conversationId: string) {
    const { controls } = yield* Effect.flatMap(client, (make) => make(conversationId))
    return ClaudeLive.of({
      interrupt: Effect.mapError(controls.interrupt, toLiveError("interrupt")),
      steer: (text, options) => Effect.mapError(controls.steer(text, options), toLiveError("steer")),
      setModel: (model) => Effect.mapError(controls.setModel(model), toLiveError("setModel")),
      setPermissionMode: (mode) => Effect.mapError(controls.setPermissionMode(mode), toLiveError("setPermissionMode")),
      setMaxThinkingTokens: (tokens) =>
        Effect.mapError(controls.setMaxThinkingTokens(tokens), toLiveError("setMaxThinkingTokens")),
      contextUsage: Effect.mapError(controls.contextUsage, toLiveError("contextUsage")),
      mcpStatus: Effect.mapError(controls.mcpStatus, toLiveError("mcpStatus"))
    })
  }
)

/**
 * {@link live} as a layer: `ClaudeLive` for one conversation of the cluster (beside
 * {@link layerChatClient} for the same id, code written for a local Claude Code client runs as is).
 *
 * @category layers
 * @since 2.1.0
 */
export const layerLive = (conversationId: string): Layer.Layer<ClaudeLive, ConversationSetupError, Sharding.Sharding> =>
  Layer.effect(ClaudeLive, live(conversationId))

/**
 * A listing's setup or cluster failure in `ClaudeApprovals`' terms: the `StoreUnavailable` reason
 * (retryable), saying what failed.
 *
 * @category utils
 * @since 2.2.0
 */
export const toApprovalError = (
  error: ApprovalError | ConversationSetupError | ClusterFailure
): ApprovalError =>
  error._tag === "ApprovalError" ? error : new ApprovalError({
    reason: new StoreUnavailable({
      message: error._tag === "ConversationSetupError"
        ? error.message
        : `The cluster could not deliver the request (${error._tag}); try again shortly`
    })
  })

const toDecisionError = (error: DecisionError | ClusterFailure): ApprovalError | ChatError =>
  error._tag === "ApprovalError" ? error : toChatError(error)

/**
 * A cluster conversation's approvals as a `ClaudeApprovalsService`, for code written against
 * `ClaudeApprovals`: `approve` and `deny` run on the runner hosting the conversation, serialised
 * with its turns; `list` lists the conversation's session (its `sessionId` argument is ignored).
 * The cluster's and setup failures are `ProviderError`s (`approve`, `deny`) or the
 * `StoreUnavailable` reason (`list`).
 *
 * **Example** (Approving a call a cluster turn parked)
 *
 * ```ts
 * import { Effect } from "effect"
 * import { ChatClient } from "effect-chat-bridge"
 * import { ClaudeConversation } from "effect-chat-bridge/cluster"
 *
 * const chatApproving = (conversationId: string, prompt: string) =>
 *   Effect.gen(function*() {
 *     const conversation = yield* Effect.flatMap(ClaudeConversation.client, (make) => make(conversationId))
 *     return yield* conversation.chat(prompt).pipe(
 *       Effect.catchReason("ProviderError", "ApprovalRequired", (parked) =>
 *         Effect.flatMap(ClaudeConversation.approvals(parked.conversationId ?? conversationId), (approvals) =>
 *           approvals.approve(parked.approvalId)))
 *     )
 *   })
 * ```
 *
 * @category constructors
 * @since 2.2.0
 */
export const approvals: (
  conversationId: string
) => Effect.Effect<ClaudeApprovalsService, ConversationSetupError, Sharding.Sharding> = Effect.fnUntraced(
  function*(conversationId: string) {
    const conversation = yield* Effect.flatMap(client, (make) => make(conversationId))
    return ClaudeApprovals.of({
      approve: (approvalId, options) =>
        Effect.mapError(conversation.approvals.approve(approvalId, options), toDecisionError),
      deny: (approvalId, reason) => Effect.mapError(conversation.approvals.deny(approvalId, reason), toDecisionError),
      list: () => Effect.mapError(conversation.approvals.list, toApprovalError)
    })
  }
)

/**
 * {@link approvals} as a layer: `ClaudeApprovals` for one conversation of the cluster (beside
 * {@link layerChatClient} for the same id, code written against a local Claude Code client's
 * approvals runs as is).
 *
 * @category layers
 * @since 2.2.0
 */
export const layerApprovals = (
  conversationId: string
): Layer.Layer<ClaudeApprovals, ConversationSetupError, Sharding.Sharding> =>
  Layer.effect(ClaudeApprovals, approvals(conversationId))

/** `StructuredOutputError` is re-exported: `ask` decodes on the caller's side and fails with it. */
export { StructuredOutputError }
