/**
 * A fake Gemini API (`POST /v1beta/models/<model>:generateContent`, and
 * `:streamGenerateContent?alt=sse` answering in SSE chunks) on 127.0.0.1 for tests. Each request is answered by a function of the request, so a test scripts
 * the model and then inspects what was sent. Its `url` is the base URL (no version segment).
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

export interface FakePart {
  readonly text?: string
  readonly functionCall?: { readonly name: string; readonly args?: unknown; readonly id?: string }
  readonly functionResponse?: {
    readonly name: string
    readonly response: Record<string, unknown>
    readonly id?: string
  }
  readonly thoughtSignature?: string
}

export interface FakeBody {
  readonly contents?: ReadonlyArray<{ readonly role: string; readonly parts: ReadonlyArray<FakePart> }>
  readonly tools?: ReadonlyArray<
    { readonly functionDeclarations: ReadonlyArray<{ readonly name: string; readonly [k: string]: unknown }> }
  >
  readonly generationConfig?: {
    readonly responseMimeType?: string
    readonly responseSchema?: unknown
    readonly [k: string]: unknown
  }
  readonly systemInstruction?: unknown
  readonly [k: string]: unknown
}

export interface FakeFunctionCall {
  readonly name: string
  readonly args: unknown
  readonly id?: string
  readonly thoughtSignature?: string
}

export interface FakeUsage {
  readonly promptTokenCount: number
  readonly candidatesTokenCount: number
  readonly totalTokenCount?: number
  readonly cachedContentTokenCount?: number
  readonly thoughtsTokenCount?: number
}

/** A model reply, a blocked prompt, or a raw HTTP error. */
export type FakeReply =
  | {
    readonly text?: string
    /** A thinking summary part, which clients must not show as the answer. */
    readonly thought?: string
    readonly functionCalls?: ReadonlyArray<FakeFunctionCall>
    readonly usage?: FakeUsage
    /** Answer with no candidate and this block reason. */
    readonly blockReason?: string
    /** Delay before answering, in ms. */
    readonly delayMs?: number
    /**
     * Streaming only: after the first text chunk, `destroy` the socket, send an `error` chunk and
     * end, or `hang` (keep the connection open and send nothing more).
     */
    readonly breakMidway?: "destroy" | "error" | "hang"
  }
  | { readonly status: number; readonly body?: unknown; readonly headers?: Record<string, string> }

export interface FakeGemini {
  /** Base URL, without the API version. */
  readonly url: string
  readonly port: number
  readonly requests: Array<FakeRequest>
  /** Only the `POST …:generateContent` (and `…:streamGenerateContent`) requests. */
  readonly generateRequests: () => ReadonlyArray<FakeRequest>
  /** Indexes (in `requests`) of streamed answers whose connection the client closed before the end. */
  readonly abandoned: Array<number>
}

/** The functionResponse parts of a request's last content (the answers to the last calls). */
export const functionResponses = (
  req: FakeRequest
): Array<{ name: string; response: Record<string, unknown>; id?: string }> =>
  (req.body.contents?.at(-1)?.parts ?? []).flatMap((
    p
  ) => (p.functionResponse === undefined ? [] : [p.functionResponse]))

/** The text of a request's last user content. */
export const lastUserText = (req: FakeRequest): string =>
  (req.body.contents ?? []).filter((c) => c.role === "user").at(-1)?.parts.map((p) => p.text ?? "").join("") ?? ""

const generated = (reply: Exclude<FakeReply, { status: number }>, model: string) => {
  const usage = reply.usage ?? { promptTokenCount: 10, candidatesTokenCount: 5 }
  const usageMetadata = {
    totalTokenCount: usage.promptTokenCount + usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0),
    ...usage
  }
  if (reply.blockReason !== undefined) {
    return { promptFeedback: { blockReason: reply.blockReason }, usageMetadata, modelVersion: model }
  }
  const parts: Array<{
    readonly text?: string
    readonly thought?: boolean
    readonly functionCall?: unknown
    readonly thoughtSignature?: string
  }> = []
  if (reply.thought !== undefined) parts.push({ text: reply.thought, thought: true })
  if (reply.text !== undefined) parts.push({ text: reply.text })
  for (const call of reply.functionCalls ?? []) {
    parts.push({
      functionCall: { name: call.name, args: call.args, ...(call.id === undefined ? {} : { id: call.id }) },
      ...(call.thoughtSignature === undefined ? {} : { thoughtSignature: call.thoughtSignature })
    })
  }
  return {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata,
    modelVersion: model,
    responseId: "fake"
  }
}

/**
 * Streams a response as Gemini does: each chunk a partial response (thought, text in two pieces,
 * the function calls whole), the finish reason and usage on the last chunk.
 */
const sse = (
  res: ServerResponse,
  whole: ReturnType<typeof generated>,
  reply: Exclude<FakeReply, { status: number }>
) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\r\n\r\n`)
  if (!("candidates" in whole)) {
    send(whole)
    return void res.end()
  }
  const chunk = (parts: ReadonlyArray<unknown>, last = false) =>
    send({
      candidates: [{ content: { role: "model", parts }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }],
      ...(last ? { usageMetadata: whole.usageMetadata } : {}),
      modelVersion: whole.modelVersion
    })
  const parts = whole.candidates[0]!.content.parts
  for (const part of parts) {
    if (part.functionCall !== undefined) continue
    if (part.thought === true) {
      chunk([part])
      continue
    }
    const text = String(part.text)
    const cut = Math.ceil(text.length / 2)
    for (const piece of [text.slice(0, cut), text.slice(cut)]) {
      if (piece === "") continue
      chunk([{ text: piece }])
      if (reply.breakMidway === "destroy") return void setTimeout(() => res.destroy(), 20)
      if (reply.breakMidway === "error") {
        send({ error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } })
        return void res.end()
      }
      if (reply.breakMidway === "hang") return
    }
  }
  const calls = parts.filter((p) => p.functionCall !== undefined)
  if (calls.length > 0) chunk(calls)
  chunk([{ text: "" }], true)
  res.end()
}

/** Starts the fake on 127.0.0.1:0; it stops when the scope closes. */
export const make = (
  respond: (req: FakeRequest, index: number) => FakeReply
): Effect.Effect<FakeGemini, never, Scope.Scope> => {
  let modelCalls = 0
  return serve<FakeBody>(async ({ request, res, watchAbandon }) => {
    const route = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent\?alt=sse)$/.exec(request.path)
    if (request.method !== "POST" || route === null) {
      return sendJson(res, 404, { error: { code: 404, message: "not in the fake", status: "NOT_FOUND" } })
    }
    const reply = respond(request, modelCalls++)
    if (
      await answeredError(
        res,
        reply,
        (status) => ({ error: { code: status, message: "fake error", status: "INTERNAL" } })
      )
    ) {
      return
    }
    if ("status" in reply) return
    const whole = generated(reply, decodeURIComponent(route[1]!))
    if (route[2] === "generateContent") return sendJson(res, 200, whole)
    watchAbandon()
    return sse(res, whole, reply)
  }).pipe(Effect.map((server) => ({
    ...server,
    generateRequests: () =>
      server.requests.filter((r) =>
        r.method === "POST" && /:(generateContent|streamGenerateContent\?alt=sse)$/.test(r.path)
      )
  })))
}
