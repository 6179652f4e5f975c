/**
 * The runner's host of one conversation, in this process, with a scripted session client in place
 * of `ClaudeLocal.make` (no CLI): the turn errors that pass through it (a provider's failure, a
 * parked call marked with the conversation, a stream's failure), the setup failures of a client
 * the runner cannot use (no live controls, no approvals, no raw `ask`, tools it refuses), usage
 * read from the records of a conversation nobody hosts yet, answers replayed from the records, and
 * the records a passivated conversation leaves.
 * (The real-binary runner tests are in ClaudeConversation.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { SessionClient } from "../../src/internal/claude/conversation.ts"
import * as ConversationLog from "../../src/internal/cluster/log.ts"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversationRunner from "../../src/layers/ClaudeConversationRunner.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as Scripted from "../../src/layers/Scripted.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import { ApprovalRequired, ProviderError, Usage } from "../../src/services/ChatClient.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import { ClaudeSessionStore } from "../../src/services/ClaudeSessionStore.ts"
import * as Tool from "../../src/services/Tool.ts"
import { tempDir } from "../support/clusterStorage.ts"

/** What the fake's `make` is given: the host's options plus the test's own. */
type FakeOptions = ClaudeConversationRunner.HostedOptions & { readonly refuseTools?: boolean | undefined }

interface Made {
  readonly options: Array<FakeOptions | undefined>
}

/**
 * Echoes the last user message; `boom` fails as a provider's 500 would; `park` parks a call the
 * way a Claude Code client does (`ApprovalRequired`, no conversation id); `cut` ends in an interrupt.
 */
const respond = (request: { readonly history: ReadonlyArray<{ readonly role: string }> }) => {
  const last = request.history.filter((m) => m.role === "user").at(-1)
  const text = last !== undefined && "content" in last ? String(last.content) : ""
  if (text.includes("boom")) return Effect.succeed(Scripted.fail(Scripted.httpError(500, "fake-claude")))
  // An interrupt from inside the turn (its CLI's reader, say), not of the handler's own fiber.
  if (text.includes("cut")) return Effect.interrupt
  if (text.includes("park")) {
    return Effect.succeed(Scripted.fail(
      new ProviderError({
        provider: "fake-claude",
        reason: new ApprovalRequired({
          message: "transfer needs an approval",
          approvalId: "ap-1",
          sessionId: "parked-session",
          tool: "transfer",
          input: { amount: 5 }
        })
      })
    ))
  }
  return Effect.succeed(Scripted.text(`echo: ${text}`, Usage.of({ inputTokens: 3, outputTokens: 2 })))
}

/** A session client over a scripted model: no live controls, approvals or raw `ask`. */
const fakeMake = (made: Made) => (options?: FakeOptions): Effect.Effect<SessionClient> =>
  Effect.gen(function*() {
    made.options.push(options)
    const chat = yield* Scripted.make({ name: "fake-claude", respond })
    const client: SessionClient = {
      ...chat,
      setTools: (tools) =>
        options?.refuseTools === true
          ? Effect.fail(
            new ProviderError({
              provider: "fake-claude",
              reason: new ApprovalRequired({
                message: "not used",
                approvalId: "-",
                sessionId: "-",
                tool: "-",
                input: null
              })
            })
          )
          : chat.setTools(tools),
      sessionId: Effect.succeed(Option.some(`session-after-${made.options.length}`)),
      lastActivity: Effect.succeed([]),
      snapshot: Effect.die("not used"),
      toolPolicy: Effect.die("not used")
    }
    return client
  })

const noop = Tool.make("noop", {
  description: "Does nothing",
  parameters: { x: Schema.String },
  handler: ({ x }) => Effect.succeed(x)
})

