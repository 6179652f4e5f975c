/**
 * A Claude Code conversation served as an AG-UI agent (`@ag-ui/client`'s `HttpAgent`, CopilotKit,
 * …) on `effect/ai`'s `AgUiServer`: `POST <path>` with a `RunAgentInput`, the run's events as
 * Server-Sent Events. AG-UI's `threadId` is the conversation id.
 *
 * **Details**
 *
 * - Each thread is one conversation, built from your `conversation` function on its first run
 *   (a `ClaudeLocal` or `ClaudeAgent` layer with `keepAlive`, with your session store and
 *   `ClaudeProcessPool` if you provide them; or the cluster conversation of the thread's id:
 *   `ClaudeConversation.layerChatClient(id)` + `layerLive(id)` + `layerApprovals(id)`, whose
 *   session the cluster keeps), kept while runs come, and closed
 *   after `idleTimeToLive` without one (Effect's `LayerMap`). A thread closed while idle is built
 *   again with `resume` set to the session its last run left, so it keeps its history.
 * - The history lives with Claude Code: a run sends only the input's trailing user messages (those
 *   after the last message of another role), joined. The rest of `messages`, `tools`, `context`
 *   and `state` are the client's view and are not sent to the model.
 * - Events: `TEXT_MESSAGE_START` / `_CONTENT` / `_END` (text before and after each tool call is its
 *   own message), `TOOL_CALL_START` / `_ARGS` / `_END` and `TOOL_CALL_RESULT` for your tools and
 *   Claude Code's own, inside `RUN_STARTED` … `RUN_FINISHED`. A failed turn ends with `RUN_ERROR`
 *   carrying the typed error's message and its tag as `code` (`ProviderError/RateLimitError`, …);
 *   a turn stopped from elsewhere (`ClaudeLive.interrupt`) ends with `RUN_FINISHED`, outcome
 *   `cancelled`.
 * - **Stop**: a client that aborts the run (closes the request) interrupts the turn; the
 *   conversation and its CLI stay, and the next run has the stopped turn in its history.
 * - **Typing while it works**: a run on a thread whose run is still streaming is steered into it
 *   (`ClaudeLive.steer`, at the next tool boundary). That second run answers at once with
 *   `RUN_FINISHED` and `result: { steered: true }`; the model's answer to it arrives in the first
 *   run's stream. (If the first turn ended meanwhile, the second run is a turn of its own.)
 * - **Approvals**: a turn that parks a tool call (`needsApproval`, `ClaudeCodeOptions.defer()`;
 *   see the approvals docs) ends with `RUN_FINISHED` whose outcome is AG-UI's `interrupt`: one
 *   interrupt with `id` = the approval id, `reason: "tool_approval"`, and the tool and its input
 *   in `metadata["effect-chat-bridge"]`. The client answers with a run on the same thread whose
 *   `resume` is `[{ interruptId, status: "resolved", payload: { approved: true } }]` (approve;
 *   `updatedInput` optional) or `status: "cancelled"` / `approved: false` (deny; `reason`
 *   optional). That run streams the resumed turn's answer as one text message. The approval is in
 *   the store, so this works after a server restart too (with a `ClaudeApprovalStore`, which
 *   `ClaudeSessionStoreSql` provides).
 *
 * **Gotchas**
 *
 * - Everything in the request comes from the client: put authentication in front of the route,
 *   and derive the conversation's options from the server's data, never from the input.
 * - Thread ids are conversation ids (letters, digits, `-`, `_`, up to 128); another id is a `400`.
 *
 * **Example** (Serving ClaudeLocal conversations at `/agent`)
 *
 * ```ts
 * import { HttpRouter } from "effect/http"
 * import { ClaudeLocal } from "effect-chat-bridge"
 * import { ClaudeAgUi } from "effect-chat-bridge/ag-ui"
 *
 * const Agent = ClaudeAgUi.layer({
 *   path: "/agent",
 *   conversation: ({ resume }) => ClaudeLocal.layerNode({ keepAlive: true, resume })
 * })
 *
 * // Provide an HTTP server, e.g. NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 3000 }),
 * // and `Layer.launch` it.
 * export const App = HttpRouter.serve(Agent)
 * ```
 *
 * @summary A Claude Code conversation as an AG-UI agent over HTTP + SSE (stop, steer, approvals).
 * @group effect/ai
 * @since 2.2.0
 * @module
 */
