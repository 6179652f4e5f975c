/**
 * `effect-chat-bridge/ag-ui` spoken to by `@ag-ui/client`'s `HttpAgent` in plain Node: the real
 * `claude` binary (kept alive) against the fake Messages API, served by `ClaudeAgUi.layer` on a
 * loopback Node HTTP server. A run streams text and a tool call; an aborted run stops the turn and
 * the next run has its history; a run sent while a tool runs is steered into it; a parked tool call
 * is approved from a server started after the first one stopped.
 */
import { type BaseEvent, HttpAgent } from "@ag-ui/client"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as NetAddress from "effect/net/NetAddress"
import * as Scope from "effect/Scope"
import { createServer } from "node:http"
import * as ClaudeAgUi from "../../src/ai/ClaudeAgUi.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localServices, requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { allText } from "../support/liveHarness.ts"

let ids = 0

/** The model: tools by keyword, a story that hangs mid-answer, an echo otherwise. */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults({
    ...req,
    body: { ...req.body, messages: (req.body.messages ?? []).filter((m) => m.role === "user").slice(-1) }
  })
  if (results.length > 0) return { text: `after tool: ${results.map((r) => r.content).join(" | ")}` }
  const last = Fake.lastUserText(req)
  if (last.includes("story")) return { text: "Once upon a time, in a land far away", breakMidway: "hang" }
  const amount = /amount (\d+)/.exec(last)
  if (amount !== null) {
    return {
      toolUses: [{ id: `toolu_agui_${++ids}`, name: "mcp__gtb__transfer", input: { amount: Number(amount[1]) } }]
    }
  }
  for (const name of ["lookup", "wait"]) {
    if (last.includes(name)) return { toolUses: [{ id: `toolu_agui_${++ids}`, name: `mcp__gtb__${name}`, input: {} }] }
  }
  return { text: `You said: ${Fake.lastUserLine(req)}` }
}

const lookup = Tool.make("lookup", {
  description: "Looks a word up",
  parameters: {},
  handler: () => Effect.succeed("found it")
})

/**
 * Serves ClaudeAgUi on 127.0.0.1 in a scope of its own (closing it is the server's restart), each
 * thread a kept-alive ClaudeLocal in `box` with `tools`; its URL and the scope.
 */
const serve = (box: Sandbox, tools: ReadonlyArray<Tool.Tool>, store?: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const conversation = ({ resume }: ClaudeAgUi.Thread) => {
      const claude = ClaudeLocal.layer({
        binary: claudeBinary,
        cwd: box.cwd,
        env: box.env,
        requestTimeout,
        keepAlive: true,
        toolPolicy: { disabledTools: ["Bash"] },
        resume
      }).pipe(
        Layer.provide(localServices(box)),
        Layer.tap((context) => Context.get(context, ChatClient).setTools(tools))
      )
      return store === undefined
        ? claude
        : claude.pipe(Layer.provide(ClaudeSessionStoreSql.layerSqlite({ filename: store })))
    }
    const server = HttpRouter.serve(ClaudeAgUi.layer({ conversation }), { disableLogger: true, disableListenLog: true })
      .pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })))
    const context = yield* Layer.buildWithScope(server, scope)
    const address = Context.get(context, HttpServer.HttpServer).address
    const port = NetAddress.isInetAddress(address) ? address.port : -1
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    return { url: `http://127.0.0.1:${port}/agent`, scope }
  })

/** An `HttpAgent` on `threadId`, recording every event it receives. */
const agentOn = (url: string, threadId: string) => {
  const agent = new HttpAgent({ url, threadId })
  const events: Array<BaseEvent> = []
  agent.subscribe({ onEvent: ({ event }) => void events.push(event) })
  return { agent, events }
}

/** Sends `text` as a user message and runs the agent; the run's result and events. */
const send = (client: ReturnType<typeof agentOn>, text: string, params: Parameters<HttpAgent["runAgent"]>[0] = {}) =>
  Effect.promise(() => {
    const from = client.events.length
    if (text !== "") client.agent.addMessage({ id: `user-${++ids}`, role: "user", content: text })
    return client.agent.runAgent(params).then(
      (result) => ({ result, events: client.events.slice(from) }),
      (error: unknown) => ({ result: undefined, error, events: client.events.slice(from) })
    )
  })

const types = (events: ReadonlyArray<BaseEvent>) => events.map((event) => event.type as string)

const textOf = (events: ReadonlyArray<BaseEvent>) =>
  events.flatMap((event) =>
    event.type === "TEXT_MESSAGE_CONTENT" ? [(event as unknown as { delta: string }).delta] : []
  )
    .join("")

describeWithClaude("ClaudeAgUi: an AG-UI HttpAgent against a Claude Code conversation (real claude)", () => {
  it.live(
    "a run streams text and a tool call; the next run on the thread continues the conversation",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const { url } = yield* serve(box, [lookup])
        const client = agentOn(url, "thread-stream")
        const first = yield* send(client, "Please lookup the word")
        expect(types(first.events)).toEqual(expect.arrayContaining(["RUN_STARTED", "RUN_FINISHED"]))
        // Arguments and text arrive in pieces: one kind per piece, repeats folded.
        const kinds = types(first.events).filter((t) => t.startsWith("TOOL_CALL") || t.startsWith("TEXT_MESSAGE"))
          .filter((t, i, all) => t !== all[i - 1])
        expect(kinds).toEqual([
          "TOOL_CALL_START",
          "TOOL_CALL_ARGS",
          "TOOL_CALL_END",
          "TOOL_CALL_RESULT",
          "TEXT_MESSAGE_START",
          "TEXT_MESSAGE_CONTENT",
          "TEXT_MESSAGE_END"
        ])
        const start = first.events.find((e) => e.type === "TOOL_CALL_START") as unknown as { toolCallName: string }
        expect(start.toolCallName).toBe("lookup")
        const result = first.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string }
        expect(result.content).toBe("found it")
        expect(textOf(first.events)).toBe("after tool: found it")
        // HttpAgent folded the events into its messages: the tool call, its result and the answer.
        expect(client.agent.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"])

        const second = yield* send(client, "Remember pineapple")
        expect(textOf(second.events)).toBe("You said: Remember pineapple")
        // One CLI served both runs, and the model saw the first run in the second's history.
        expect(claudeProcessesIn(box.cwd)).toHaveLength(1)
        expect(allText(api.messageRequests().at(-1))).toContain("after tool: found it")
      }),
    { timeout: 180_000 }
  )
})
