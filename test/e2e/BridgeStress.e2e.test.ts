/**
 * Many fresh `claude` CLIs calling the bridge at once (issue 30): every tool call must reach its
 * handler exactly once and its result must come back, even when the calls of one CLI are spaced
 * about as far apart as Node's keep-alive idle close (5 s + its 1 s grace), where a CLI reusing a
 * pooled socket the server is closing used to get ECONNRESET as the tool's result.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/services/Tool.ts"
import { sandbox } from "../support/claudeCli.ts"
import { localClient } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

/** `add` counting each distinct call, so a call run twice or never shows. */
const countingAdd = () => {
  const runs = new Map<string, number>()
  const tool = Tool.make("add", {
    description: "Adds two numbers",
    parameters: { a: Schema.Number, b: Schema.Number },
    handler: ({ a, b }) =>
      Effect.sync(() => {
        runs.set(`${a}+${b}`, (runs.get(`${a}+${b}`) ?? 0) + 1)
        return a + b
      })
  })
  return { tool, runs }
}

const Prompt = /^Conversation (\d+), turn (\d+): add$/m

/** A message's text blocks (or string content), joined. */
const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : (content as Array<{ type?: string; text?: string }>).filter((b) => b.type === "text").map((b) => b.text).join(
      "\n"
    )

/**
 * The turn a request belongs to (its prompt, the last user message naming one) and the tool
 * results since. The CLI inserts reminders of its own as user text in a long turn (after about
 * 30 s), so neither "the last user text" nor "results since the last user text" would do.
 */
const turnOf = (req: Fake.FakeRequest) => {
  const messages = req.body.messages ?? []
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!
    const prompt = m.role === "user" ? Prompt.exec(textOf(m.content)) : null
    if (prompt === null) continue
    const seen = messages.slice(i + 1).flatMap((later) =>
      Fake.toolResults({ ...req, body: { messages: [later] } }).map((r) => r.content)
    )
    return { c: Number(prompt[1]), t: Number(prompt[2]), seen }
  }
  return undefined
}

/**
 * A model that makes `calls` tool calls per turn, the k-th adding `c*100 + t*10 + k` and 1000,
 * then answers with every result it saw; `delayMs(c, t, k)` holds the reply carrying call k.
 */
const model = (calls: number, delayMs: (c: number, t: number, k: number) => number) => (req: Fake.FakeRequest) => {
  const turn = turnOf(req)
  if (turn === undefined) return { text: "no prompt" }
  const { c, seen, t } = turn
  if (seen.length >= calls) return { text: `Sums: ${seen.join(",")}` }
  const k = seen.length
  return {
    toolUses: [{ name: "mcp__gtb__add", input: { a: c * 100 + t * 10 + k, b: 1000 } }],
    delayMs: delayMs(c, t, k)
  }
}

const expectedAnswer = (calls: number, c: number, t: number) =>
  `Sums: ${Array.from({ length: calls }, (_, k) => c * 100 + t * 10 + k + 1000).join(",")}`

/**
 * Runs `conversations` fresh-CLI conversations at once, `turns` turns each; returns the turns that
 * did not get the right answer, and checks every call ran exactly once.
 */
const stress = (options: {
  readonly conversations: number
  readonly turns: number
  readonly calls: number
  readonly delayMs: (c: number, t: number, k: number) => number
}) =>
  Effect.scoped(Effect.gen(function*() {
    const { calls, conversations, turns } = options
    const api = yield* Fake.make(model(calls, options.delayMs))
    const box = yield* sandbox(api.url)
    const add = countingAdd()
    const clients = yield* Effect.forEach(Array.from({ length: conversations }, (_, c) => c), () =>
      Effect.tap(localClient(box, { requestTimeout: "4 minutes" }), (chat) => chat.setTools([add.tool])))
    const answers = yield* Effect.forEach(clients, (chat, c) =>
      Effect.forEach(
        Array.from({ length: turns }, (_, t) =>
          t),
        (t) =>
          chat.chat(`Conversation ${c}, turn ${t}: add`).pipe(
            Effect.result,
            Effect.map((answer) => ({ c, t, answer }))
          )
      ), { concurrency: "unbounded" })
    const wrong = answers.flat().flatMap(({ answer, c, t }) =>
      answer._tag === "Success" && answer.success === expectedAnswer(calls, c, t)
        ? []
        : [`conversation ${c} turn ${t}: ${answer._tag === "Success" ? answer.success : String(answer.failure)}`]
    )
    const expected = new Set<string>()
    for (let c = 0; c < conversations; c++) {
      for (let t = 0; t < turns; t++) {
        for (let k = 0; k < calls; k++) {
          expected.add(`${c * 100 + t * 10 + k}+1000`)
        }
      }
    }
    const handlerRuns = [...new Set([...expected, ...add.runs.keys()])].flatMap((call) => {
      const n = add.runs.get(call) ?? 0
      return n === 1 && expected.has(call) ? [] : [`add(${call}) ran ${n} time(s)`]
    })
    return { wrong, handlerRuns }
  }))

/**
 * What a busy application does to the event loop the bridge shares: it blocks it `ms` out of
 * every `period` ms. A request that lands while the loop is blocked is read only after the
 * timers due meanwhile have run: the window in which a keep-alive close meets a reused socket.
 */
const busyLoop = (ms: number, period: number) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      setInterval(() => {
        const end = Date.now() + ms
        while (Date.now() < end) {
          // Deliberately busy: this is the load.
        }
      }, period)
    ),
    (timer) => Effect.sync(() => clearInterval(timer))
  )

describeWithClaude("the MCP bridge under many concurrent fresh claude CLIs", () => {
  it.live(
    "16 concurrent conversations × 3 tool-using turns, one CLI per turn: every call once, every result back",
    () =>
      Effect.gen(function*() {
        const { handlerRuns, wrong } = yield* stress({ conversations: 16, turns: 3, calls: 1, delayMs: () => 0 })
        expect({ wrong, handlerRuns }).toEqual({ wrong: [], handlerRuns: [] })
      }),
    240_000
  )

  it.live(
    "tool calls spaced across the keep-alive idle close, on a busy event loop: every call once, every result back",
    () =>
      Effect.scoped(Effect.gen(function*() {
        yield* busyLoop(60, 80)
        // Each CLI's calls come 5.8–6.0 s apart (plus its own latency of about 0.1 s): around the
        // moment Node closed an idle keep-alive socket (5 s keepAliveTimeout + 1 s), each call at
        // its own offset. Two rounds of 16 CLIs × 6 calls: 192 gaps.
        const wrong: Array<string> = []
        const handlerRuns: Array<string> = []
        for (let round = 0; round < 2; round++) {
          const result = yield* stress({
            conversations: 16,
            turns: 1,
            calls: 6,
            delayMs: (c, _t, k) => 5_800 + ((c * 6 + k) * 37 + round * 13) % 200
          })
          wrong.push(...result.wrong)
          handlerRuns.push(...result.handlerRuns)
        }
        expect({ wrong, handlerRuns }).toEqual({ wrong: [], handlerRuns: [] })
      })),
    240_000
  )
})