import type * as AgUiSchema from "effect/ai/AgUiSchema"
import * as AgUiServer from "effect/ai/AgUiServer"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpApiError from "effect/http-api/HttpApiError"
import type * as HttpRouter from "effect/http/HttpRouter"
import * as Layer from "effect/Layer"
import * as LayerMap from "effect/LayerMap"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Events from "../internal/agUi/events.ts"
import { ChatClient, type ChatError } from "../services/ChatClient.ts"
import { ClaudeApprovals } from "../services/ClaudeApprovals.ts"
import { ClaudeSession } from "../services/ClaudeCodeOptions.ts"
import { ConversationId } from "../services/ClaudeConversation.ts"
import { ClaudeLive, isInterrupted } from "../services/ClaudeLive.ts"

/**
 * What {@link Options.conversation} is given for a thread.
 *
 * @category models
 * @since 2.2.0
 */
export interface Thread {
  /** AG-UI's `threadId`: the conversation id. */
  readonly threadId: string
  /**
   * The Claude Code session this thread's last run left, when the thread was built before in this
   * process (and closed while idle): pass it as the client's `resume`.
   */
  readonly resume: string | undefined
}

/**
 * Options of {@link make} and {@link layer}.
 *
 * @category config
 * @since 2.2.0
 */
export interface Options<E, R> {
  /** The route. Default `/agent`. */
  readonly path?: HttpRouter.PathInput | undefined
  /**
   * The conversation of a thread: a layer with its `ChatClient` and `ClaudeLive` (a Claude Code
   * layer with `keepAlive`, or the cluster's), and `ClaudeApprovals` for approvals.
   */
  readonly conversation: (thread: Thread) => Layer.Layer<ChatClient | ClaudeLive, E, R>
  /** How long a thread's conversation stays without a run before it is closed. Default 5 minutes. */
  readonly idleTimeToLive?: Duration.Input | undefined
}

/**
 * The default of {@link Options.idleTimeToLive}.
 *
 * @category config
 * @since 2.2.0
 */
export const DefaultIdleTimeToLive: Duration.Duration = Duration.minutes(5)

/**
 * The metadata key under which interrupts carry the parked tool (`{ tool, input }`).
 *
 * @category utils
 * @since 2.2.0
 */
export const MetadataKey: typeof Events.MetadataKey = Events.MetadataKey

/**
 * The `reason` of the interrupt a parked tool call becomes.
 *
 * @category utils
 * @since 2.2.0
 */
export const ApprovalReason: typeof Events.ApprovalReason = Events.ApprovalReason

const isConversationId = Schema.is(ConversationId)

const finished = (input: AgUiSchema.RunAgentInput, result?: unknown): AgUiSchema.Event => ({
  type: "RUN_FINISHED",
  threadId: input.threadId,
  runId: input.runId,
  ...(result === undefined ? {} : { result })
})

/** A whole answer as one text message. */
const textMessage = (messageId: string, text: string): ReadonlyArray<AgUiSchema.Event> =>
  text === "" ? [] : [
    { type: "TEXT_MESSAGE_START", messageId, role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId, delta: text },
    { type: "TEXT_MESSAGE_END", messageId }
  ]

/** The events a failed turn ends with: the approval interrupt, a cancelled run, or `RUN_ERROR`. */
const failed = (input: AgUiSchema.RunAgentInput, error: ChatError): ReadonlyArray<AgUiSchema.Event> => {
  if (isInterrupted(error)) return [Events.cancelled(input)]
  const approval = Events.approvalRequired(error)
  return [approval === undefined ? Events.runError(error) : Events.approvalInterrupt(input, approval)]
}

/**
 * Builds the AG-UI agent: one conversation per thread, in the scope of `make` (closing it closes
 * every conversation). Serve it with `AgUiServer.layerHttp({ path, agent })`, or use {@link layer}.
 *
 * @category constructors
 * @since 2.2.0
 */
