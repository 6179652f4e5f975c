/**
 * A client of `codex app-server`: JSON-RPC 2.0, one JSON object a line, on the process's stdio.
 * It sends requests and matches their answers, hands the server's notifications to the current
 * listener, and answers the server's own requests (approvals, elicitations, questions for the
 * user) with a refusal: a kept-alive turn has no one to ask, as `exec` (approval policy "never")
 * has not, and the bridge's tools are pre-approved, so they never ask.
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { RunOptions, SubprocessError, SubprocessService } from "../../services/Subprocess.ts"
import { isObject, type Json, parse } from "./events.ts"

/** A JSON-RPC error the server answered with. */
export interface RpcFailure {
  readonly _tag: "RpcFailure"
  readonly method: string
  readonly code: number | undefined
  readonly message: string
}

/** How the process's output ended. */
export interface Ended {
  /** Undefined when the process was stopped by us or could not run. */
  readonly exitCode: number | undefined
  readonly stderr: string
  readonly error: SubprocessError | undefined
}

/** A request the process never answered: its output ended first. */
export interface ServerEnded {
  readonly _tag: "ServerEnded"
  readonly ended: Ended
  /** True when nothing came since `quiet()`: the process was already gone when the request was sent. */
  readonly silent: boolean
}

/** A notification's method and params. */
export type Listener = (method: string, params: Json) => Effect.Effect<void>

/** One `codex app-server` process seen as a JSON-RPC peer. */
export interface Connection {
  readonly request: (method: string, params: unknown) => Effect.Effect<unknown, RpcFailure | ServerEnded>
  readonly notify: (method: string, params?: unknown) => Effect.Effect<void>
  /** Where notifications go from now on (one listener at a time: the conversation runs one turn at a time). */
  readonly listen: (listener: Listener | undefined) => void
  /** Forgets what was heard: a later `ServerEnded` is `silent` unless something comes after this. */
  readonly quiet: () => void
  readonly alive: () => boolean
  /** `effect`, or a `ServerEnded` failure if the process's output ends first. */
  readonly orEnded: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | ServerEnded>
}

export const rpc = (id: number, method: string, params: unknown) =>
  `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`

export const reply = (id: unknown, body: { readonly result: unknown } | { readonly error: unknown }) =>
  `${JSON.stringify({ jsonrpc: "2.0", id, ...body })}\n`

/** A JSON-RPC error answer to `method`. */
export const failureOf = (method: string, error: Json): RpcFailure => ({
  _tag: "RpcFailure",
  method,
  code: typeof error["code"] === "number" ? error["code"] : undefined,
  message: String(error["message"] ?? "error")
})

const Refused = "refused: this client has no one to ask"

/**
 * The answer to a server request: every approval and elicitation is declined, a question gets no
 * answers, anything else (dynamic tools, token refreshes) is a "method not found" error.
 */
export const refusal = (method: string): { readonly result: unknown } | { readonly error: unknown } => {
  switch (method) {
    case "item/commandExecution/requestApproval":
    case "item/fileChange/requestApproval":
      return { result: { decision: "decline" } }
    case "execCommandApproval":
    case "applyPatchApproval":
      return { result: { decision: { denied: { rejection: Refused } } } }
    case "item/permissions/requestApproval":
      return { result: { permissions: {}, scope: "turn" } }
    case "mcpServer/elicitation/request":
      return { result: { action: "decline", content: null, _meta: null } }
    case "item/tool/requestUserInput":
      return { result: { answers: {} } }
    default:
      return { error: { code: -32601, message: `${method} is not offered by this client` } }
  }
}

/**
 * Starts the process in the caller's scope and reads it. Closing the scope first ends its stdin
 * (the server exits on it, having written its threads) and waits up to `settle`; then the reader
 * is interrupted, which stops the process group.
 */
