/**
 * Durable approvals on a Claude Code client: the deferring `PreToolUse` hook (the gate) for tools
 * that `needsApproval`, the record stored when a turn ends on a deferred call, and `approve` /
 * `deny`, which resume that session with no user message so the CLI asks the gate again.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { closeSync, fstatSync, openSync, readSync } from "node:fs"
import { ApprovalRequired, type ChatError, ProviderError } from "../../services/ChatClient.ts"
import {
  AlreadyDecided,
  ApprovalError,
  ApprovalExpired,
  ApprovalNotFound,
  type ClaudeApprovalsService,
  type ClaudeApprovalStoreService,
  type Decision,
  DefaultTtl,
  PendingApproval
} from "../../services/ClaudeApprovals.ts"
import type { CanUseTool, PermissionDecision } from "../../services/ClaudeCodeOptions.ts"
import * as ClaudeHooks from "../../services/ClaudeHooks.ts"
import { SessionStoreError, StoreFailed } from "../../services/ClaudeSessionStore.ts"
import type * as Tool from "../../services/Tool.ts"
import { decide } from "./codeRun.ts"

/** The call a result line says the turn ended on (`deferred_tool_use`). */
export interface DeferredUse {
  readonly id: string
  readonly name: string
  readonly input: unknown
}

/** What the model reads for a second deferred call of one turn (the CLI keeps only one parked). */
export const oneAtATime =
  "This call needs an approval, and another call of this turn already waits for one; it was not run. " +
  "Call it again once that one is decided."

/**
 * What the model reads for a call that needs an approval in a message with other tool calls: the
 * CLI parks a call reliably only when it is its message's one tool call (with others, the parked
 * call can be lost from the resumed session), so such a call is decided at once.
 */
export const notAlone =
  "This call needs an approval, which can wait only when it is the only tool call of its message; " +
  "it was not run. Call it again on its own."

/**
 * The model's messages as the run's stdout shows them (every run streams partial messages): which
 * message each tool call belongs to, and, once the message has ended (`message_delta` with its
 * stop reason, or `message_stop`), how many tool calls it made.
 *
 * **Details**
 *
 * Checked on claude 2.1.335: the CLI may ask the hooks for a message's first call before the
 * message's later blocks have streamed (it runs tools as their blocks complete), and stdout and
 * the hook's HTTP request race each other; so the gate waits for the message's end here instead of
 * for a fixed time.
 */
export interface Batches {
  /** Feeds one parsed stdout message of a run. */
  readonly observe: (json: unknown) => void
  /**
   * The number of tool calls in the message holding `toolUseId`, once the stream has shown that
   * message's end; `undefined` when it has not within `wait`.
   */
  readonly size: (toolUseId: string, wait: Duration.Input) => Effect.Effect<number | undefined>
}

/** How many ended messages {@link makeBatches} remembers (a hook asks about the latest ones). */
const RememberedMessages = 256

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined)

/** A {@link Batches} for one client (tool use ids are unique across its sessions). */
export const makeBatches = (): Batches => {
  const calls = new Map<string, Set<string>>()
  const messageOf = new Map<string, string>()
  const ended = new Set<string>()
  const listeners = new Set<() => void>()
  // The message being streamed, for stream events that do not name theirs.
  const current = new Map<string, string>()
  const add = (message: string, id: string) => {
    calls.set(message, (calls.get(message) ?? new Set()).add(id))
    messageOf.set(id, message)
  }
  const end = (message: string) => {
    ended.add(message)
    if (calls.size > RememberedMessages) {
      const [oldest] = calls.keys()
      for (const id of calls.get(oldest!) ?? []) messageOf.delete(id)
      calls.delete(oldest!)
      ended.delete(oldest!)
    }
    for (const listener of [...listeners]) listener()
  }
  const observe = (json: unknown) => {
    const parent = text(field(json, "parent_tool_use_id")) ?? ""
    if (field(json, "type") === "stream_event") {
      const event = field(json, "event")
      const type = field(event, "type")
      if (type === "message_start") {
        const id = text(field(field(event, "message"), "id"))
        if (id !== undefined) current.set(parent, id)
      }
      const message = text(field(json, "api_message_id")) ?? current.get(parent)
      if (message === undefined) return
      const block = field(event, "content_block")
      const blockId = text(field(block, "id"))
      if (type === "content_block_start" && field(block, "type") === "tool_use" && blockId !== undefined) {
        add(message, blockId)
      } else if (type === "message_stop" || (type === "message_delta" && field(field(event, "delta"), "stop_reason"))) {
        if (type === "message_stop") current.delete(parent)
        end(message)
      }
    } else if (field(json, "type") === "assistant") {
      const message = text(field(field(json, "message"), "id"))
      const content = field(field(json, "message"), "content")
      if (message === undefined || !Array.isArray(content)) return
      for (const block of content) {
        const id = text(field(block, "id"))
        if (field(block, "type") === "tool_use" && id !== undefined) add(message, id)
      }
    }
  }
  const known = (toolUseId: string) => {
    const message = messageOf.get(toolUseId)
    return message !== undefined && ended.has(message) ? calls.get(message)?.size : undefined
  }
  const size = (toolUseId: string, wait: Duration.Input) =>
    Effect.callback<number>((resume) => {
      const check = () => {
        const n = known(toolUseId)
        if (n === undefined) return
        listeners.delete(check)
        resume(Effect.succeed(n))
      }
      listeners.add(check)
      check()
      return Effect.sync(() => listeners.delete(check))
    }).pipe(Effect.timeoutOption(wait), Effect.map(Option.getOrUndefined))
  return { observe, size }
}