const runner = (o: {
  readonly filename: string
  readonly made: Made
  readonly maxIdleTime?: ClaudeConversationRunner.Options<FakeOptions, never, never, never>["maxIdleTime"]
}) =>
  ClaudeConversationRunner.layer<FakeOptions, never, Error, never>({
    make: fakeMake(o.made),
    maxIdleTime: o.maxIdleTime,
    projectKey: "hosted",
    conversation: ({ conversationId, idempotent }) =>
      conversationId.startsWith("broken")
        ? Effect.fail(new Error(`no customer behind ${conversationId}`))
        : Effect.succeed({
          options: { refuseTools: conversationId.startsWith("picky"), model: "fake-model" },
          tools: [idempotent(noop)]
        })
  }).pipe(
    Layer.provideMerge(ClaudeCluster.layerRunner({ host: "127.0.0.1", port: 0 })),
    Layer.provideMerge(ClaudeSessionStoreSql.layer),
    Layer.provideMerge(SqliteClient.layer({ filename: o.filename }))
  )

const conversation = (id: string) => Effect.flatMap(ClaudeConversation.client, (make) => make(id))

const records = (conversationId: string) =>
  Effect.gen(function*() {
    const store = yield* ClaudeSessionStore
    const entries = yield* store.load(ConversationLog.logKey("hosted", conversationId))
    return Option.getOrElse(entries, () => [])
  })

/** The failovers counted for the runner the conversation's last activation names (0 before any). */
const failoversOf = (conversationId: string) =>
  Effect.gen(function*() {
    const activated = (yield* records(conversationId)).filter((e) => e.type.endsWith("/activated"))
    const runner = String(activated.at(-1)?.["runner"])
    return (yield* Metric.value(Metric.withAttributes(ClaudeConversationRunner.failovers, { runner }))).count
  })

const fixture = Effect.map(tempDir("ecb-host-"), (dir) => `${dir}/cluster.db`)

