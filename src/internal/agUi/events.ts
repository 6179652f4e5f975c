/**
 * A Claude Code turn's chat events as AG-UI events, and what a run's input asks of the
 * conversation. Pure: `ai/ClaudeAgUi.ts` runs the turns and serves the events.
 */
import type * as AgUiSchema from "effect/ai/AgUiSchema"
import type { ApprovalRequired, ChatError } from "../../services/ChatClient.ts"
import type { ChatEvent } from "../../services/ChatEvent.ts"

/** The metadata key of what the library adds to AG-UI events and interrupts. */
export const MetadataKey = "effect-chat-bridge"

/** The `reason` of the interrupt a parked tool call becomes. */
export const ApprovalReason = "tool_approval"

/**
 * Turns one run's chat events into AG-UI events. Stateful (one per run): text between tool calls
 * is one text message, a tool call's arguments may arrive streamed before its start event.
 */
export const makeEventMapper = (runId: string) => {
  let textId: string | undefined
  let texts = 0
  // Calls whose start was sent from streamed arguments: their start event only ends them.
  const streamed = new Set<string>()
  const started = new Set<string>()

  const closeText = (): Array<AgUiSchema.Event> => {
    if (textId === undefined) return []
    const messageId = textId
    textId = undefined
    return [{ type: "TEXT_MESSAGE_END", messageId }]
  }
  /** Ends the calls opened from streamed arguments whose start event never came. */
  const closeCalls = (): Array<AgUiSchema.Event> => {
    const open = [...streamed]
    streamed.clear()
    return open.map((toolCallId) => ({ type: "TOOL_CALL_END", toolCallId }))
  }
  const toolStart = (toolCallId: string, toolCallName: string): Array<AgUiSchema.Event> => {
    started.add(toolCallId)
    return [...closeText(), { type: "TOOL_CALL_START", toolCallId, toolCallName }]
  }
  const callStarted = (id: string, name: string, input: unknown): Array<AgUiSchema.Event> =>
    streamed.delete(id)
      ? [{ type: "TOOL_CALL_END", toolCallId: id }]
      : [
        ...toolStart(id, name),
        { type: "TOOL_CALL_ARGS", toolCallId: id, delta: JSON.stringify(input ?? {}) },
        { type: "TOOL_CALL_END", toolCallId: id }
      ]
  const callEnded = (id: string, content: string, isError: boolean): Array<AgUiSchema.Event> => {
    // A result without a start (a call begun before the stream was joined) has nothing to answer.
    if (!started.has(id)) return []
    // A call opened from streamed arguments is ended before its result (AG-UI's order).
    const end: Array<AgUiSchema.Event> = streamed.delete(id) ? [{ type: "TOOL_CALL_END", toolCallId: id }] : []
    const result: AgUiSchema.Event = {
      type: "TOOL_CALL_RESULT",
      messageId: `${runId}-result-${id}`,
      toolCallId: id,
      content,
      role: "tool"
    }
    return [...end, isError ? { ...result, metadata: { "effect/ai": { isFailure: true } } } : result]
  }

  const map = (event: ChatEvent): ReadonlyArray<AgUiSchema.Event> => {
    switch (event._tag) {
      case "TextDelta": {
        if (event.text === "") return []
        const open: Array<AgUiSchema.Event> = []
        if (textId === undefined) {
          textId = `${runId}-text-${texts++}`
          open.push({ type: "TEXT_MESSAGE_START", messageId: textId, role: "assistant" })
        }
        return [...open, { type: "TEXT_MESSAGE_CONTENT", messageId: textId, delta: event.text }]
      }
      case "ToolInputDelta": {
        const open = streamed.has(event.id) ? [] : toolStart(event.id, event.name)
        streamed.add(event.id)
        return event.delta === ""
          ? open
          : [...open, { type: "TOOL_CALL_ARGS", toolCallId: event.id, delta: event.delta }]
      }
      case "ToolCallStart":
        return callStarted(event.id, event.name, event.arguments)
      case "AgentToolStart":
        return callStarted(event.id, event.name, event.input)
      case "ToolCallEnd":
      case "AgentToolEnd":
        return callEnded(event.id, event.result, event.isError)
      case "Usage":
      case "Complete":
        // A CLI turn ended (a steered message may start another in the same run): its text with it.
        return closeText()
      default:
        // Tasks, hooks, rate limits, reasoning: nothing this mapping sends.
        return []
    }
  }
  return Object.assign(map, {
    /**
     * What ends the run's open text message and tool calls (at its end, before an error or a
     * finish the mapper did not see): AG-UI clients refuse `RUN_FINISHED` while either is open.
     */
    close: (): Array<AgUiSchema.Event> => [...closeText(), ...closeCalls()]
  })
}