/**
 * How many tool calls the model's message holding `toolUseId` makes, read from the session's
 * transcript (the CLI writes a message's blocks, one entry each, before it asks the hooks); 1 when
 * the transcript does not show it. The fallback when the stream did not show the message's end.
 */
export const callsInMessage = (transcriptPath: string, toolUseId: string): number => {
  const text = transcriptTail(transcriptPath)
  if (text === undefined) return 1
  const uses = new Map<string, Set<string>>()
  let messageId: string | undefined
  for (const line of text.split("\n")) {
    if (!line.includes("\"tool_use\"")) continue
    try {
      const entry = JSON.parse(line) as { message?: { id?: unknown; content?: unknown } }
      const id = entry.message?.id
      if (typeof id !== "string" || !Array.isArray(entry.message?.content)) continue
      for (const block of entry.message.content as Array<{ type?: unknown; id?: unknown }>) {
        if (block.type !== "tool_use" || typeof block.id !== "string") continue
        uses.set(id, (uses.get(id) ?? new Set()).add(block.id))
        if (block.id === toolUseId) messageId = id
      }
    } catch {
      // A line the CLI is still writing.
    }
  }
  return messageId === undefined ? 1 : uses.get(messageId)?.size ?? 1
}

/** The message being answered is at the end of its transcript: read only the end of a long one. */
const TailBytes = 1024 * 1024

