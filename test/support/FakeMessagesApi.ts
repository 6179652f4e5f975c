/**
 * A fake Anthropic Messages API on 127.0.0.1 for tests: the `claude` CLI (SSE) and the ClaudeApi
 * provider (JSON or SSE) talk to it. Each request is answered by a function of the request, so a
 * test scripts the model and then inspects what was sent.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { IncomingMessage, ServerResponse } from "node:http"
import { answeredError, sendJson, serve } from "./fakeServer.ts"

export interface FakeRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  // Test code reads arbitrary wire fields; the shape is the vendor's, not ours.
  readonly body: FakeBody
}

export interface FakeBody {
  readonly model?: string
  readonly stream?: boolean
  readonly system?: unknown
  readonly messages?: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
  readonly tools?: ReadonlyArray<
    { readonly name: string; readonly input_schema?: unknown; readonly [k: string]: unknown }
  >
  readonly tool_choice?: unknown
  readonly [k: string]: unknown
}

export interface ToolUse {
  readonly id?: string
  readonly name: string
  readonly input: unknown
}

/** A model reply, or a raw HTTP error. */
export type FakeReply =
  | {
    readonly text?: string
    readonly toolUses?: ReadonlyArray<ToolUse>
    readonly usage?: { readonly input_tokens: number; readonly output_tokens: number }
    /** Delay before answering, in ms. */
    readonly delayMs?: number
    /**
     * Streaming only: after the first text delta, `destroy` the socket, send an `error` event
     * (overloaded) and end, or `hang` (keep the connection open and send nothing more).
     */
    readonly breakMidway?: "destroy" | "error" | "hang"
    /** Streaming only: send this text as the whole SSE body instead of the message. */
    readonly rawStream?: string
    /** Extra response headers, such as {@link rateLimitHeaders}. */
    readonly headers?: Record<string, string>
  }
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }

export interface FakeMessagesApi {
  readonly url: string
  readonly port: number
  /** Every request received so far (model calls and anything else). */
  readonly requests: Array<FakeRequest>
  /** Only the `POST /v1/messages` requests. */
  readonly messageRequests: () => ReadonlyArray<FakeRequest>
  /** Indexes (in `requests`) of streamed answers whose connection the client closed before the end. */
  readonly abandoned: Array<number>
}