/** The `RUN_ERROR` a failed turn ends with: the typed error's message, its tag (and reason) as code. */
export const runError = (error: ChatError | { readonly _tag: string; readonly message: string }): AgUiSchema.Event => {
  const reason = "reason" in error && typeof error.reason === "object" && error.reason !== null &&
      "_tag" in error.reason
    ? `/${String(error.reason._tag)}`
    : ""
  return { type: "RUN_ERROR", message: error.message, code: `${error._tag}${reason}` }
}

/** The error's `ApprovalRequired` reason, when the turn parked a tool call. */
export const approvalRequired = (error: ChatError): ApprovalRequired | undefined =>
  error._tag === "ProviderError" && error.reason._tag === "ApprovalRequired" ? error.reason : undefined

/**
 * The `RUN_FINISHED` of a run whose turn was stopped from elsewhere (`ClaudeLive.interrupt`, another
 * tab's Stop): AG-UI's `cancelled` outcome, the conversation intact.
 */
export const cancelled = (input: { readonly threadId: string; readonly runId: string }): AgUiSchema.Event => ({
  type: "RUN_FINISHED",
  threadId: input.threadId,
  runId: input.runId,
  outcome: { type: "cancelled" }
})

/**
 * The `RUN_FINISHED` of a run whose turn parked a tool call: AG-UI's interrupt outcome, one
 * interrupt whose id is the approval's. The client answers it with a run whose `resume` names it.
 */
export const approvalInterrupt = (
  input: { readonly threadId: string; readonly runId: string },
  approval: ApprovalRequired,
  expiresAt?: number | undefined
): AgUiSchema.Event => ({
  type: "RUN_FINISHED",
  threadId: input.threadId,
  runId: input.runId,
  outcome: {
    type: "interrupt",
    interrupts: [{
      id: approval.approvalId,
      reason: ApprovalReason,
      message: `${approval.tool} needs your approval`,
      ...(expiresAt === undefined ? {} : { expiresAt: new Date(expiresAt).toISOString() }),
      responseSchema: {
        type: "object",
        properties: {
          approved: { type: "boolean" },
          reason: { type: "string" },
          updatedInput: { type: "object" }
        }
      },
      metadata: { [MetadataKey]: { tool: approval.tool, input: toJson(approval.input) } }
    }]
  }
})

const toJson = (value: unknown): AgUiSchema.Metadata[string] => {
  try {
    return JSON.parse(JSON.stringify(value ?? null)) as AgUiSchema.Metadata[string]
  } catch {
    return null
  }
}

/** A decision the client sent in `resume`: approve (with `updatedInput`) or deny (with `reason`). */
export type ResumeDecision =
  | {
    readonly _tag: "Approve"
    readonly approvalId: string
    readonly updatedInput?: Readonly<Record<string, unknown>> | undefined
  }
  | { readonly _tag: "Deny"; readonly approvalId: string; readonly reason: string }

const isRecord = (u: unknown): u is Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * The decisions of a run's `resume` entries: `resolved` with `payload.approved !== false`
 * approves, `resolved` with `approved: false` or `cancelled` denies (with `payload.reason`, or
 * a default the model reads).
 */
export const resumeDecisions = (input: AgUiSchema.RunAgentInput): ReadonlyArray<ResumeDecision> =>
  (input.resume ?? []).map((entry): ResumeDecision => {
    const payload = isRecord(entry.payload) ? entry.payload : {}
    const reason = typeof payload["reason"] === "string" && payload["reason"] !== ""
      ? payload["reason"]
      : "The user denied this tool call"
    if (entry.status === "cancelled" || payload["approved"] === false) {
      return { _tag: "Deny", approvalId: entry.interruptId, reason }
    }
    const updatedInput = isRecord(payload["updatedInput"]) ? payload["updatedInput"] : undefined
    return { _tag: "Approve", approvalId: entry.interruptId, updatedInput }
  })

/**
 * The text the run sends: its trailing user messages (those after the last message of another
 * role), joined. The client resends the whole conversation on every run; the conversation's
 * history lives with Claude Code, so only what is new is sent.
 */
export const newUserText = (input: AgUiSchema.RunAgentInput): string => {
  const texts: Array<string> = []
  for (let i = input.messages.length - 1; i >= 0; i--) {
    const message = input.messages[i]!
    if (message.role !== "user") break
    texts.unshift(
      typeof message.content === "string"
        ? message.content
        : message.content.flatMap((part) => part.type === "text" ? [part.text] : []).join("\n")
    )
  }
  return texts.filter((text) => text.trim() !== "").join("\n\n")
}
