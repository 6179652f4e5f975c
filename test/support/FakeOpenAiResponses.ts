/**
 * A fake OpenAI Responses API (`POST /v1/responses`) on 127.0.0.1 for tests, as Codex CLI speaks
 * it: JSON answers, or, when the request says `stream: true`, the SSE events `response.created`,
 * `response.output_item.added`, `response.output_text.delta`,
 * `response.function_call_arguments.delta/done`, `response.output_item.done` and
 * `response.completed` (with usage). Each request is answered by a function of the request, so a
 * test scripts the model (text, function calls, also inside a `namespace` tool such as
 * `mcp__<server>`) and then reads what was sent: the tools offered, the user's text, the tool
 * results. Its `url` ends in `/v1`, like OpenAI's base URL.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { IncomingMessage, ServerResponse } from "node:http"
import { answeredError, sendJson, serve } from "./fakeServer.ts"

export interface FakeRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: FakeBody
}

/** An item of a request's `input`: messages, function calls the model made, and their outputs. */
export interface InputItem {
  readonly type?: string
  readonly role?: string
  readonly content?: unknown
  readonly name?: string
  readonly namespace?: string
  readonly call_id?: string
  readonly arguments?: string
  readonly output?: unknown
  readonly [k: string]: unknown
}

/** A tool the request offers: a function, a `namespace` of functions, or a built-in. */
export interface OfferedTool {
  readonly type: string
  readonly name?: string
  readonly tools?: ReadonlyArray<OfferedTool>
  readonly [k: string]: unknown
}

export interface FakeBody {
  readonly model?: string
  readonly instructions?: string
  readonly input?: ReadonlyArray<InputItem>
  readonly tools?: ReadonlyArray<OfferedTool>
  readonly text?: { readonly format?: unknown; readonly [k: string]: unknown }
  readonly stream?: boolean
  readonly [k: string]: unknown
}

export interface FakeFunctionCall {
  readonly callId?: string
  /** The function's name (inside its namespace, when it has one). */
  readonly name: string
  /** The namespace tool it belongs to (`mcp__<server>` for an MCP server's tools). */
  readonly namespace?: string
  /** Sent as JSON text, as OpenAI does; a string is sent verbatim. */
  readonly arguments: unknown
}

export interface FakeUsage {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cached_tokens?: number
  readonly reasoning_tokens?: number
}

/** A model reply, or a raw HTTP error. */
export type FakeReply =
  | {
    readonly text?: string
    readonly functionCalls?: ReadonlyArray<FakeFunctionCall>
    readonly usage?: FakeUsage
    /** Delay before answering, in ms. */
    readonly delayMs?: number
  }
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }

