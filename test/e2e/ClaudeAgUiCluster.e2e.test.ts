/**
 * `effect-chat-bridge/ag-ui` in front of the cluster: this process serves `ClaudeAgUi` on a
 * loopback Node HTTP server as a client-only cluster member, each thread the cluster conversation
 * of the same id (`ClaudeConversation.layerChatClient` + `layerLive` + `layerApprovals`); one
 * runner process on a SQLite file hosts it (the real `claude` against the fake Messages API in
 * this process). `@ag-ui/client`'s `HttpAgent`:
 *
 * - gets a streamed answer with the runner's tool call, and the next run continues the thread;
 * - a run sent from another tab while the runner's tool runs is steered into the running turn;
 * - parks a call that needs an approval (an AG-UI interrupt) and approves it through `resume`:
 *   the tool runs once on the runner and the model gets its result;
 * - aborts a run mid-answer: the runner's turn stops and the next run has it in its history,
 *   also on a thread's very first message.
 */
import { type BaseEvent, HttpAgent } from "@ag-ui/client"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as NetAddress from "effect/net/NetAddress"
import { createServer } from "node:http"
import { join } from "node:path"
import * as ClaudeAgUi from "../../src/ai/ClaudeAgUi.ts"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import { sideEffects, startRunner } from "../support/clusterProcesses.ts"
import { shardsSettled, sharedStorage, tempDir } from "../support/clusterStorage.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { allText, until } from "../support/liveHarness.ts"

let ids = 0

/** The model: the runner's tools by keyword, a story that hangs mid-answer, an echo otherwise. */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = Fake.toolResults({
    ...req,
    body: { ...req.body, messages: (req.body.messages ?? []).filter((m) => m.role === "user").slice(-1) }
  })
  if (results.length > 0) return { text: `after tool: ${results.map((r) => r.content).join(" | ")}` }
  const last = Fake.lastUserLine(req)
  if (last.includes("story")) return { text: "Once upon a time, in a land far away", breakMidway: "hang" }
  const charge = /charge (\d+)( slowly)?/.exec(last)
  if (charge !== null) {
    const input = { amount: Number(charge[1]), ...(charge[2] === undefined ? {} : { wait: 3 }) }
    return { toolUses: [{ id: `toolu_cl_${++ids}`, name: "mcp__gtb__charge", input }] }
  }
  const transfer = /transfer (\d+)/.exec(last)
  if (transfer !== null) {
    return {
      toolUses: [{ id: `toolu_cl_${++ids}`, name: "mcp__gtb__transfer", input: { amount: Number(transfer[1]) } }]
    }
  }
  return { text: `You said: ${last}` }
}

/** Each thread: the cluster conversation of the same id, with its live controls and approvals. */
const conversation = ({ threadId }: ClaudeAgUi.Thread) =>
  Layer.mergeAll(
    ClaudeConversation.layerChatClient(threadId),
    ClaudeConversation.layerLive(threadId),
    ClaudeConversation.layerApprovals(threadId)
  )

const types = (events: ReadonlyArray<BaseEvent>) => events.map((event) => event.type as string)

const textOf = (events: ReadonlyArray<BaseEvent>) =>
  events.flatMap((event) =>
    event.type === "TEXT_MESSAGE_CONTENT" ? [(event as unknown as { delta: string }).delta] : []
  ).join("")