/** Text of every `tool_result` block in a request's last user message. */
export const toolResults = (req: FakeRequest): Array<{ tool_use_id: string; content: string; is_error: boolean }> => {
  const last = req.body.messages?.at(-1)
  if (!last || !Array.isArray(last.content)) return []
  return (last.content as Array<WireBlock>)
    .filter((b) => b.type === "tool_result")
    .map((b) => ({
      tool_use_id: String(b.tool_use_id),
      content: typeof b.content === "string"
        ? b.content
        : Array.isArray(b.content)
        ? (b.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("")
        : "",
      is_error: b.is_error === true
    }))
}

/** A model that first calls `use`, then answers from the tool results it got back. */
export const callsThenAnswers =
  (use: ToolUse, answer: (results: ReturnType<typeof toolResults>) => string) => (req: FakeRequest): FakeReply => {
    const results = toolResults(req)
    return results.length === 0 ? { toolUses: [use] } : { text: answer(results) }
  }

/** The text of a request's last user message (string content or text blocks). */
export const lastUserText = (req: FakeRequest): string => {
  const users = (req.body.messages ?? []).filter((m) => m.role === "user")
  const last = users.at(-1)
  if (!last) return ""
  if (typeof last.content === "string") return last.content
  return (last.content as Array<{ type?: string; text?: string }>)
    .filter((b) => b.type === "text")
    .map((b) => b.text ?? "")
    .join("\n")
}

/**
 * The last line of {@link lastUserText}: the prompt itself, even on a first turn, where the CLI
 * puts its reminders (skill lists and the like, whose words a script must not match) before it.
 */
export const lastUserLine = (req: FakeRequest): string => lastUserText(req).split("\n").at(-1) ?? ""

/** A content block as sent or answered on the wire (only the fields the fake reads). */
interface WireBlock {
  readonly type?: unknown
  readonly text?: unknown
  readonly id?: unknown
  readonly name?: unknown
  readonly input?: unknown
  readonly tool_use_id?: unknown
  readonly content?: unknown
  readonly is_error?: unknown
}

let counter = 0

/** A plan rate-limit window as the API reports it in `anthropic-ratelimit-unified-*` headers. */
export interface PlanWindow {
  /** The header's short name: `5h` (the CLI's `five_hour`) or `7d` (`seven_day`). */
  readonly window: "5h" | "7d"
  readonly status: "allowed" | "allowed_warning" | "rejected"
  /** Used fraction, 0 to 1. */
  readonly utilization: number
  /** Epoch seconds. */
  readonly resetsAt: number
}

const claims = { "5h": "five_hour", "7d": "seven_day" } as const

/**
 * The `anthropic-ratelimit-unified-*` headers of a subscription's response: each window's
 * utilisation, reset and status, and the representative (first) window's as the overall status.
 * The claude CLI turns them into a `rate_limit_event` only when logged in with an OAuth token
 * (`CLAUDE_CODE_OAUTH_TOKEN`), not with an API key (checked on 2.1.332).
 */
export const rateLimitHeaders = (windows: ReadonlyArray<PlanWindow>): Record<string, string> => {
  const [first] = windows
  const headers: Record<string, string> = first === undefined ? {} : {
    "anthropic-ratelimit-unified-status": first.status,
    "anthropic-ratelimit-unified-reset": String(first.resetsAt),
    "anthropic-ratelimit-unified-representative-claim": claims[first.window]
  }
  for (const w of windows) {
    headers[`anthropic-ratelimit-unified-${w.window}-utilization`] = String(w.utilization)
    headers[`anthropic-ratelimit-unified-${w.window}-reset`] = String(w.resetsAt)
    headers[`anthropic-ratelimit-unified-${w.window}-status`] = w.status
  }
  return headers
}

/**
 * The API's answer when a plan window is spent: 429 with the windows' headers (the first one
 * `rejected`), which the CLI reports as `usage_limit_reached`.
 */
export const spentWindow = (windows: ReadonlyArray<PlanWindow>): FakeReply => ({
  status: 429,
  headers: rateLimitHeaders(windows),
  body: { type: "error", error: { type: "rate_limit_error", message: "usage limit reached" } }
})

const message = (reply: Exclude<FakeReply, { status: number }>, model: string) => {
  const content: Array<WireBlock> = []
  if (reply.text !== undefined && reply.text !== "") content.push({ type: "text", text: reply.text })
  for (const use of reply.toolUses ?? []) {
    content.push({ type: "tool_use", id: use.id ?? `toolu_fake_${++counter}`, name: use.name, input: use.input ?? {} })
  }
  return {
    id: `msg_fake_${++counter}`,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: (reply.toolUses?.length ?? 0) > 0 ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: reply.usage ?? { input_tokens: 10, output_tokens: 5 }
  }
}

// Tool inputs given as `undefined` stream as one empty `partial_json`, as the API does for no arguments.
const sse = (
  res: ServerResponse,
  msg: ReturnType<typeof message>,
  reply: Exclude<FakeReply, { status: number }>
) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers })
  const send = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  send("message_start", {
    type: "message_start",
    message: { ...msg, content: [], stop_reason: null, usage: { ...msg.usage, output_tokens: 1 } }
  })
  let broke = false
  let toolIndex = 0
  msg.content.forEach((block, index) => {
    if (broke) return
    if (block.type === "text") {
      send("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } })
      send("ping", { type: "ping" })
      const text = String(block.text)
      // Two deltas, so streaming consumers see the text arrive in pieces.
      const cut = Math.ceil(text.length / 2)
      for (const piece of [text.slice(0, cut), text.slice(cut)]) {
        if (broke) return
        if (piece !== "") {
          send("content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "text_delta", text: piece }
          })
        }
        if (reply.breakMidway !== undefined) {
          broke = true
          if (reply.breakMidway === "destroy") setTimeout(() => res.destroy(), 20)
          else if (reply.breakMidway === "error") {
            send("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
            res.end()
          }
          return
        }
      }
    } else {
      send("content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} }
      })
      const use = reply.toolUses?.[toolIndex++]
      // Two pieces, so clients must assemble the JSON.
      const json = use !== undefined && use.input === undefined ? "" : JSON.stringify(block.input)
      const cut = Math.ceil(json.length / 2)
      for (const piece of json === "" ? [""] : [json.slice(0, cut), json.slice(cut)]) {
        send("content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: piece }
        })
      }
    }
    send("content_block_stop", { type: "content_block_stop", index })
  })
  if (broke) return
  send("message_delta", {
    type: "message_delta",
    delta: { stop_reason: msg.stop_reason, stop_sequence: null },
    usage: { output_tokens: msg.usage.output_tokens }
  })
  send("message_stop", { type: "message_stop" })
  res.end()
}

/** Starts the fake on 127.0.0.1:0; it stops when the scope closes. */
export const make = (
  respond: (req: FakeRequest, index: number) => FakeReply
): Effect.Effect<FakeMessagesApi, never, Scope.Scope> => {
  let modelCalls = 0
  return serve<FakeBody>(async ({ request, res, watchAbandon }) => {
    const { body, method, path } = request
    if (method !== "POST" || !path.startsWith("/v1/messages") || path.startsWith("/v1/messages/count_tokens")) {
      return sendJson(res, 404, { type: "error", error: { type: "not_found_error", message: "not in the fake" } })
    }
    const reply = respond(request, modelCalls++)
    if (
      await answeredError(res, reply, () => ({ type: "error", error: { type: "api_error", message: "fake error" } }))
    ) {
      return
    }
    if ("status" in reply) return
    const msg = message(reply, body.model ?? "claude-fake")
    if (body.stream !== true) return sendJson(res, 200, msg, reply.headers)
    watchAbandon()
    if (reply.rawStream === undefined) return sse(res, msg, reply)
    res.writeHead(200, { "content-type": "text/event-stream" })
    res.end(reply.rawStream)
  }).pipe(Effect.map((server) => ({
    ...server,
    messageRequests: () =>
      server.requests.filter((r) =>
        r.method === "POST" && r.path.startsWith("/v1/messages?") || r.path === "/v1/messages"
      )
  })))
}