export const connect = Effect.fnUntraced(function*(
  subprocess: SubprocessService,
  runOptions: Omit<RunOptions, "input" | "stdin">,
  settle: Duration.Input = Duration.seconds(2)
): Effect.fn.Return<Connection, never, Scope.Scope> {
  const input = yield* Queue.unbounded<string, Cause.Done>()
  const endedSignal = yield* Deferred.make<Ended>()
  const waiting = new Map<
    number,
    { readonly method: string; readonly answer: Deferred.Deferred<unknown, RpcFailure | ServerEnded> }
  >()
  let nextId = 0
  let ended: Ended | undefined
  let listener: Listener | undefined
  let heard = false

  const end = (e: Ended) =>
    Effect.suspend(() => {
      if (ended !== undefined) return Effect.void
      ended = e
      const unanswered = [...waiting.values()]
      waiting.clear()
      const failure: ServerEnded = { _tag: "ServerEnded", ended: e, silent: !heard }
      return Effect.andThen(
        Effect.forEach(unanswered, (w) => Deferred.fail(w.answer, failure), { discard: true }),
        Deferred.succeed(endedSignal, e)
      )
    })
  const stopped = end({ exitCode: undefined, stderr: "", error: undefined })

  const send = (line: string) => Effect.asVoid(Queue.offer(input, line))

  const route = (raw: string): Effect.Effect<void> => {
    const message = parse(raw)
    if (message === undefined) return Effect.void
    heard = true
    const method = message["method"]
    if (typeof method === "string") {
      if (message["id"] !== undefined) return send(reply(message["id"], refusal(method)))
      const params = isObject(message["params"]) ? message["params"] : {}
      return listener === undefined ? Effect.void : listener(method, params)
    }
    const id = Number(message["id"])
    const asked = waiting.get(id)
    if (asked === undefined) return Effect.void
    waiting.delete(id)
    const error = message["error"]
    return Effect.asVoid(
      isObject(error)
        ? Deferred.fail(asked.answer, failureOf(asked.method, error))
        : Deferred.succeed(asked.answer, message["result"])
    )
  }

  yield* subprocess.stream({ ...runOptions, input: Stream.fromQueue(input) }).pipe(
    Stream.runForEach(route),
    Effect.matchCauseEffect({
      onSuccess: () => end({ exitCode: 0, stderr: "", error: undefined }),
      onFailure: (cause) => {
        const error = Option.getOrUndefined(Cause.findErrorOption(cause))
        return end({
          exitCode: error?.reason._tag === "Exited" ? error.reason.exitCode : undefined,
          stderr: error !== undefined && "stderrTail" in error.reason ? error.reason.stderrTail : "",
          error
        })
      }
    }),
    // Closing the scope interrupts the reader, which stops the process group.
    Effect.onInterrupt(() => stopped),
    Effect.forkScoped
  )
  // Runs before the reader is interrupted (finalizers run in reverse): a polite end first.
  yield* Effect.addFinalizer(() =>
    Queue.end(input).pipe(
      Effect.andThen(Deferred.await(endedSignal)),
      // Finalizers are uninterruptible: the bound must still be able to stop the wait.
      Effect.interruptible,
      Effect.timeoutOrElse({ duration: settle, orElse: () => Effect.void }),
      Effect.asVoid
    )
  )

  const request = (method: string, params: unknown) =>
    Effect.suspend(() => {
      if (ended !== undefined) {
        return Effect.fail<ServerEnded>({ _tag: "ServerEnded", ended, silent: true })
      }
      const id = ++nextId
      const answer = Deferred.makeUnsafe<unknown, RpcFailure | ServerEnded>()
      waiting.set(id, { method, answer })
      return Effect.andThen(send(rpc(id, method, params)), Deferred.await(answer))
    })

  const connection: Connection = {
    request,
    notify: (method, params) =>
      send(`${JSON.stringify({ jsonrpc: "2.0", method, ...(params === undefined ? {} : { params }) })}\n`),
    listen: (next) => (listener = next),
    quiet: () => (heard = false),
    alive: () => ended === undefined,
    orEnded: (effect) =>
      Effect.raceFirst(
        effect,
        Effect.flatMap(
          Deferred.await(endedSignal),
          (e) => Effect.fail<ServerEnded>({ _tag: "ServerEnded", ended: e, silent: !heard })
        )
      )
  }
  return connection
})

/** What `thread/start` and `thread/resume` set besides the process's `-c` settings. */
export interface ThreadSettings {
  readonly cwd: string
  readonly model: string | undefined
  readonly sandbox: string
}

/**
 * The handshake (`initialize`, then `initialized`) and the conversation's thread: a new one
 * (`thread/start`) or `resume`'s (`thread/resume`, its history kept). The approval policy is
 * `exec`'s, "never": a request that reaches this client anyway is refused.
 */
export const openThread = Effect.fnUntraced(function*(
  connection: Connection,
  resume: string | undefined,
  settings: ThreadSettings
) {
  yield* connection.request("initialize", {
    clientInfo: { name: "effect-chat-bridge", title: null, version: "2" },
    capabilities: { experimentalApi: false, requestAttestation: false }
  })
  yield* connection.notify("initialized")
  const params = {
    cwd: settings.cwd,
    sandbox: settings.sandbox,
    approvalPolicy: "never",
    ...(settings.model === undefined ? {} : { model: settings.model })
  }
  const method = resume === undefined ? "thread/start" : "thread/resume"
  const result = yield* connection.request(method, resume === undefined ? params : { ...params, threadId: resume })
  const thread = isObject(result) && isObject(result["thread"]) ? result["thread"] : {}
  if (typeof thread["id"] === "string") return thread["id"]
  return yield* Effect.fail<RpcFailure>({
    _tag: "RpcFailure",
    method,
    code: undefined,
    message: "no thread id in the answer"
  })
})
