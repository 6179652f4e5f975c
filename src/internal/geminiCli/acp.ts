/**
 * One Gemini CLI turn over the Agent Client Protocol (`gemini --acp`, JSON-RPC 2.0 lines on
 * stdio): `initialize`, `session/new` (or `session/load` to continue a session), one
 * `session/prompt`, then stdin is closed and the CLI exits. ACP is used rather than `-p` because
 * its text content blocks reach the model verbatim: `-p` (and stdin with it) expands `@path`
 * anywhere in the text and dispatches `/commands`, with no escape that leaves the text unchanged.
 * The bridge's bearer travels in the `session/new` request on stdin: never in argv, the
 * environment or a file.
 */
import type * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { AgentToolEnd, AgentToolStart, type ChatEvent, TextDelta } from "../../services/ChatEvent.ts"
import type { RunOptions, SubprocessService } from "../../services/Subprocess.ts"
import type { Emit } from "../chat/loopClient.ts"

/** An MCP server as `session/new` takes it (ACP's `http` transport). */
export interface AcpMcpServer {
  readonly type: "http"
  readonly name: string
  readonly url: string
  readonly headers: ReadonlyArray<{ readonly name: string; readonly value: string }>
}

/** What a turn asks. */
export interface AcpTurn {
  readonly cwd: string
  readonly mcpServers: ReadonlyArray<AcpMcpServer>
  /** Continue this session (`session/load`); a new one otherwise. */
  readonly sessionId: string | undefined
  /** The prompt's text blocks, in order. */
  readonly blocks: ReadonlyArray<string>
  readonly emit: Emit | undefined
}

/** A JSON-RPC error the CLI answered with. */
export interface AcpFailure {
  readonly _tag: "AcpFailure"
  readonly method: string
  readonly code: number | undefined
  readonly message: string
}

/** What a finished turn gives back. */
export interface AcpOutcome {
  readonly sessionId: string
  readonly text: string
  readonly stopReason: string | undefined
  readonly inputTokens: number | undefined
  readonly outputTokens: number | undefined
  readonly activity: ReadonlyArray<AgentToolStart | AgentToolEnd>
}

export type Json = Record<string, unknown>

export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null