/** The last {@link TailBytes} of a file (its first line may be cut: it does not parse and is skipped). */
const transcriptTail = (path: string): string | undefined => {
  let fd: number | undefined
  try {
    fd = openSync(path, "r")
    const size = fstatSync(fd).size
    const length = Math.min(size, TailBytes)
    const buffer = Buffer.alloc(length)
    readSync(fd, buffer, 0, length, size - length)
    return buffer.toString("utf8")
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/**
 * How long the gate waits for the stream to show the end of a deferred call's message (its other
 * calls may still be streaming); then it falls back to the transcript.
 */
const streamWait = Duration.seconds(10)

/** With the transcript fallback: how long the CLI gets to write a message's other calls. */
const settle = Duration.millis(300)

/** The hook route the gate is served on (beside the application's numbered hooks). */
export const GateRoute = "approval"

/** The deferring hook and what it keeps between a turn and its resumption. */
export interface Gate {
  /** Answers for calls the CLI replays on resume, by tool use id (set by `approve` / `deny`). */
  readonly replays: Map<string, Decision>
  /** The call deferred in a running turn, by session id: one per turn. */
  readonly deferred: Map<string, string>
  /** What the runs' stdout shows of the model's messages: feed it every parsed message. */
  readonly batches: Batches
  /** Answers one `PreToolUse` HTTP hook call (the wire output). */
  readonly hook: (raw: unknown) => Effect.Effect<unknown, unknown>
}

const decodeInput = Schema.decodeUnknownEffect(ClaudeHooks.PreToolUseInput)

const wire = (output: ClaudeHooks.Output<"PreToolUse">) => ClaudeHooks.toWire("PreToolUse", output)

/**
 * The gate. `decidedDenials` learns each call it refuses (the application's decision, not a
 * failure of the run).
 */
export const makeGate = (canUseTool: CanUseTool | undefined, decidedDenials: Set<string>): Gate => {
  const replays = new Map<string, Decision>()
  const deferred = new Map<string, string>()
  const batches = makeBatches()
  const refuse = (id: string, reason: string) => {
    decidedDenials.add(id)
    return wire({ permissionDecision: "deny", permissionDecisionReason: reason })
  }
  const hook = Effect.fnUntraced(function*(raw: unknown) {
    const input = yield* decodeInput(raw)
    const id = input.tool_use_id
    const replay = replays.get(id)
    if (replay !== undefined) {
      replays.delete(id)
      return replay.state === "approved"
        ? wire({
          permissionDecision: "allow",
          ...(replay.updatedInput === undefined ? {} : { updatedInput: { ...replay.updatedInput } })
        })
        : refuse(id, replay.reason ?? "Denied.")
    }
    const request = {
      toolName: input.tool_name,
      input: typeof input.tool_input === "object" && input.tool_input !== null
        ? input.tool_input as Record<string, unknown>
        : {},
      toolUseId: id
    }
    const decision: PermissionDecision = canUseTool === undefined
      ? { _tag: "Defer" }
      : yield* decide(canUseTool, request)
    switch (decision._tag) {
      case "Allow":
        return wire({
          permissionDecision: "allow",
          ...(decision.updatedInput === undefined ? {} : { updatedInput: { ...decision.updatedInput } })
        })
      case "Deny":
        return refuse(id, decision.message)
      case "Defer": {
        // The CLI may ask before the message's other calls have streamed: count them once the
        // stream shows its end; the transcript only when it did not.
        const streamed = yield* batches.size(id, streamWait)
        const calls = streamed ?? (yield* Effect.as(Effect.sleep(settle), callsInMessage(input.transcript_path, id)))
        if (calls > 1) return refuse(id, notAlone)
        // Checked and set in one synchronous step: the CLI may ask for a batch's calls at once.
        const parked = deferred.get(input.session_id)
        if (parked !== undefined && parked !== id) return refuse(id, oneAtATime)
        deferred.set(input.session_id, id)
        return wire({ permissionDecision: "defer" })
      }
    }
  })
  return { replays, deferred, batches, hook }
}

/** The `--settings` hook entry sending the approval tools' calls to the gate; none without such tools. */
export const gateSettings = (
  toolPrefix: string,
  tools: ReadonlyArray<Tool.Tool>,
  url: string,
  token: string
) => {
  const names = tools.filter((tool) => tool.needsApproval === true).map((tool) => `${toolPrefix}${tool.name}`)
  return names.length === 0 ? undefined : {
    // Anchored: a Claude Code matcher is a regex, and tool names are `[A-Za-z0-9_-]` only.
    matcher: `^(${names.join("|")})$`,
    hooks: [{ type: "http", url, headers: { Authorization: `Bearer ${token}` } }]
  }
}

/** What a client's approvals need of it. */
export interface ApprovalsParams {
  readonly provider: string
  readonly gate: Gate
  readonly store: ClaudeApprovalStoreService
  readonly projectKey: string
  readonly toolPrefix: string
  readonly ttl: Duration.Input | undefined
  /** Resumes `sessionId` with no user message in the client's conversation: the turn's answer. */
  readonly replay: (sessionId: string) => Effect.Effect<string, ChatError>
}

/** The turn's error when its parked call could not be stored: the session store's kind. */
const storeFailed = (error: ApprovalError) =>
  new SessionStoreError({
    operation: "append",
    reason: error.reason._tag === "StoreUnavailable" ? error.reason : new StoreFailed({ message: error.message }),
    cause: error
  })

/** The client's approvals: the service, and what a turn that ended on a deferred call fails with. */
export const makeApprovals = (params: ApprovalsParams) => {
  const { gate, projectKey, store } = params
  const ttl = Duration.fromInputUnsafe(params.ttl ?? DefaultTtl)

  /** Stores the parked call and returns the turn's `ApprovalRequired`. */
  const onDeferred = Effect.fnUntraced(function*(sessionId: string, use: DeferredUse) {
    gate.deferred.delete(sessionId)
    const now = yield* Clock.currentTimeMillis
    const tool = use.name.startsWith(params.toolPrefix) ? use.name.slice(params.toolPrefix.length) : use.name
    const approval = new PendingApproval({
      approvalId: crypto.randomUUID(),
      projectKey,
      sessionId,
      toolUseId: use.id,
      tool,
      input: use.input,
      state: "pending",
      createdAt: now,
      expiresAt: now + Duration.toMillis(ttl)
    })
    yield* store.put(approval).pipe(Effect.mapError(storeFailed))
    return yield* new ProviderError({
      provider: params.provider,
      reason: new ApprovalRequired({
        message: `The call of ${tool} waits for an approval (${approval.approvalId}); ` +
          "approve or deny it with ClaudeApprovals",
        approvalId: approval.approvalId,
        sessionId,
        tool,
        input: use.input
      })
    })
  })

  const fail = (approvalId: string, reason: ApprovalError["reason"]) => new ApprovalError({ approvalId, reason })

  const find = Effect.fnUntraced(function*(approvalId: string) {
    const found = yield* store.get(projectKey, approvalId)
    if (Option.isNone(found)) {
      return yield* fail(approvalId, new ApprovalNotFound({ message: `No approval ${approvalId} in ${projectKey}` }))
    }
    return found.value
  })

  const already = (approval: PendingApproval) =>
    fail(
      approval.approvalId,
      new AlreadyDecided({
        message: `Approval ${approval.approvalId} was already ${approval.state}; its call does not run again`,
        state: approval.state
      })
    )

  /** The same decision again gets the stored answer; another one fails (a denial keeps its `reason`). */
  const answered = (approval: PendingApproval, decision: Decision) =>
    (approval.reason !== undefined) === (decision.state === "denied")
      ? Effect.succeed(approval.answer ?? "")
      : already(approval)

  /** The first decision wins; the same one later gets the answer once there is one. */
  const settle = Effect.fnUntraced(function*(approvalId: string, decision: Decision) {
    const approval = yield* find(approvalId)
    if (approval.state === "answered") return yield* answered(approval, decision)
    if (approval.state !== "pending") return yield* already(approval)
    if ((yield* Clock.currentTimeMillis) > approval.expiresAt) {
      return yield* fail(
        approvalId,
        new ApprovalExpired({
          message: `Approval ${approvalId} expired at ${new Date(approval.expiresAt).toISOString()}`
        })
      )
    }
    if (!(yield* store.decide(projectKey, approvalId, decision))) {
      const now = yield* find(approvalId)
      return yield* (now.state === "answered" ? answered(now, decision) : already(now))
    }
    gate.replays.set(approval.toolUseId, decision)
    const answer = yield* params.replay(approval.sessionId).pipe(
      Effect.ensuring(Effect.sync(() => gate.replays.delete(approval.toolUseId)))
    )
    yield* store.answer(projectKey, approvalId, answer)
    return answer
  })

  const service: ClaudeApprovalsService = {
    approve: (approvalId, options) =>
      settle(approvalId, {
        state: "approved",
        ...(options?.updatedInput === undefined ? {} : { updatedInput: options.updatedInput })
      }).pipe(Effect.withSpan("ClaudeApprovals.approve", { attributes: { approvalId } })),
    deny: (approvalId, reason) =>
      settle(approvalId, { state: "denied", reason }).pipe(
        Effect.withSpan("ClaudeApprovals.deny", { attributes: { approvalId } })
      ),
    list: (sessionId) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const all = yield* store.list(projectKey, sessionId)
        return all.filter((a) => a.state === "pending" && a.expiresAt >= now)
      }).pipe(Effect.withSpan("ClaudeApprovals.list"))
  }
  return { service, onDeferred }
}

/** Where a client keeps its approvals service, for the layer's context (not public API). */
export const ApprovalsKey: unique symbol = Symbol.for("effect-chat-bridge/internal/approvals")

/** A client carrying its approvals service under {@link ApprovalsKey}. */
export const withApprovals = <C extends object>(client: C, service: ClaudeApprovalsService) =>
  Object.assign(client, { [ApprovalsKey]: service })

/** The approvals service a client carries (see {@link withApprovals}). */
export const approvalsOf = (client: object): ClaudeApprovalsService =>
  (client as { readonly [ApprovalsKey]: ClaudeApprovalsService })[ApprovalsKey]
