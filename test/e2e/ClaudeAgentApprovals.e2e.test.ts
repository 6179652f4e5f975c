/**
 * Durable approvals on ClaudeAgent, on the real `claude` binary (the Agent SDK's) against the fake
 * API. A program (a child process, sandbox A) asks for a tool that needs an approval; the gate (an
 * HTTP hook in the settings file the SDK passes to the CLI) defers the call, the turn ends with
 * `ApprovalRequired`, and the program exits. This process (sandbox B: another HOME, config dir and
 * cwd, the same SQLite store) approves or denies it: the SDK resumes the session with no user
 * message, the CLI asks the gate again, and the tool runs exactly once (or never) with the model
 * reading its result (or the reason). Deciding a call twice runs nothing twice; two such calls in
 * one message are refused with a reason the model reads.
 */
import { expect, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { notAlone } from "../../src/internal/claude/approvals.ts"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import { ChatClient } from "../../src/services/ChatClient.ts"
import { ClaudeApprovals } from "../../src/services/ClaudeApprovals.ts"
import { allow, defer } from "../../src/services/ClaudeCodeOptions.ts"
import { claudeBinary, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { requestTimeout } from "../support/claudeClients.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { runTsx } from "../support/runTsx.ts"
import { transfer } from "./fixtures/approvalTool.ts"

const program = resolve("test/e2e/fixtures/approvalProgram.ts")
const toolName = "mcp__gtb__transfer"
let ids = 0

/** The tool results of a request's user messages (on resume the CLI may add a system message after them). */
const resultsOf = (req: Fake.FakeRequest) =>
  Fake.toolResults({
    ...req,
    body: { ...req.body, messages: (req.body.messages ?? []).filter((m) => m.role === "user") }
  })

/**
 * The model: a prompt naming an amount calls `transfer` with it ("twice" makes two calls in one
 * message); once it has tool results it answers with them.
 */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = resultsOf(req)
  if (results.length > 0) return { text: `done: ${results.map((r) => `${r.content}|${r.is_error}`).join(" ; ")}` }
  const amount = Number(/amount (\d+)/.exec(Fake.lastUserText(req))?.[1] ?? 1)
  const call = (n: number) => ({ id: `toolu_agent_appr_${++ids}`, name: toolName, input: { amount: n } })
  return { toolUses: Fake.lastUserText(req).includes("twice") ? [call(amount), call(amount + 1)] : [call(amount)] }
}

/** Lines the tool appended, one per run. */
const runs = (log: string) => existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l !== "") : []

/** The tool results the model received, over every request. */
const received = (api: Fake.FakeMessagesApi) => api.messageRequests().flatMap(resultsOf)

/** The program on ClaudeAgent in sandbox `box`: one deferred conversation per prompt, as printed. */
const deferIn = (box: Sandbox, store: string, log: string, prompts: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const run = yield* runTsx(program, {
      ...box.env,
      APPROVAL_PROVIDER: "agent",
      CLAUDE_BINARY: claudeBinary,
      CLAUDE_CWD: box.cwd,
      APPROVAL_STORE: store,
      RUN_LOG: log
    }, prompts)
    expect(run.code, run.stderr).toBe(0)
    const lines = run.stdout.split("\n").filter((l) => l.startsWith("{")).map((l) =>
      JSON.parse(l) as { approvalId?: string; sessionId?: string; tool?: string; error?: string }
    )
    expect(lines.length, run.stdout + run.stderr).toBe(prompts.length)
    return lines
  })

/** The approving side: a ClaudeAgent client in `box` on the shared store, with the same tool. */
const approver = (box: Sandbox, store: string, log: string, options: ClaudeAgent.Options = {}) =>
  Effect.gen(function*() {
    const layer = ClaudeAgent.layer({
      cwd: box.cwd,
      env: box.env,
      requestTimeout,
      toolPolicy: { disabledTools: ["Bash"] },
      ...options
    }).pipe(Layer.provide(ClaudeSessionStoreSql.layerSqlite({ filename: store })), Layer.orDie)
    const context = yield* Layer.build(layer)
    const chat = Context.get(context, ChatClient)
    yield* chat.setTools([transfer(log)])
    return { chat, approvals: Context.get(context, ClaudeApprovals) }
  })

describeWithClaude("ClaudeApprovals on ClaudeAgent (real claude)", () => {
  it.live(
    "a deferred call decided from another process: approve runs it once with the approver's input, twice runs nothing; deny never runs it",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const [boxA, boxB] = [yield* sandbox(api.url), yield* sandbox(api.url)]
        const store = join(boxB.dir, "store.sqlite")
        const log = join(boxB.dir, "runs.log")
        const [approve, deny] = yield* deferIn(boxA, store, log, ["Send amount 5", "Send amount 9"])
        expect(approve!.tool, JSON.stringify(approve)).toBe("transfer")
        expect(deny!.tool, JSON.stringify(deny)).toBe("transfer")
        expect(runs(log)).toEqual([])

        const { approvals } = yield* approver(boxB, store, log)
        const pending = yield* approvals.list()
        expect(pending.map((p) => p.approvalId).sort()).toEqual([approve!.approvalId, deny!.approvalId].sort())
        expect(pending.find((p) => p.approvalId === approve!.approvalId)?.input).toEqual({ amount: 5 })

        const answer = yield* approvals.approve(approve!.approvalId!, { updatedInput: { amount: 6 } })
        expect(answer).toBe("done: sent 6|false")
        expect(runs(log)).toEqual(["6"])
        expect(received(api).filter((r) => r.content === "sent 6")).toHaveLength(1)
        // Twice: the stored answer, and the tool does not run again.
        expect(yield* approvals.approve(approve!.approvalId!)).toBe(answer)
        expect(runs(log)).toEqual(["6"])

        const refused = yield* approvals.deny(deny!.approvalId!, "not today")
        expect(refused).toMatch(/^done: .*not today.*\|true$/)
        expect(runs(log)).toEqual(["6"])
        expect(yield* approvals.list()).toEqual([])
      }),
    { timeout: 240_000 }
  )

  it.live(
    "keepAlive: canUseTool allows at once or defers, two such calls in one message are refused, an approval continues the conversation",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(model)
        const box = yield* sandbox(api.url)
        const store = join(box.dir, "store.sqlite")
        const log = join(box.dir, "runs.log")
        const { approvals, chat } = yield* approver(box, store, log, {
          keepAlive: true,
          canUseTool: (request) => Effect.succeed(Number(request.input["amount"]) < 3 ? allow() : defer())
        })
        expect(yield* chat.chat("Send amount 2")).toBe("done: sent 2|false")
        // Two calls in one message cannot wait: each is refused, and the model reads why.
        const batch = yield* chat.chat("Send amount 3 twice")
        expect(batch.split(" ; ").map((r) => r.endsWith(`${notAlone}|true`))).toEqual([true, true])
        const parked = yield* chat.chat("Send amount 7").pipe(Effect.flip)
        const reason = parked._tag === "ProviderError" ? parked.reason : undefined
        if (reason?._tag !== "ApprovalRequired") return expect.unreachable(`not parked: ${parked.message}`)
        expect(runs(log)).toEqual(["2"])
        expect(yield* approvals.approve(reason.approvalId)).toBe("done: sent 7|false")
        expect(yield* chat.chat("Send amount 1")).toBe("done: sent 1|false")
        expect(runs(log)).toEqual(["2", "7", "1"])
        expect(JSON.stringify(api.messageRequests().at(-1)!.body.messages)).toContain("sent 7")
      }),
    { timeout: 240_000 }
  )
})