export const parse = (line: string): Json | undefined => {
  try {
    const value: unknown = JSON.parse(line)
    return isObject(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** The `session/prompt` request's params: the prompt as text blocks, which reach the model verbatim. */
export const promptParams = (sessionId: string, blocks: ReadonlyArray<string>) => ({
  sessionId,
  prompt: blocks.map((block) => ({ type: "text", text: block }))
})

/** After `session/load`: the command list the CLI schedules behind the history's replay. */
export const isReplayEnd = (update: Json): boolean => update["sessionUpdate"] === "available_commands_update"

export const rpc = (id: number, method: string, params: unknown) =>
  `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`

export const reply = (id: unknown, body: { readonly result: unknown } | { readonly error: unknown }) =>
  `${JSON.stringify({ jsonrpc: "2.0", id, ...body })}\n`

/** A JSON-RPC error answer to `method`, as an `AcpFailure`. */
export const failureOf = (method: string, error: Json): AcpFailure => ({
  _tag: "AcpFailure",
  method,
  code: typeof error["code"] === "number" ? error["code"] : undefined,
  message: String(error["message"] ?? "error") +
    (isObject(error["data"]) || typeof error["data"] === "string" ? `: ${JSON.stringify(error["data"])}` : "")
})

/**
 * A permission request: the turn has no one to ask, so it is refused. The application's own
 * tools never ask (the run's `--policy` file allows them); the CLI's tools that need a
 * confirmation are refused, as `-p` refuses them.
 */
export const refusal = (params: unknown) => {
  const options = isObject(params) && Array.isArray(params["options"]) ? params["options"] : []
  const reject = options.find((o): o is Json => isObject(o) && String(o["kind"]).startsWith("reject"))
  return reject === undefined
    ? { outcome: { outcome: "cancelled" } }
    : { outcome: { outcome: "selected", optionId: reject["optionId"] } }
}

const textOf = (content: unknown): string =>
  Array.isArray(content)
    ? content.map((c) => (isObject(c) && isObject(c["content"]) ? String(c["content"]["text"] ?? "") : "")).join("")
    : ""

const usageOf = (result: unknown) => {
  const quota = isObject(result) && isObject(result["_meta"]) ? result["_meta"]["quota"] : undefined
  const count = isObject(quota) && isObject(quota["token_count"]) ? quota["token_count"] : {}
  const n = (v: unknown) => (typeof v === "number" ? v : undefined)
  return { inputTokens: n(count["input_tokens"]), outputTokens: n(count["output_tokens"]) }
}

/**
 * Reads one prompt's `session/update` notifications: the answer's text chunks, and the CLI's tool
 * calls as `AgentToolStart`/`AgentToolEnd`, each reported to `emit` as it arrives.
 */
export const makeUpdateReader = (emit: Emit | undefined) => {
  let text = ""
  const activity: Array<AgentToolStart | AgentToolEnd> = []
  const titles = new Map<string, string>()
  const report = (event: ChatEvent) => (emit === undefined ? Effect.void : emit(event))
  const onUpdate = (update: Json): Effect.Effect<void> => {
    const kind = update["sessionUpdate"]
    if (kind === "agent_message_chunk" && isObject(update["content"])) {
      const delta = String(update["content"]["text"] ?? "")
      text += delta
      return delta === "" ? Effect.void : report(new TextDelta({ text: delta }))
    }
    const id = String(update["toolCallId"] ?? "")
    if (kind === "tool_call") {
      const name = String(update["title"] ?? "tool")
      titles.set(id, name)
      const event = new AgentToolStart({ id, name, input: update["rawInput"] ?? {} })
      activity.push(event)
      return report(event)
    }
    if (kind === "tool_call_update" && (update["status"] === "completed" || update["status"] === "failed")) {
      const event = new AgentToolEnd({
        id,
        name: titles.get(id) ?? String(update["title"] ?? "tool"),
        result: textOf(update["content"]),
        isError: update["status"] === "failed"
      })
      activity.push(event)
      return report(event)
    }
    return Effect.void
  }
  /** The prompt's outcome from its `session/prompt` result. */
  const outcome = (sessionId: string, result: unknown): AcpOutcome => {
    const stopReason = isObject(result) && typeof result["stopReason"] === "string" ? result["stopReason"] : undefined
    return { sessionId, text, stopReason, ...usageOf(result), activity }
  }
  return { onUpdate, outcome }
}

/**
 * The turn's state machine: each stdout line may answer a request (then the next request is
 * sent), report progress (`session/update`), or ask the client something (`session/request_permission`).
 */
const makeProtocol = (turn: AcpTurn, send: (line: string) => Effect.Effect<void>, finish: Effect.Effect<void>) => {
  const requests = new Map<number, string>()
  let nextId = 0
  let sessionId = turn.sessionId
  let prompting = false
  let loaded = false
  let outcome: AcpOutcome | undefined
  const reader = makeUpdateReader(turn.emit)

  const request = (method: string, params: unknown) => {
    const id = ++nextId
    requests.set(id, method)
    return send(rpc(id, method, params))
  }
  const start = request("initialize", { protocolVersion: 1, clientCapabilities: {} })

  const prompt = () => {
    prompting = true
    return request("session/prompt", promptParams(sessionId ?? "", turn.blocks))
  }

  const onUpdate = (update: Json) => {
    // `session/load` replays the session's history as updates, without a marker, after its
    // response; the command list it schedules behind the replay says the replay is over.
    if (!prompting) return loaded && isReplayEnd(update) ? prompt() : Effect.void
    return reader.onUpdate(update)
  }

  const onResponse = (method: string, result: unknown): Effect.Effect<void> => {
    if (method === "initialize") {
      const session = { cwd: turn.cwd, mcpServers: turn.mcpServers }
      return sessionId === undefined
        ? request("session/new", session)
        : request("session/load", { ...session, sessionId })
    }
    if (method === "session/new") {
      if (isObject(result) && typeof result["sessionId"] === "string") sessionId = result["sessionId"]
      return prompt()
    }
    if (method === "session/load") {
      loaded = true
      return Effect.void
    }
    if (method === "session/prompt") {
      outcome = reader.outcome(sessionId ?? "", result)
      return finish
    }
    return Effect.void
  }

  const line = (raw: string): Effect.Effect<void, AcpFailure> => {
    const message = parse(raw)
    if (message === undefined) return Effect.void
    const method = message["method"]
    if (typeof method === "string") {
      if (method === "session/update" && isObject(message["params"]) && isObject(message["params"]["update"])) {
        return onUpdate(message["params"]["update"])
      }
      if (message["id"] === undefined) return Effect.void
      return send(
        method === "session/request_permission"
          ? reply(message["id"], { result: refusal(message["params"]) })
          : reply(message["id"], { error: { code: -32601, message: `${method} is not offered by this client` } })
      )
    }
    const asked = requests.get(Number(message["id"]))
    if (asked === undefined) return Effect.void
    const error = message["error"]
    if (isObject(error)) return Effect.fail(failureOf(asked, error))
    return onResponse(asked, message["result"])
  }

  return { start, line, outcome: () => outcome, sessionId: () => sessionId }
}

/**
 * Runs `gemini --acp` for one turn. Succeeds with `undefined` when the CLI ended without
 * answering the prompt (its exit code and stderr then tell why).
 */
export const runTurn = Effect.fnUntraced(function*(
  subprocess: SubprocessService,
  runOptions: Omit<RunOptions, "input" | "stdin">,
  turn: AcpTurn,
  settle: Duration.Input = Duration.seconds(1)
) {
  const input = yield* Queue.unbounded<string, Cause.Done>()
  const answered = yield* Deferred.make<void>()
  const protocol = makeProtocol(
    turn,
    (line) => Effect.asVoid(Queue.offer(input, line)),
    Effect.andThen(Queue.end(input), Deferred.succeed(answered, undefined))
  )
  yield* protocol.start
  const drain = subprocess.stream({ ...runOptions, input: Stream.fromQueue(input) }).pipe(
    Stream.runForEach(protocol.line),
    Effect.ensuring(Queue.end(input))
  )
  // With an MCP server connected the CLI does not exit on the end of its stdin: once it answered,
  // it gets `settle` to finish writing its session file, then the stream's end stops it.
  yield* Effect.raceFirst(drain, Effect.andThen(Deferred.await(answered), Effect.sleep(settle)))
  return protocol.outcome()
})
