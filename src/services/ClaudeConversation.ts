/**
 * A Claude Code conversation as an entity of Effect's cluster (`effect/cluster`): each
 * conversation id is one entity, hosted by whichever runner owns its shard, and its turns are
 * persisted RPCs whose primary key is a turn id the caller chooses. A turn sent again with the
 * same id returns the stored reply without a model call; a turn whose runner died before replying
 * is delivered again to the conversation's next runner (at least once), which resumes the session
 * from the `ClaudeSessionStore` and runs it again.
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
 * The entity: one per conversation id.
 *
 * @category services
 * @since 1.0.0
 */
export const ClaudeConversation = Entity.make("ClaudeConversation", [Chat, Ask, ChatStream, GetUsage])

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
        return yield* withPending(prompt, (joined) => rpc.Chat({ turnId, prompt: joined }))
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
            rpc.Ask({
              turnId,
              prompt: joined,
              format: { name: format.name, schema: format.schema as Record<string, Schema.Json>, wrapped }
            })
        )
        return yield* decodeAnswer(schema, raw, wrapped)
      }),
      usage: rpc.Usage().pipe(Effect.withSpan("ClaudeConversation.usage"))
    } satisfies ConversationClient
  })
})

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

/** `StructuredOutputError` is re-exported: `ask` decodes on the caller's side and fails with it. */
export { StructuredOutputError }
