/**
 * A fake OpenAI Chat Completions API on 127.0.0.1 for tests (JSON answers, or SSE chunks when the
 * request says `stream: true`). Each
 * request is answered by a function of the request, so a test scripts the model and then
 * inspects what was sent. Its `url` ends in `/v1`, like OpenAI's base URL.
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

export interface FakeBody {
  readonly model?: string
  readonly messages?: ReadonlyArray<{
    readonly role: string
    readonly content?: unknown
    readonly tool_calls?: ReadonlyArray<unknown>
    readonly tool_call_id?: string
  }>
  readonly tools?: ReadonlyArray<
    { readonly type: string; readonly function: { readonly name: string; readonly [k: string]: unknown } }
  >
  readonly response_format?: unknown
  readonly stream?: boolean
  readonly stream_options?: { readonly include_usage?: boolean }
  readonly [k: string]: unknown
}

export interface FakeToolCall {
  readonly id?: string
  readonly name: string
  /** Sent as JSON text, as OpenAI does; a string is sent verbatim. */
  readonly arguments: unknown
}

export interface FakeUsage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens?: number
  readonly prompt_tokens_details?: { readonly cached_tokens?: number }
  readonly completion_tokens_details?: { readonly reasoning_tokens?: number }
}

/** A model reply, or a raw HTTP error. */
export type FakeReply =
  | {
    readonly text?: string
    readonly refusal?: string
    readonly toolCalls?: ReadonlyArray<FakeToolCall>
    readonly usage?: FakeUsage
    /** Delay before answering, in ms. */
    readonly delayMs?: number
    /**
     * Streaming only: after the first text delta, `destroy` the socket, send an `error` chunk and
     * end, or `hang` (keep the connection open and send nothing more).
     */
    readonly breakMidway?: "destroy" | "error" | "hang"
  }
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }

export interface FakeOpenAi {
  /** Base URL, ending in `/v1`. */
  readonly url: string
  readonly port: number
  readonly requests: Array<FakeRequest>
  /** Only the `POST /v1/chat/completions` requests. */
  readonly completionRequests: () => ReadonlyArray<FakeRequest>
  /** Indexes (in `requests`) of streamed answers whose connection the client closed before the end. */
  readonly abandoned: Array<number>
}

/** The `role: "tool"` messages at the end of a request (the answers to the last tool calls). */
export const toolMessages = (req: FakeRequest): Array<{ tool_call_id: string; content: string }> => {
  const out: Array<{ tool_call_id: string; content: string }> = []
  const messages = req.body.messages ?? []
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === "tool"; i--) {
    out.unshift({ tool_call_id: String(messages[i]!.tool_call_id), content: String(messages[i]!.content) })
  }
  return out
}

/** The content of a request's last user message. */
export const lastUserText = (req: FakeRequest): string =>
  String((req.body.messages ?? []).filter((m) => m.role === "user").at(-1)?.content ?? "")

let counter = 0

const completion = (reply: Exclude<FakeReply, { status: number }>, model: string) => {
  const calls = (reply.toolCalls ?? []).map((c) => ({
    id: c.id ?? `call_fake_${++counter}`,
    type: "function",
    function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments) }
  }))
  const usage = reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 }
  return {
    id: `chatcmpl-fake-${++counter}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: reply.text ?? null,
        refusal: reply.refusal ?? null,
        ...(calls.length === 0 ? {} : { tool_calls: calls })
      },
      logprobs: null,
      finish_reason: calls.length > 0 ? "tool_calls" : "stop"
    }],
    usage: { total_tokens: usage.prompt_tokens + usage.completion_tokens, ...usage }
  }
}

const halves = (text: string) => {
  const cut = Math.ceil(text.length / 2)
  return [text.slice(0, cut), text.slice(cut)].filter((p) => p !== "")
}

/** Streams a completion as OpenAI does: role, content pieces, tool calls by index, finish, usage, `[DONE]`. */
const sse = (
  res: ServerResponse,
  done: ReturnType<typeof completion>,
  reply: Exclude<FakeReply, { status: number }>,
  includeUsage: boolean
) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const base = { id: done.id, object: "chat.completion.chunk", created: done.created, model: done.model }
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    res.write(
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`
    )
  chunk({ role: "assistant", content: "" })
  const message = done.choices[0]!.message
  for (const piece of halves(message.content ?? "")) {
    chunk({ content: piece })
    if (reply.breakMidway === "destroy") return void setTimeout(() => res.destroy(), 20)
    if (reply.breakMidway === "error") {
      res.write(`data: ${JSON.stringify({ error: { message: "The server had an error", type: "server_error" } })}\n\n`)
      return void res.end()
    }
    if (reply.breakMidway === "hang") return
  }
  if (message.refusal !== null) chunk({ refusal: message.refusal })
  ;("tool_calls" in message ? message.tool_calls : []).forEach((call, index) => {
    chunk({
      tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }]
    })
    for (const piece of halves(call.function.arguments)) {
      chunk({ tool_calls: [{ index, function: { arguments: piece } }] })
    }
  })
  chunk({}, done.choices[0]!.finish_reason)
  if (includeUsage) res.write(`data: ${JSON.stringify({ ...base, choices: [], usage: done.usage })}\n\n`)
  res.write("data: [DONE]\n\n")
  res.end()
}

/** Starts the fake on 127.0.0.1:0; it stops when the scope closes. */
export const make = (
  respond: (req: FakeRequest, index: number) => FakeReply
): Effect.Effect<FakeOpenAi, never, Scope.Scope> => {
  let modelCalls = 0
  return serve<FakeBody>(async ({ request, res, watchAbandon }) => {
    const { body, method, path } = request
    if (method !== "POST" || path !== "/v1/chat/completions") {
      return sendJson(res, 404, { error: { message: "not in the fake", type: "invalid_request_error" } })
    }
    const reply = respond(request, modelCalls++)
    if (await answeredError(res, reply, () => ({ error: { message: "fake error", type: "server_error" } }))) return
    if ("status" in reply) return
    const done = completion(reply, body.model ?? "gpt-fake")
    if (body.stream !== true) return sendJson(res, 200, done)
    watchAbandon()
    return sse(res, done, reply, body.stream_options?.include_usage === true)
  }).pipe(Effect.map((server) => ({
    ...server,
    url: `${server.url}/v1`,
    completionRequests: () => server.requests.filter((r) => r.method === "POST" && r.path === "/v1/chat/completions")
  })))
}