describe("ClaudeConversationRunner's host (scripted session client)", () => {
  it.live("turn errors: a provider's failure passes through, a parked call names its conversation", () =>
    Effect.gen(function*() {
      const filename = yield* fixture
      const made: Made = { options: [] }
      yield* Effect.gen(function*() {
        const c = yield* conversation("conv-errors")
        expect(yield* c.chat("hello", { turnId: "t1" })).toBe("echo: hello")
        // The host's options win over the conversation's; the records' session is resumed.
        expect(made.options[0]).toMatchObject({
          model: "fake-model",
          keepAlive: true,
          projectKey: "hosted",
          forkSession: false
        })
        expect(made.options[0]?.resume).toBeUndefined()

        const failed = yield* Effect.flip(c.chat("boom now", { turnId: "t2" }))
        expect(failed).toMatchObject({ _tag: "ProviderError", provider: "fake-claude", reason: { status: 500 } })

        const parked = yield* Effect.flip(c.chat("park it", { turnId: "t3" }))
        expect(parked._tag).toBe("ProviderError")
        const reason = parked._tag === "ProviderError" ? parked.reason : undefined
        expect(reason).toMatchObject({
          _tag: "ApprovalRequired",
          approvalId: "ap-1",
          sessionId: "parked-session",
          tool: "transfer",
          input: { amount: 5 },
          conversationId: "conv-errors"
        })
        // A turn that ends in an interrupt while the runner is up: a typed error is its stored answer.
        const cut = yield* Effect.flip(c.chat("cut short", { turnId: "t4" }))
        expect(cut).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ProcessError", transient: true } })
        expect(cut.message).toContain("Turn t4 of conversation conv-errors was interrupted from inside on runner")
        expect(cut.message).toContain("Send the prompt again with a new turn id")
        expect(yield* Effect.flip(c.chat("cut short", { turnId: "t4" }))).toMatchObject({ message: cut.message })
        // The parked session is the conversation's now: its turn is recorded done with it.
        const done = (yield* records("conv-errors")).filter((e) => e.type.endsWith("/turn-done"))
        expect(done.map((e) => [e["turnId"], e["sessionId"]])).toEqual([
          ["t1", "session-after-1"],
          ["t3", "parked-session"]
        ])
        // A failed turn is not answered from the records: sent again, it runs again.
        const again = yield* Effect.flip(c.chat("boom now", { turnId: "t2" }))
        expect(again).toMatchObject({ _tag: "ProviderError", reason: { status: 500 } })
      }).pipe(Effect.provide(runner({ filename, made })))
    }).pipe(Effect.scoped))

  it.live("chatStream: its events, a replay from the records, a failure in the stream", () =>
    Effect.gen(function*() {
      const filename = yield* fixture
      const made: Made = { options: [] }
      yield* Effect.gen(function*() {
        const c = yield* conversation("conv-stream")
        const events = yield* Stream.runCollect(c.chatStream("stream two words", { turnId: "s1" }))
        expect(events.filter((e) => e._tag === "TextDelta").length).toBeGreaterThan(0)
        expect(events.at(-1)).toMatchObject({ _tag: "Complete", text: "echo: stream two words" })
        // Sent again with its turn id: the recorded answer, as one Complete event.
        const replayed = yield* Stream.runCollect(c.chatStream("anything", { turnId: "s1" }))
        expect(replayed).toHaveLength(1)
        expect(replayed[0]).toMatchObject({ _tag: "Complete", text: "echo: stream two words" })
        const failed = yield* Effect.flip(Stream.runCollect(c.chatStream("boom", { turnId: "s2" })))
        expect(failed).toMatchObject({ _tag: "ProviderError", reason: { status: 500 } })
        const parked = yield* Effect.flip(Stream.runCollect(c.chatStream("park", { turnId: "s3" })))
        expect(parked).toMatchObject({
          _tag: "ProviderError",
          reason: { _tag: "ApprovalRequired", conversationId: "conv-stream" }
        })
        // A replayed chat turn: answered from the records (no second client, no model call).
        expect(yield* c.chat("same", { turnId: "s1" })).toBe("echo: stream two words")
        expect(made.options).toHaveLength(1)
      }).pipe(Effect.provide(runner({ filename, made })))
    }).pipe(Effect.scoped))

  it.live("a client without live controls, approvals or raw ask: typed setup errors naming the fix", () =>
    Effect.gen(function*() {
      const filename = yield* fixture
      const made: Made = { options: [] }
      yield* Effect.gen(function*() {
        const c = yield* conversation("conv-plain")
        // A control for a conversation nobody hosts yet sets it up first, then finds no controls.
        const interrupt = yield* Effect.flip(c.controls.interrupt)
        expect(interrupt._tag).toBe("ConversationSetupError")
        expect(interrupt.message).toContain("without live controls")
        expect(interrupt.message).toContain("ClaudeLocal.make")
        expect(made.options).toHaveLength(1)
        const steer = yield* Effect.flip(c.controls.steer("go left"))
        expect(steer._tag).toBe("ConversationSetupError")
        const list = yield* Effect.flip(c.approvals.list)
        expect(list._tag).toBe("ConversationSetupError")
        expect(list.message).toContain("without approvals")
        const approve = yield* Effect.flip(c.approvals.approve("ap-1"))
        expect(approve).toMatchObject({ _tag: "ConversationSetupError", conversationId: "conv-plain" })
        expect(approve.message).toContain("without approvals")
        const deny = yield* Effect.flip(c.approvals.deny("ap-1", "no"))
        expect(deny._tag).toBe("ConversationSetupError")
        const ask = yield* Effect.flip(c.ask("json please", Schema.Struct({ city: Schema.String }), { turnId: "a1" }))
        expect(ask).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
        expect(ask.message).toContain("did not build a ClaudeLocal or ClaudeAgent client")
        // In ClaudeLive's and ClaudeApprovals' terms: NoAnswer and StoreUnavailable, saying why.
        const live = yield* ClaudeConversation.live("conv-plain")
        const noAnswer = yield* Effect.flip(live.setModel("other"))
        expect(noAnswer).toMatchObject({ _tag: "ClaudeLiveError", reason: { _tag: "NoAnswer", control: "setModel" } })
        expect(noAnswer.message).toContain("without live controls")
        const approvals = yield* ClaudeConversation.approvals("conv-plain")
        const unavailable = yield* Effect.flip(approvals.list("ignored"))
        expect(unavailable).toMatchObject({ _tag: "ApprovalError", reason: { _tag: "StoreUnavailable" } })
        const decided = yield* Effect.flip(approvals.deny("ap-1", "no"))
        expect(decided).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
      }).pipe(Effect.provide(runner({ filename, made })))
    }).pipe(Effect.scoped))

  it.live("setup failures: the conversation function's and a refused tool set, for turns and controls", () =>
    Effect.gen(function*() {
      const filename = yield* fixture
      const made: Made = { options: [] }
      yield* Effect.gen(function*() {
        const broken = yield* conversation("broken-1")
        const control = yield* Effect.flip(broken.controls.mcpStatus)
        expect(control).toMatchObject({ _tag: "ConversationSetupError", conversationId: "broken-1" })
        expect(control.message).toContain("no customer behind broken-1")
        const list = yield* Effect.flip(broken.approvals.list)
        expect(list.message).toContain("no customer behind broken-1")
        const picky = yield* conversation("picky-1")
        const turn = yield* Effect.flip(picky.chat("hi", { turnId: "p1" }))
        expect(turn._tag).toBe("ConversationSetupError")
        expect(turn.message).toContain("could not set conversation picky-1 up")
        expect(turn.message).toContain("not used")
        expect(made.options).toHaveLength(1)
        // Trying a failed setup again in the same activation is no failover.
        yield* Effect.flatMap(conversation("conv-probe"), (probe) => probe.chat("probe", { turnId: "probe" }))
        const failoversBefore = yield* failoversOf("conv-probe")
        expect((yield* Effect.flip(picky.chat("hi again", { turnId: "p2" })))._tag).toBe("ConversationSetupError")
        expect(made.options).toHaveLength(3)
        expect(yield* failoversOf("picky-1")).toBe(failoversBefore)
      }).pipe(Effect.provide(runner({ filename, made })))
    }).pipe(Effect.scoped))

  it.live("usage of a conversation nobody hosts comes from its records; a hosted one adds its client's", () =>
    Effect.gen(function*() {
      const filename = yield* fixture
      const made: Made = { options: [] }
      yield* Effect.gen(function*() {
        const store = yield* ClaudeSessionStore
        // Records of a runner that finished a turn and stopped cleanly.
        const before = ConversationLog.make(store, "hosted", "conv-usage", "127.0.0.1:1")
        yield* before.activated
        yield* before.turnDone("old", "old-session", Usage.of({ inputTokens: 40, outputTokens: 2 }), "old answer")
        yield* before.passivated
        // This runner's label, from a conversation it hosted, and its failovers so far.
        yield* Effect.flatMap(conversation("conv-probe"), (probe) => probe.chat("probe", { turnId: "probe" }))
        const failoversBefore = yield* failoversOf("conv-probe")
        const c = yield* conversation("conv-usage")
        const fromRecords = yield* c.usage
        expect(fromRecords).toMatchObject({ inputTokens: 40, outputTokens: 2 })
        expect(made.options).toHaveLength(1)
        expect(yield* c.chat("again", { turnId: "old" })).toBe("old answer")
        expect(made.options[1]?.resume).toBe("old-session")
        expect(yield* c.chat("new", { turnId: "new" })).toBe("echo: new")
        const hosted = yield* c.usage
        expect(hosted.inputTokens).toBe(43)
        expect(hosted.outputTokens).toBe(4)
        // A clean handover is no failover (the counter is per runner label: compare before and after).
        expect(yield* failoversOf("conv-usage")).toBe(failoversBefore)
      }).pipe(Effect.provide(runner({ filename, made })))
    }).pipe(Effect.scoped))

  it.live(
    "an idle conversation is passivated: recorded, and its next turn builds a client resuming the session",
    () =>
      Effect.gen(function*() {
        const filename = yield* fixture
        const made: Made = { options: [] }
        yield* Effect.gen(function*() {
          const c = yield* conversation("conv-idle")
          expect(yield* c.chat("first", { turnId: "i1" })).toBe("echo: first")
          // The entity reaper checks every few seconds: wait for the passivation record.
          yield* Effect.gen(function*() {
            const kinds = (yield* records("conv-idle")).map((e) => e.type)
            if (!kinds.some((k) => k.endsWith("/passivated"))) return yield* Effect.fail("still active")
          }).pipe(Effect.retry({ times: 60, schedule: Schedule.spaced("250 millis") }))
          expect(yield* c.chat("second", { turnId: "i2" })).toBe("echo: second")
          expect(made.options).toHaveLength(2)
          expect(made.options[1]?.resume).toBe("session-after-1")
        }).pipe(Effect.provide(runner({ filename, made, maxIdleTime: "200 millis" })))
      }).pipe(Effect.scoped),
    60_000
  )
})