export interface FakeResponses {
  /** Base URL, ending in `/v1`. */
  readonly url: string
  readonly port: number
  readonly requests: Array<FakeRequest>
  /** Only the `POST /v1/responses` requests. */
  readonly responseRequests: () => ReadonlyArray<FakeRequest>
  /** Indexes (in `requests`) of streamed answers whose connection the client closed before the end. */
  readonly abandoned: Array<number>
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((part: { readonly text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("")
    : ""

/** The text of every `user` message of a request, in order (Codex sends context as user messages too). */
export const userTexts = (req: FakeRequest): Array<string> =>
  (req.body.input ?? []).filter((item) => item.role === "user").map((item) => textOf(item.content))

/** The text of a request's last user message. */
export const lastUserText = (req: FakeRequest): string => userTexts(req).at(-1) ?? ""

/**
 * The `function_call_output` items after the last user message: the answers to the last calls,
 * their text parts joined by line breaks (Codex sends `input_text` parts, a timing line first).
 */
export const functionOutputs = (req: FakeRequest): Array<{ call_id: string; output: string }> => {
  const input = req.body.input ?? []
  const lastUser = input.map((item) => item.role).lastIndexOf("user")
  return input.slice(lastUser + 1).filter((item) => item.type === "function_call_output").map((item) => ({
    call_id: String(item.call_id),
    output: Array.isArray(item.output)
      ? item.output.map((part: { readonly text?: unknown }) => String(part?.text ?? "")).join("\n")
      : String(item.output)
  }))
}

/** Every function the request offers, namespaced ones as `<namespace>.<name>`; built-ins by type. */
export const toolNames = (req: FakeRequest): Array<string> =>
  (req.body.tools ?? []).flatMap((tool) =>
    tool.type === "namespace"
      ? (tool.tools ?? []).map((child) => `${tool.name}.${child.name}`)
      : [tool.name ?? tool.type]
  )

let counter = 0

interface Completed {
  readonly id: string
  readonly model: string
  readonly output: ReadonlyArray<Record<string, unknown>>
  readonly usage: Record<string, unknown>
}

const completed = (reply: Exclude<FakeReply, { status: number }>, model: string): Completed => {
  const id = ++counter
  const message = reply.text === undefined ? [] : [{
    type: "message",
    id: `msg_fake_${id}`,
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: reply.text, annotations: [] }]
  }]
  const calls = (reply.functionCalls ?? []).map((call, i) => ({
    type: "function_call",
    id: `fc_fake_${id}_${i}`,
    call_id: call.callId ?? `call_fake_${id}_${i}`,
    name: call.name,
    ...(call.namespace === undefined ? {} : { namespace: call.namespace }),
    arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
    status: "completed"
  }))
  const usage = reply.usage ?? { input_tokens: 10, output_tokens: 5 }
  return {
    id: `resp_fake_${id}`,
    model,
    output: [...message, ...calls],
    usage: {
      input_tokens: usage.input_tokens,
      input_tokens_details: { cached_tokens: usage.cached_tokens ?? 0 },
      output_tokens: usage.output_tokens,
      output_tokens_details: { reasoning_tokens: usage.reasoning_tokens ?? 0 },
      total_tokens: usage.input_tokens + usage.output_tokens
    }
  }
}

const response = (done: Completed, status: "in_progress" | "completed") => ({
  id: done.id,
  object: "response",
  created_at: Math.floor(Date.now() / 1000),
  status,
  model: done.model,
  output: status === "completed" ? done.output : [],
  ...(status === "completed" ? { usage: done.usage } : {})
})

const halves = (text: string) => {
  const cut = Math.ceil(text.length / 2)
  return [text.slice(0, cut), text.slice(cut)].filter((p) => p !== "")
}

/** Streams a response as OpenAI does: created, each output item added → deltas → done, completed. */
const sse = (res: ServerResponse, done: Completed) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  let sequence = 0
  const event = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`)
  event("response.created", { response: response(done, "in_progress") })
  done.output.forEach((item, outputIndex) => {
    const itemId = String(item["id"])
    if (item["type"] === "message") {
      event("response.output_item.added", {
        output_index: outputIndex,
        item: { ...item, status: "in_progress", content: [] }
      })
      const text = String((item["content"] as Array<{ text: string }>)[0]!.text)
      for (const delta of halves(text)) {
        event("response.output_text.delta", { item_id: itemId, output_index: outputIndex, content_index: 0, delta })
      }
      event("response.output_text.done", { item_id: itemId, output_index: outputIndex, content_index: 0, text })
    } else {
      event("response.output_item.added", {
        output_index: outputIndex,
        item: { ...item, status: "in_progress", arguments: "" }
      })
      const args = String(item["arguments"])
      for (const delta of halves(args)) {
        event("response.function_call_arguments.delta", { item_id: itemId, output_index: outputIndex, delta })
      }
      event("response.function_call_arguments.done", { item_id: itemId, output_index: outputIndex, arguments: args })
    }
    event("response.output_item.done", { output_index: outputIndex, item })
  })
  event("response.completed", { response: response(done, "completed") })
  res.end()
}

/** Starts the fake on 127.0.0.1:0; it stops when the scope closes. */
export const make = (
  respond: (req: FakeRequest, index: number) => FakeReply
): Effect.Effect<FakeResponses, never, Scope.Scope> => {
  let modelCalls = 0
  return serve<FakeBody>(async ({ request, res, watchAbandon }) => {
    const { body, method, path } = request
    if (method !== "POST" || path !== "/v1/responses") {
      return sendJson(res, 404, { error: { message: "not in the fake", type: "invalid_request_error" } })
    }
    const reply = respond(request, modelCalls++)
    if (await answeredError(res, reply, () => ({ error: { message: "fake error", type: "server_error" } }))) return
    if ("status" in reply) return
    const done = completed(reply, body.model ?? "gpt-fake")
    if (body.stream !== true) return sendJson(res, 200, response(done, "completed"))
    watchAbandon()
    return sse(res, done)
  }).pipe(Effect.map((server) => ({
    ...server,
    url: `${server.url}/v1`,
    responseRequests: () => server.requests.filter((r) => r.method === "POST" && r.path === "/v1/responses")
  })))
}
