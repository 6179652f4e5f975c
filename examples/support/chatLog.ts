/**
 * Not an example of its own: the chat page's model of a conversation, shared by
 * `examples/chat-server.ts` (which records every thread's log, so a reload shows it again) and the
 * page's script (which applies the same events as they stream). One reducer on both sides means a
 * reloaded page shows exactly what the live page showed.
 *
 * Plain data and functions, no Node or DOM APIs: esbuild bundles it into the page.
 */

/** One thing the page shows, in order. */
export type Item =
  | { readonly kind: "user"; readonly id: string; readonly text: string }
  | { readonly kind: "assistant"; readonly id: string; text: string }
  | {
    readonly kind: "tool"
    readonly id: string
    readonly name: string
    args: string
    result?: string
    isError?: boolean
    /** The run ended with this call waiting for a person (its result comes with the decision's answer). */
    parked?: boolean
  }
  | {
    readonly kind: "approval"
    readonly id: string
    readonly tool: string
    readonly input: unknown
    status: "pending" | "approved" | "denied"
  }
  | { readonly kind: "error"; readonly id: string; readonly message: string; readonly code?: string }
  | { readonly kind: "stopped"; readonly id: string }

/** The AG-UI events the log reads (a structural subset of `@ag-ui/core`'s). */
export interface LogEvent {
  readonly type: string
  readonly [key: string]: unknown
}

/** The metadata key under which the agent's interrupts carry the parked tool (`{ tool, input }`). */
export const metadataKey = "effect-chat-bridge"

const str = (u: unknown): string => (typeof u === "string" ? u : "")

const record = (u: unknown): Readonly<Record<string, unknown>> =>
  typeof u === "object" && u !== null && !Array.isArray(u) ? (u as Record<string, unknown>) : {}

const find = <K extends Item["kind"]>(items: ReadonlyArray<Item>, kind: K, id: string) =>
  items.find((item): item is Extract<Item, { kind: K }> => item.kind === kind && item.id === id)

/** Applies one AG-UI event to the log (in place: the log is the page's and the server's own). */
export const applyEvent = (items: Array<Item>, event: LogEvent): void => {
  switch (event.type) {
    case "TEXT_MESSAGE_START":
      if (find(items, "assistant", str(event["messageId"])) === undefined) {
        items.push({ kind: "assistant", id: str(event["messageId"]), text: "" })
      }
      return
    case "TEXT_MESSAGE_CONTENT": {
      const item = find(items, "assistant", str(event["messageId"]))
      if (item !== undefined) item.text += str(event["delta"])
      return
    }
    case "TOOL_CALL_START":
      if (find(items, "tool", str(event["toolCallId"])) === undefined) {
        items.push({ kind: "tool", id: str(event["toolCallId"]), name: str(event["toolCallName"]), args: "" })
      }
      return
    case "TOOL_CALL_ARGS": {
      const item = find(items, "tool", str(event["toolCallId"]))
      if (item !== undefined) item.args += str(event["delta"])
      return
    }
    case "TOOL_CALL_RESULT": {
      const item = find(items, "tool", str(event["toolCallId"]))
      if (item === undefined) return
      item.result = str(event["content"])
      item.isError = record(record(event["metadata"])["effect/ai"])["isFailure"] === true
      return
    }
    case "RUN_ERROR":
      items.push({
        kind: "error",
        id: `error-${items.length}`,
        message: str(event["message"]),
        ...(typeof event["code"] === "string" ? { code: event["code"] } : {})
      })
      return
    case "RUN_FINISHED": {
      const outcome = record(event["outcome"])
      if (outcome["type"] !== "interrupt" || !Array.isArray(outcome["interrupts"])) return
      // The call the run stopped at: no result yet, and none will stream for it.
      for (const item of items) if (item.kind === "tool" && item.result === undefined) item.parked = true
      for (const raw of outcome["interrupts"]) {
        const interrupt = record(raw)
        const parked = record(record(interrupt["metadata"])[metadataKey])
        if (find(items, "approval", str(interrupt["id"])) !== undefined) continue
        items.push({
          kind: "approval",
          id: str(interrupt["id"]),
          tool: str(parked["tool"]),
          input: parked["input"] ?? null,
          status: "pending"
        })
      }
      return
    }
  }
}

/** The person's message. */
export const addUser = (items: Array<Item>, id: string, text: string): void => {
  if (text.trim() !== "" && find(items, "user", id) === undefined) items.push({ kind: "user", id, text })
}

/** A decision on a parked call. */
export const decide = (items: Array<Item>, approvalId: string, approved: boolean): void => {
  const item = find(items, "approval", approvalId)
  if (item !== undefined) item.status = approved ? "approved" : "denied"
}

/** A run the person stopped. */
export const addStopped = (items: Array<Item>): void => {
  items.push({ kind: "stopped", id: `stopped-${items.length}` })
}

/** The approval still waiting for the person, if any. */
export const pendingApproval = (items: ReadonlyArray<Item>) =>
  items.find((item): item is Extract<Item, { kind: "approval" }> =>
    item.kind === "approval" && item.status === "pending"
  )