export const make = Effect.fn("ClaudeAgUi.make")(function*<E, R>(options: Options<E, R>) {
  // The session each thread's last run left, so a thread closed while idle resumes it.
  const sessions = new Map<string, string>()
  // Runs streaming per thread: a run arriving meanwhile is steered into them.
  const streaming = new Map<string, number>()
  const threads = yield* LayerMap.make(
    (threadId: string) =>
      Layer.unwrap(Effect.sync(() => options.conversation({ threadId, resume: sessions.get(threadId) }))),
    { idleTimeToLive: options.idleTimeToLive ?? DefaultIdleTimeToLive }
  )

  const remember = (threadId: string, context: Context.Context<ChatClient | ClaudeLive>) =>
    Option.match(Context.getOption(context, ClaudeSession), {
      onNone: () => Effect.void,
      onSome: (session) => Effect.map(session.sessionId, Option.map((id) => sessions.set(threadId, id)))
    })

  const turn = (
    input: AgUiSchema.RunAgentInput,
    context: Context.Context<ChatClient | ClaudeLive>,
    text: string
  ): Stream.Stream<AgUiSchema.Event> => {
    const map = Events.makeEventMapper(input.runId)
    return Context.get(context, ChatClient).chatStream(text).pipe(
      Stream.flatMap((event) => Stream.fromIterable(map(event))),
      // A turn may end with a call whose start never came (its input streamed, then refused).
      Stream.concat(Stream.suspend(() => Stream.fromIterable(map.close()))),
      Stream.catch((error) => Stream.fromIterable([...map.close(), ...failed(input, error)])),
      Stream.ensuring(remember(input.threadId, context)),
      Stream.ensuring(Effect.sync(() => {
        const left = (streaming.get(input.threadId) ?? 1) - 1
        if (left === 0) streaming.delete(input.threadId)
        else streaming.set(input.threadId, left)
      })),
      (events) =>
        Stream.unwrap(Effect.sync(() => {
          streaming.set(input.threadId, (streaming.get(input.threadId) ?? 0) + 1)
          return events
        }))
    )
  }

  /** Steers `text` into the thread's running turn; `false` when none runs any more. */
  const steer = (context: Context.Context<ChatClient | ClaudeLive>, text: string) =>
    Context.get(context, ClaudeLive).steer(text).pipe(
      Effect.as(true),
      Effect.catchReason("ClaudeLiveError", "NoRunningTurn", () => Effect.succeed(false))
    )

  const decide = (
    input: AgUiSchema.RunAgentInput,
    context: Context.Context<ChatClient | ClaudeLive>,
    decisions: ReadonlyArray<Events.ResumeDecision>
  ): Stream.Stream<AgUiSchema.Event> => {
    const approvals = Context.getOption(context, ClaudeApprovals)
    if (Option.isNone(approvals)) {
      return Stream.make(Events.runError({
        _tag: "ApprovalsUnavailable",
        message: "This conversation has no ClaudeApprovals service: it cannot decide parked tool calls"
      }))
    }
    return Stream.fromIterable(decisions).pipe(
      Stream.mapEffect((decision) =>
        (decision._tag === "Approve"
          ? approvals.value.approve(decision.approvalId, { updatedInput: decision.updatedInput })
          : approvals.value.deny(decision.approvalId, decision.reason)).pipe(
            Effect.map((answer) => textMessage(`${input.runId}-answer-${decision.approvalId}`, answer)),
            Effect.catch((error) =>
              Effect.succeed(error._tag === "ApprovalError" ? [Events.runError(error)] : failed(input, error))
            )
          )
      ),
      Stream.flatMap(Stream.fromIterable),
      Stream.ensuring(remember(input.threadId, context))
    )
  }

  const events = (input: AgUiSchema.RunAgentInput, context: Context.Context<ChatClient | ClaudeLive>) => {
    const decisions = Events.resumeDecisions(input)
    const text = Events.newUserText(input)
    if (decisions.length > 0) {
      return text === "" ? decide(input, context, decisions) : Stream.concat(
        decide(input, context, decisions),
        turn(input, context, text)
      )
    }
    if (text === "") {
      return Stream.make(Events.runError({
        _tag: "EmptyPromptError",
        message: "The run has no new user message (and no resume entry) to send"
      }))
    }
    if ((streaming.get(input.threadId) ?? 0) === 0) return turn(input, context, text)
    return Stream.unwrap(Effect.match(steer(context, text), {
      onFailure: (error) => Stream.make(Events.runError(error)),
      onSuccess: (steered) => steered ? Stream.make(finished(input, { steered: true })) : turn(input, context, text)
    }))
  }

  const agent: AgUiServer.Agent<R> = {
    run: (input) =>
      isConversationId(input.threadId)
        ? Effect.succeed(
          Stream.unwrap(Effect.map(threads.contextEffect(input.threadId), (context) => events(input, context))).pipe(
            Stream.catch((error) => Stream.make(Events.runError(describe(error))))
          )
        )
        : Effect.fail(new HttpApiError.BadRequest({}))
  }
  return agent
})

/** A thread that could not be built, or a control that failed, as `RUN_ERROR`'s fields. */
const describe = (error: unknown): { readonly _tag: string; readonly message: string } =>
  typeof error === "object" && error !== null && "message" in error
    ? {
      _tag: "_tag" in error ? String(error._tag) : "Error",
      message: String(error.message)
    }
    : { _tag: "Error", message: String(error) }

/**
 * Serves {@link make}'s agent at `options.path` (default `/agent`) on the current `HttpRouter`
 * (`AgUiServer.layerHttp`): provide it to `HttpRouter.serve` with a Node HTTP server layer.
 *
 * @category layers
 * @since 2.2.0
 */
export const layer = <E, R>(options: Options<E, R>) =>
  Layer.unwrap(
    Effect.map(make(options), (agent) => AgUiServer.layerHttp({ path: options.path ?? "/agent", agent }))
  )
