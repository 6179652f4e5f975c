/**
 * Approvals through the cluster (issue 47): two runner processes share one SQLite file; the real
 * `claude` answers from the fake Messages API in this process; this process is a client-only
 * member, so every decision crosses to the runner hosting the conversation.
 *
 * - A turn asks for `transfer` (it needs an approval): the CLI parks the call and the caller's
 *   turn fails with the `ApprovalRequired` reason, naming the conversation; `list` shows it.
 * - The hosting runner is SIGKILLed (with its CLI); approving from this process resumes the
 *   parked session on the other runner: the tool runs there once and the model gets its result.
 *   Approving again returns the same answer and runs nothing.
 * - A second parked call is denied through `ClaudeConversation.layerApprovals` (code written
 *   against `ClaudeApprovals`): the model reads the reason, the tool never ran; approving the
 *   denied call fails with `AlreadyDecided`.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { join } from "node:path"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import { type ApprovalRequired, ProviderError } from "../../src/services/ChatClient.ts"
import { ClaudeApprovals } from "../../src/services/ClaudeApprovals.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import { currentHost, sideEffects, startRunner } from "../support/clusterProcesses.ts"
import { retryStorage, shardsSettled, sharedStorage, tempDir } from "../support/clusterStorage.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const toolName = "mcp__gtb__transfer"
let ids = 0

/** The tool results of a request's user messages (on resume a system message may follow them). */
const resultsOf = (req: Fake.FakeRequest) =>
  Fake.toolResults({
    ...req,
    body: { ...req.body, messages: (req.body.messages ?? []).filter((m) => m.role === "user") }
  })

/** The model: "Transfer N" calls `transfer` with N; once it has a tool result it answers with it. */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const results = resultsOf(req)
  if (results.length > 0) return { text: `done: ${results.map((r) => `${r.content}|${r.is_error}`).join(" ; ")}` }
  const amount = Number(/Transfer (\d+)/.exec(Fake.lastUserText(req))?.[1] ?? 1)
  return { toolUses: [{ id: `toolu_cl_${++ids}`, name: toolName, input: { amount } }] }
}

const conversationId = "conv-approvals"

const within = (what: string) =>
  Effect.timeoutOrElse({
    duration: "120 seconds",
    orElse: () => Effect.die(new Error(`${what} was not answered within 120 s`))
  })

/** The `ApprovalRequired` a turn failed with. */
const parkedOf = (error: unknown): ApprovalRequired => {
  expect(error).toBeInstanceOf(ProviderError)
  const reason = (error as ProviderError).reason
  expect(reason._tag).toBe("ApprovalRequired")
  return reason as ApprovalRequired
}

describeWithClaude("ClaudeConversation approvals (runner processes)", () => {
  it.live(
    "SQLite: a call parked on one runner is approved from a client after that runner dies, and runs once",
    () =>
      Effect.gen(function*() {
        const { sql, storage } = yield* sharedStorage("SQLite")
        const api = yield* Fake.make(model)
        const effectsDir = yield* tempDir("ecb-side-effects-")
        const effectsFile = join(effectsDir, "side-effects.jsonl")
        const runners = yield* Effect.all(
          [1, 2].map((n) =>
            startRunner({
              name: `runner-${n}`,
              storage,
              apiUrl: api.url,
              sideEffects: effectsFile,
              env: { APPROVAL_TOOL: "1" }
            })
          ),
          { concurrency: "unbounded" }
        )
        yield* Effect.provide(shardsSettled("SQLite", runners.length), sql)
        const transfers = (amount: number) =>
          sideEffects(effectsFile).filter((e) => e.tool === "transfer" && e.input["amount"] === amount)

        yield* Effect.gen(function*() {
          const conversations = yield* ClaudeConversation.client
          const c = yield* conversations(conversationId)
          const park = (amount: number) =>
            c.chat(`Transfer ${amount} please`, { turnId: `transfer-${amount}` }).pipe(
              retryStorage,
              Effect.flip,
              within(`the turn asking for transfer ${amount}`),
              Effect.map(parkedOf)
            )

          // The turn parks the call: the caller learns the approval and the conversation.
          const first = yield* park(7)
          expect(first).toMatchObject({ tool: "transfer", input: { amount: 7 }, conversationId })
          expect(transfers(7)).toEqual([])
          const listed = yield* c.approvals.list.pipe(retryStorage)
          expect(listed.map((a) => a.approvalId)).toEqual([first.approvalId])
          expect(listed[0]).toMatchObject({ state: "pending", tool: "transfer", sessionId: first.sessionId })

          // The runner holding the parked call dies; the approval resumes it on the other one.
          const hostA = currentHost(runners, conversationId)!
          expect(hostA).toBeDefined()
          yield* hostA.kill
          const answer = yield* c.approvals.approve(first.approvalId).pipe(retryStorage, within("the approval"))
          expect(answer).toBe("done: sent 7|false")
          expect(transfers(7)).toHaveLength(1)
          const hostB = currentHost(runners, conversationId)
          expect(hostB).toBeDefined()
          expect(hostB).not.toBe(hostA)
          expect(transfers(7)[0]!.pid).toBe(hostB!.pid)

          // Approving again: the same answer, nothing runs, no model call.
          const requests = api.messageRequests().length
          expect(yield* c.approvals.approve(first.approvalId).pipe(retryStorage, within("the second approval")))
            .toBe(answer)
          expect(transfers(7)).toHaveLength(1)
          expect(api.messageRequests().length).toBe(requests)

          // Code written against ClaudeApprovals, on the cluster: deny reaches the model, nothing runs.
          const second = yield* park(9)
          expect(second.conversationId).toBe(conversationId)
          yield* Effect.gen(function*() {
            const approvals = yield* ClaudeApprovals
            expect((yield* approvals.list()).map((a) => a.approvalId)).toEqual([second.approvalId])
            const denied = yield* approvals.deny(second.approvalId, "over the daily limit").pipe(
              within("the denial")
            )
            expect(denied).toContain("over the daily limit")
            expect(denied).toContain("|true")
            expect(transfers(9)).toEqual([])
            expect(yield* approvals.deny(second.approvalId, "over the daily limit")).toBe(denied)
            const refused = yield* Effect.flip(approvals.approve(second.approvalId))
            expect(refused).toMatchObject({ _tag: "ApprovalError", reason: { _tag: "AlreadyDecided" } })
            expect(transfers(9)).toEqual([])
            expect(yield* approvals.list()).toEqual([])
          }).pipe(Effect.provide(ClaudeConversation.layerApprovals(conversationId)))

          // The conversation goes on from the resumed session.
          const history = JSON.stringify(api.messageRequests().at(-1)?.body.messages)
          expect(history).toContain("Transfer 7 please")
          expect(history).toContain("sent 7")
        }).pipe(Effect.provide(ClaudeCluster.layerClient().pipe(Layer.provide(sql))))
      }).pipe(Effect.scoped),
    300_000
  )
})