describeWithClaude("ClaudeAgUi over the cluster: an AG-UI HttpAgent, one SQLite runner (real claude)", () => {
  it.live(
    "a thread is the cluster conversation of its id: streamed tool call and answer, steer, approval through resume, Stop",
    () =>
      Effect.gen(function*() {
        const { sql, storage } = yield* sharedStorage("SQLite")
        const api = yield* Fake.make(model)
        const effectsFile = join(yield* tempDir("ecb-side-effects-"), "side-effects.jsonl")
        const runner = yield* startRunner({
          name: "runner-1",
          storage,
          apiUrl: api.url,
          sideEffects: effectsFile,
          env: { APPROVAL_TOOL: "1" }
        })
        yield* Effect.provide(shardsSettled("SQLite", 1), sql)

        const server = HttpRouter.serve(ClaudeAgUi.layer({ conversation }), {
          disableLogger: true,
          disableListenLog: true
        }).pipe(
          Layer.provide(ClaudeCluster.layerClient()),
          Layer.provide(sql),
          Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 }))
        )
        const address = Context.get(yield* Layer.build(server), HttpServer.HttpServer).address
        const url = `http://127.0.0.1:${NetAddress.isInetAddress(address) ? address.port : -1}/agent`

        const agent = new HttpAgent({ url, threadId: "thread-cluster" })
        const events: Array<BaseEvent> = []
        agent.subscribe({ onEvent: ({ event }) => void events.push(event) })
        const send = (text: string, params: Parameters<HttpAgent["runAgent"]>[0] = {}) =>
          Effect.promise(() => {
            const from = events.length
            if (text !== "") agent.addMessage({ id: `user-${++ids}`, role: "user", content: text })
            return agent.runAgent(params).then(
              (result) => ({ result, events: events.slice(from) }),
              (error: unknown) => ({ result: undefined, error, events: events.slice(from) })
            )
          })

        // The runner's tool call streams as AG-UI tool call events, then the answer.
        const first = yield* send("Please charge 3")
        expect(types(first.events)).not.toContain("RUN_ERROR")
        const start = first.events.find((e) => e.type === "TOOL_CALL_START") as unknown as { toolCallName: string }
        expect(start.toolCallName).toBe("charge")
        const result = first.events.find((e) => e.type === "TOOL_CALL_RESULT") as unknown as { content: string }
        expect(result.content).toBe("charged 3")
        expect(textOf(first.events)).toBe("after tool: charged 3")
        expect(runner.hosted("thread-cluster")).toBe(true)

        const second = yield* send("Remember pineapple")
        expect(textOf(second.events)).toBe("You said: Remember pineapple")
        expect(allText(api.messageRequests().at(-1))).toContain("after tool: charged 3")

        // Typing while it works: a run from another tab during the runner's tool call is steered
        // into the running turn (through the cluster's live controls) and ends at once.
        const slow = yield* Effect.forkChild(send("Please charge 4 slowly"))
        yield* until(() => sideEffects(effectsFile).some((e) => e.tool === "charge:start" && e.input["amount"] === 4))
        const tab = new HttpAgent({ url, threadId: "thread-cluster" })
        tab.addMessage({ id: `user-${++ids}`, role: "user", content: "Also say banana" })
        const steered = yield* Effect.promise(() => tab.runAgent())
        expect(steered.result).toEqual({ steered: true })
        const charged = yield* Fiber.join(slow)
        expect(textOf(charged.events)).toMatch(/^after tool: charged 4(You said: Also say banana)?$/)
        const carrying = allText(api.messageRequests().at(-1))
        expect(carrying.indexOf("Also say banana")).toBeGreaterThan(carrying.indexOf("charged 4"))

        // A parked call: an AG-UI interrupt, approved through resume; the runner runs it once.
        const parked = yield* send("Please transfer 5")
        const finished = parked.events.find((e) => e.type === "RUN_FINISHED") as unknown as {
          readonly outcome?: {
            readonly type: string
            readonly interrupts: ReadonlyArray<{ id: string; metadata?: Record<string, unknown> }>
          }
        }
        expect(finished.outcome?.type).toBe("interrupt")
        const [interrupt] = finished.outcome!.interrupts
        expect(interrupt!.metadata?.[ClaudeAgUi.MetadataKey]).toEqual({ tool: "transfer", input: { amount: 5 } })
        expect(sideEffects(effectsFile).filter((e) => e.tool === "transfer")).toEqual([])
        const approved = yield* send("", {
          resume: [{ interruptId: interrupt!.id, status: "resolved", payload: { approved: true } }]
        })
        expect(types(approved.events)).not.toContain("RUN_ERROR")
        expect(textOf(approved.events)).toBe("after tool: sent 5")
        expect(sideEffects(effectsFile).filter((e) => e.tool === "transfer").map((e) => e.input)).toEqual([{
          amount: 5
        }])

        // Stop mid-answer: the runner's turn stops (its CLI stays); the next run has it in its history.
        const story = yield* Effect.forkChild(send("Tell me a story"))
        yield* until(() => events.some((e) => e.type === "TEXT_MESSAGE_CONTENT" && textOf([e]).includes("Once")))
        const clis = runner.clis()
        expect(clis).toHaveLength(1)
        agent.abortRun()
        yield* Fiber.join(story)
        const next = yield* send("What was the fruit?")
        expect(textOf(next.events)).toBe("You said: What was the fruit?")
        const history = allText(api.messageRequests().at(-1))
        expect(history).toContain("pineapple")
        expect(history).toContain("Tell me a story")
        expect(history).toContain("Request interrupted by user")
        expect(history).toContain("sent 5")
        expect(runner.clis()).toEqual(clis)
        // The runner hosted the thread once, throughout.
        expect(runner.lines().filter((l) => l === "HOSTING thread-cluster")).toHaveLength(1)

        // Stop on a thread's very first message: the runner keeps the stopped turn all the same.
        const fresh = new HttpAgent({ url, threadId: "thread-cluster-first" })
        const seen: Array<BaseEvent> = []
        fresh.subscribe({ onEvent: ({ event }) => void seen.push(event) })
        fresh.addMessage({ id: `user-${++ids}`, role: "user", content: "Tell me a story about pears" })
        const pears = yield* Effect.forkChild(Effect.promise(() => fresh.runAgent().catch(() => undefined)))
        yield* until(() => seen.some((e) => e.type === "TEXT_MESSAGE_CONTENT"))
        fresh.abortRun()
        yield* Fiber.join(pears)
        fresh.addMessage({ id: `user-${++ids}`, role: "user", content: "What was the fruit?" })
        const from = seen.length
        yield* Effect.promise(() => fresh.runAgent())
        expect(textOf(seen.slice(from))).toBe("You said: What was the fruit?")
        expect(allText(api.messageRequests().at(-1))).toContain("story about pears")
      }).pipe(Effect.scoped),
    { timeout: 180_000 }
  )
})
