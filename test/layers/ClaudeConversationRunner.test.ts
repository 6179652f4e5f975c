/**
 * ClaudeConversationRunner's RPC handlers, in this process, on a session client that has what a
 * Claude Code client has (live controls, approvals, the schema-less `ask`) as recording fakes: each
 * control reaches the hosted client's `ClaudeLive` with the caller's arguments, decisions reach its
 * approvals and are answered from the records when sent again, `ListApprovals` lists the
 * conversation's current session, and `Ask`'s raw answer is decoded by the caller and replayed.
 * (The real-binary runner tests are in test/cluster/ClaudeConversation.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as path from "node:path"
import { Approvals, AskRaw, type SessionClient } from "../../src/internal/claude/conversation.ts"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversationRunner from "../../src/layers/ClaudeConversationRunner.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import { type ClaudeApprovalsService, PendingApproval } from "../../src/services/ClaudeApprovals.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import {
  ClaudeLiveError,
  type ClaudeLiveService,
  ContextUsage,
  McpServerStatus,
  NoRunningTurn
} from "../../src/services/ClaudeLive.ts"
import { tempDir } from "../support/clusterStorage.ts"

/** Where the ClaudeLocal/ClaudeAgent clients keep their live controls (see conversation.ts's `liveOf`). */
const Live = Symbol.for("effect-chat-bridge/internal/live")

const parked = new PendingApproval({
  approvalId: "ap-1",
  projectKey: "default",
  sessionId: "session-1",
  toolUseId: "tu-1",
  tool: "transfer",
  input: { amount: 5 },
  state: "pending",
  createdAt: 1,
  expiresAt: 2
})

/** A session client whose live controls, approvals and raw ask record what reaches them. */
const fakeMake = (calls: Array<ReadonlyArray<unknown>>) => (): Effect.Effect<SessionClient> =>
  Effect.gen(function*() {
    const chat = yield* Scripted.make({ respond: () => Effect.succeed(Scripted.text("hi")) })
    const record = (...call: ReadonlyArray<unknown>) => Effect.sync(() => void calls.push(call))
    const live: ClaudeLiveService = {
      interrupt: Effect.fail(
        new ClaudeLiveError({ provider: "fake", reason: new NoRunningTurn({ control: "interrupt" }) })
      ),
      steer: (text, options) => record("steer", text, options?.when),
      setModel: (model) => record("setModel", model),
      setPermissionMode: (mode) => record("setPermissionMode", mode),
      setMaxThinkingTokens: (tokens) => record("setMaxThinkingTokens", tokens),
      contextUsage: Effect.succeed(
        new ContextUsage({ totalTokens: 10, maxTokens: 100, percentage: 10, model: "m", categories: [] })
      ),
      mcpStatus: Effect.succeed([new McpServerStatus({ name: "gtb", status: "connected" })])
    }
    const approvals: ClaudeApprovalsService = {
      approve: (approvalId, options) =>
        Effect.as(record("approve", approvalId, options?.updatedInput), `approved ${approvalId}`),
      deny: (approvalId, reason) => Effect.as(record("deny", approvalId, reason), `denied ${approvalId}`),
      list: (sessionId) => Effect.as(record("list", sessionId), [parked])
    }
    const askRaw = (prompt: unknown, format: { readonly name: string }) =>
      Effect.as(record("ask", prompt, format.name), { text: "{\"city\":\"Paris\"}", structured: { city: "Paris" } })
    return {
      ...chat,
      sessionId: Effect.succeed(Option.some("session-1")),
      lastActivity: Effect.succeed([]),
      snapshot: Effect.die("not used"),
      toolPolicy: Effect.die("not used"),
      [Live]: live,
      [Approvals]: approvals,
      [AskRaw]: askRaw
    } as SessionClient
  })

const runner = (filename: string, calls: Array<ReadonlyArray<unknown>>) =>
  ClaudeConversationRunner.layer({ make: fakeMake(calls), conversation: () => Effect.succeed({}) }).pipe(
    Layer.provideMerge(ClaudeCluster.layerRunner({ host: "127.0.0.1", port: 0 })),
    Layer.provide(ClaudeSessionStoreSql.layer),
    Layer.provide(SqliteClient.layer({ filename }))
  )

const City = Schema.Struct({ city: Schema.String })

describe("ClaudeConversationRunner's handlers", () => {
  it.live("controls, decisions, listings and ask reach the hosted client with the caller's arguments", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir("ecb-runner-"), "cluster.db")
      const calls: Array<ReadonlyArray<unknown>> = []
      yield* Effect.gen(function*() {
        const c = yield* Effect.flatMap(ClaudeConversation.client, (make) => make("conv-live"))
        // Controls, set up before any turn.
        const idle = yield* Effect.flip(c.controls.interrupt)
        expect(idle).toMatchObject({ _tag: "ClaudeLiveError", reason: { _tag: "NoRunningTurn" } })
        yield* c.controls.steer("go left")
        yield* c.controls.steer("go right", { when: "now" })
        yield* c.controls.setModel("claude-x")
        yield* c.controls.setModel(undefined)
        yield* c.controls.setPermissionMode("plan")
        yield* c.controls.setMaxThinkingTokens(2048)
        yield* c.controls.setMaxThinkingTokens(undefined)
        expect(yield* c.controls.contextUsage).toMatchObject({ totalTokens: 10, maxTokens: 100, model: "m" })
        expect((yield* c.controls.mcpStatus).map((s) => [s.name, s.status])).toEqual([["gtb", "connected"]])
        expect(calls).toEqual([
          ["steer", "go left", undefined],
          ["steer", "go right", "now"],
          ["setModel", "claude-x"],
          ["setModel", undefined],
          ["setPermissionMode", "plan"],
          ["setMaxThinkingTokens", 2048],
          ["setMaxThinkingTokens", undefined]
        ])
        calls.length = 0

        // Approvals: the listing is of the conversation's current session.
        const listed = yield* c.approvals.list
        expect(listed.map((a) => a.approvalId)).toEqual(["ap-1"])
        expect(yield* c.approvals.approve("ap-1", { updatedInput: { amount: 3 } })).toBe("approved ap-1")
        // Sent again, a decision is answered from the records, not decided twice.
        expect(yield* c.approvals.approve("ap-1")).toBe("approved ap-1")
        expect(yield* c.approvals.approve("ap-2")).toBe("approved ap-2")
        expect(yield* c.approvals.deny("ap-3", "too much")).toBe("denied ap-3")
        expect(calls).toEqual([
          ["list", "session-1"],
          ["approve", "ap-1", { amount: 3 }],
          ["approve", "ap-2", undefined],
          ["deny", "ap-3", "too much"]
        ])
        calls.length = 0

        // Ask: the raw answer is decoded by the caller, and replayed from the records when re-sent.
        expect(yield* c.ask("where?", City, { turnId: "a1" })).toEqual({ city: "Paris" })
        expect(yield* c.ask("where?", City, { turnId: "a1" })).toEqual({ city: "Paris" })
        expect(calls).toHaveLength(1)
        expect(calls[0]?.[0]).toBe("ask")
        // A turn id whose recorded answer is a chat's text is not taken as an ask's answer.
        expect(yield* c.chat("hello", { turnId: "t1" })).toBe("hi")
        expect(yield* c.ask("where?", City, { turnId: "t1" })).toEqual({ city: "Paris" })
        expect(calls).toHaveLength(2)
      }).pipe(Effect.provide(runner(filename, calls)))
    }).pipe(Effect.scoped))
})
