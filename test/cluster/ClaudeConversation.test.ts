/**
 * One runner in this process on a SQLite file, the real `claude` against the fake API: turns go
 * through the entity, a re-sent turn id is answered from the cluster's storage, a turn already
 * finished (per the conversation's records) is answered from them, setup failures are typed, the
 * metrics move, and passivation stops the CLI while the next turn resumes the session.
 * (The multi-process failover tests are in test/e2e/ClaudeCluster.e2e.test.ts.)
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ConversationLog from "../../src/internal/cluster/log.ts"
import * as ClaudeAgent from "../../src/layers/ClaudeAgent.ts"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversationRunner from "../../src/layers/ClaudeConversationRunner.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import { ChatClient, Usage } from "../../src/services/ChatClient.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import * as Pool from "../../src/services/ClaudeProcessPool.ts"
import { ClaudeSessionStore } from "../../src/services/ClaudeSessionStore.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeBinary, claudeProcessesIn, type Sandbox, sandbox } from "../support/claudeCli.ts"
import { describeWithClaude } from "../support/describeWithClaude.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { makeRecorder } from "../support/recordingTracer.ts"

/**
 * Echoes the last line; `look` calls the lookup tool; `json` answers through StructuredOutput;
 * `slowly` answers after 2.5 s.
 */
const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const looked = Fake.toolResults(req).find((r) => r.content.includes("Rome"))
  if (looked !== undefined) return { text: `tool said ${looked.content}` }
  const last = Fake.lastUserLine(req)
  if (last.includes("json") && (req.body.tools ?? []).some((t) => t.name === "StructuredOutput")) {
    return { toolUses: [{ name: "StructuredOutput", input: { city: "Paris" } }] }
  }
  if (last.includes("look")) return { toolUses: [{ name: "mcp__gtb__lookup", input: { city: "Rome" } }] }
  if (last.includes("slowly")) return { text: `echo: ${last}`, delayMs: 2_500 }
  return { text: `echo: ${last}` }
}

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "ecb-cluster-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The fake model, a sandbox for the CLI and a new SQLite file for the cluster and the store. */
const fixture = Effect.gen(function*() {
  const api = yield* Fake.make(model)
  const box = yield* sandbox(api.url)
  return { api, box, filename: join(yield* tempDir, "cluster.db") }
})

interface RunnerOptions {
  readonly box: Sandbox
  readonly filename: string
  readonly maxIdleTime?: ClaudeConversationRunner.Options<ClaudeLocal.Options, never, never, never>["maxIdleTime"]
  readonly lookups?: { count: number }
  readonly fail?: boolean
  readonly pool?: Layer.Layer<Pool.ClaudeProcessPool>
}

/** A runner on `filename` hosting ClaudeLocal conversations in `box`, plus the client's Sharding. */
const localRunner = (o: RunnerOptions) => {
  const lookup = Tool.make("lookup", {
    description: "Looks a city up",
    parameters: { city: Schema.String },
    handler: ({ city }) => Effect.sync(() => `${city}: ${o.lookups === undefined ? 0 : ++o.lookups.count}`)
  })
  return ClaudeConversationRunner.layer({
    make: ClaudeLocal.make,
    maxIdleTime: o.maxIdleTime,
    conversation: ({ conversationId, idempotent }) =>
      o.fail === true
        ? Effect.fail(new Error(`no such customer for ${conversationId}`))
        : Effect.succeed({
          options: { binary: claudeBinary, cwd: o.box.cwd, env: o.box.env, requestTimeout: "60 seconds" },
          tools: [idempotent(lookup)]
        })
  }).pipe(
    Layer.provideMerge(ClaudeCluster.layerRunner({ host: "127.0.0.1", port: 0 })),
    Layer.provideMerge(ClaudeSessionStoreSql.layer),
    Layer.provide(Layer.merge(NodeSubprocess.layer, NodeSecretFile.layer({ directory: o.box.secrets }))),
    Layer.provide(o.pool ?? Layer.empty),
    Layer.provideMerge(SqliteClient.layer({ filename: o.filename }))
  )
}

const conversation = (id: string) => Effect.flatMap(ClaudeConversation.client, (make) => make(id))

/** The runner label the conversation's records name (the metrics' `runner` attribute). */
const runnerOf = (conversationId: string) =>
  Effect.gen(function*() {
    const store = yield* ClaudeSessionStore
    const entries = Option.getOrElse(yield* store.load(ConversationLog.logKey("default", conversationId)), () => [])
    return String(entries.find((e) => e.type.endsWith("/activated"))?.["runner"])
  })

describeWithClaude("ClaudeConversation (one runner, SQLite)", () => {
  it.live("chat, a duplicate turn id, ask, an idempotent tool, chatStream and usage", () =>
    Effect.gen(function*() {
      const { api, box, filename } = yield* fixture
      const lookups = { count: 0 }
      yield* Effect.gen(function*() {
        const c = yield* conversation("conv-1")
        const first = yield* c.chat("hello one", { turnId: "t1" })
        expect(first).toBe("echo: hello one")
        const calls = api.messageRequests().length
        expect(yield* c.chat("hello one", { turnId: "t1" })).toBe(first)
        expect(api.messageRequests().length).toBe(calls)
        const answer = yield* c.ask("give json", Schema.Struct({ city: Schema.String }), { turnId: "t2" })
        expect(answer).toEqual({ city: "Paris" })
        expect(yield* c.chat("look Rome up", { turnId: "t3" })).toContain("Rome: 1")
        const events = yield* Stream.runCollect(c.chatStream("stream this", { turnId: "t4" }))
        const last = events.at(-1)
        expect(last?._tag).toBe("Complete")
        expect(last?._tag === "Complete" ? last.text : "").toBe("echo: stream this")
        const streamed = api.messageRequests().length
        const replayed = yield* Stream.runCollect(c.chatStream("stream this", { turnId: "t4" }))
        expect(replayed.at(-1)).toEqual(last)
        expect(api.messageRequests().length).toBe(streamed)
        yield* c.add("first part")
        expect(yield* c.chat("second part", { turnId: "t5" })).toBe("echo: second part")
        expect(JSON.stringify(api.messageRequests().at(-1)?.body.messages)).toContain("first part")
        const usage = yield* c.usage
        expect(usage.known).toBe(true)
        expect(usage.inputTokens).toBeGreaterThan(0)
        const runner = yield* runnerOf("conv-1")
        expect((yield* Metric.value(Metric.withAttributes(ClaudeConversationRunner.conversations, { runner }))).value)
          .toBe(1)
        expect(lookups.count).toBe(1)
        // The same conversation through the ChatClient contract.
        const chat = yield* Effect.provide(ChatClient, ClaudeConversation.layerChatClient("conv-1"))
        expect(yield* chat.chat("via ChatClient")).toBe("echo: via ChatClient")
        expect(JSON.stringify(api.messageRequests().at(-1)?.body.messages)).toContain("hello one")
        const refused = yield* Effect.flip(chat.setTools([]))
        expect(refused).toMatchObject({ _tag: "ProviderError", reason: { _tag: "ConfigurationError" } })
        expect(refused.message).toContain("ClaudeConversationRunner.layer")
        expect((yield* chat.usage).totalTokens).toBeGreaterThanOrEqual(usage.totalTokens)
        const appends = yield* Metric.value(
          Metric.withAttributes(ClaudeConversationRunner.storeLatency, { operation: "append" })
        )
        expect(appends.count).toBeGreaterThan(0)
      }).pipe(Effect.provide(localRunner({ box, filename, lookups })))
    }).pipe(Effect.scoped), 120_000)

  it.live(
    "a turn its records say finished is answered from them; a dead activation counts as a failover",
    () =>
      Effect.gen(function*() {
        const { api, box, filename } = yield* fixture
        yield* Effect.gen(function*() {
          const store = yield* ClaudeSessionStore
          // What a runner that died after finishing turn "t9" but before replying leaves behind.
          const dead = ConversationLog.make(store, "default", "conv-2", "127.0.0.1:1")
          yield* dead.activated
          yield* dead.turnStarted("t9")
          yield* dead.turnDone("t9", undefined, Usage.of({ inputTokens: 7, outputTokens: 1 }), "stored answer")
          yield* dead.turnStarted("t10")
          const c = yield* conversation("conv-2")
          expect(yield* c.chat("anything", { turnId: "t9" })).toBe("stored answer")
          expect(api.messageRequests()).toHaveLength(0)
          expect(yield* c.chat("run me", { turnId: "t10" })).toBe("echo: run me")
          const entries = Option.getOrThrow(yield* store.load(ConversationLog.logKey("default", "conv-2")))
          const here = String(entries.filter((e) => e.type.endsWith("/activated")).at(-1)?.["runner"])
          const failovers = yield* Metric.value(
            Metric.withAttributes(ClaudeConversationRunner.failovers, { runner: here })
          )
          expect(failovers.count).toBeGreaterThanOrEqual(1)
          const redelivered = yield* Metric.value(
            Metric.withAttributes(ClaudeConversationRunner.redeliveredTurns, { runner: here })
          )
          expect(redelivered.count).toBeGreaterThanOrEqual(1)
          expect((yield* c.usage).inputTokens).toBeGreaterThanOrEqual(7)
        }).pipe(Effect.provide(localRunner({ box, filename })))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a short turn is recorded once (done); a turn running over a second is recorded as started too",
    () =>
      Effect.gen(function*() {
        const { box, filename } = yield* fixture
        yield* Effect.gen(function*() {
          const store = yield* ClaudeSessionStore
          const c = yield* conversation("conv-records")
          // The first turn starts the CLI; later ones on it take well under a second (on a loaded
          // machine one may not, hence three).
          const quick = ["t-quick-1", "t-quick-2", "t-quick-3"]
          for (const turnId of ["t-first", ...quick]) yield* c.chat(`quick ${turnId}`, { turnId })
          yield* c.chat("answer slowly", { turnId: "t-slow" })
          const records = Option.getOrThrow(yield* store.load(ConversationLog.logKey("default", "conv-records")))
          const kinds = (turnId: string) =>
            records.filter((e) => e["turnId"] === turnId).map((e) => e.type.replace("effect-chat-bridge/", ""))
          // The start of a short turn is never stored: its done record is written first and says it all.
          expect(quick.map(kinds)).toContainEqual(["turn-done"])
          for (const turnId of quick) expect(kinds(turnId).at(-1)).toBe("turn-done")
          // A longer turn's start is stored while it runs (what counts a redelivery), before its end.
          expect(kinds("t-slow")).toEqual(["turn-started", "turn-done"])
        }).pipe(Effect.provide(localRunner({ box, filename })))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "spans: the caller's ClaudeConversation.chat, the runner's turn with the conversation and turn ids",
    () =>
      Effect.gen(function*() {
        const { box, filename } = yield* fixture
        const recorder = makeRecorder()
        yield* Effect.gen(function*() {
          const c = yield* conversation("conv-6")
          yield* c.chat("traced", { turnId: "t-traced" })
        }).pipe(Effect.provide(localRunner({ box, filename })), Effect.withTracer(recorder.tracer))
        const [caller] = recorder.find("ClaudeConversation.chat")
        expect(caller?.attributes.get("conversation.turn_id")).toBe("t-traced")
        const [turn] = recorder.find("ClaudeConversation.turn")
        expect(turn?.attributes.get("conversation.id")).toBe("conv-6")
        expect(turn?.attributes.get("conversation.turn_id")).toBe("t-traced")
        expect(String(turn?.attributes.get("cluster.runner"))).toContain("127.0.0.1")
        // The provider's own span is inside the runner's turn.
        const [inner] = recorder.find("ChatClient.chat")
        expect(inner === undefined ? [] : recorder.ancestors(inner).map((s) => s.name)).toContain(
          "ClaudeConversation.turn"
        )
      }).pipe(Effect.scoped),
    120_000
  )

  it.live("setup failures and bad ids are ConversationSetupError; nothing runs", () =>
    Effect.gen(function*() {
      const { api, box, filename } = yield* fixture
      yield* Effect.gen(function*() {
        const bad = yield* Effect.flip(conversation("../etc"))
        expect(bad._tag).toBe("ConversationSetupError")
        expect(bad.message).toContain("Invalid conversation id")
        const c = yield* conversation("conv-3")
        const error = yield* Effect.flip(c.chat("hello", { turnId: "t1" }))
        expect(error._tag).toBe("ConversationSetupError")
        expect(error.message).toContain("no such customer for conv-3")
        expect(error.message).toContain("new turn id")
        const empty = yield* Effect.flip(c.chat("  "))
        expect(empty._tag).toBe("EmptyPromptError")
        expect(api.messageRequests()).toHaveLength(0)
      }).pipe(Effect.provide(localRunner({ box, filename, fail: true })))
    }).pipe(Effect.scoped), 120_000)

  it.live(
    "an idle conversation is passivated: its CLI stops, and the next turn resumes the session",
    () =>
      Effect.gen(function*() {
        const { api, box, filename } = yield* fixture
        yield* Effect.gen(function*() {
          const c = yield* conversation("conv-4")
          yield* c.chat("marker ALPHA-7", { turnId: "t1" })
          expect(claudeProcessesIn(box.cwd).length).toBeGreaterThan(0)
          const runner = yield* runnerOf("conv-4")
          const gauge = Metric.withAttributes(ClaudeConversationRunner.conversations, { runner })
          // The entity reaper checks about every few seconds: wait until it stopped the conversation.
          yield* Effect.gen(function*() {
            const live = claudeProcessesIn(box.cwd).length + (yield* Metric.value(gauge)).value
            if (live > 0) return yield* Effect.fail("still live")
          }).pipe(Effect.retry({ times: 60, schedule: Schedule.spaced("500 millis") }))
          expect(claudeProcessesIn(box.cwd)).toEqual([])
          const answer = yield* c.chat("and again", { turnId: "t2" })
          expect(answer).toBe("echo: and again")
          expect(JSON.stringify(api.messageRequests().at(-1)?.body.messages)).toContain("ALPHA-7")
        }).pipe(Effect.provide(localRunner({ box, filename, maxIdleTime: "1 second" })))
        expect(claudeProcessesIn(box.cwd)).toEqual([])
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "a ClaudeProcessPool given to the runner bounds its live CLIs across conversations",
    () =>
      Effect.gen(function*() {
        const { api, box, filename } = yield* fixture
        const pool = Pool.layer({ maxLiveProcesses: 1, reclaimAfter: "10 millis" })
        yield* Effect.gen(function*() {
          const a = yield* conversation("conv-a")
          const b = yield* conversation("conv-b")
          expect(yield* a.chat("for a", { turnId: "a1" })).toBe("echo: for a")
          expect(yield* b.chat("for b", { turnId: "b1" })).toBe("echo: for b")
          expect(claudeProcessesIn(box.cwd)).toHaveLength(1)
          expect(yield* a.chat("a again", { turnId: "a2" })).toBe("echo: a again")
          expect(JSON.stringify(api.messageRequests().at(-1)?.body.messages)).toContain("for a")
          expect(claudeProcessesIn(box.cwd)).toHaveLength(1)
        }).pipe(Effect.provide(localRunner({ box, filename, pool })))
      }).pipe(Effect.scoped),
    120_000
  )

  it.live("ClaudeAgent.make hosts a conversation too", () =>
    Effect.gen(function*() {
      const { api, box, filename } = yield* fixture
      const runner = ClaudeConversationRunner.layer({
        make: ClaudeAgent.make,
        conversation: () =>
          Effect.succeed({ options: { cwd: box.cwd, env: box.env, requestTimeout: "60 seconds" as const } })
      }).pipe(
        Layer.provideMerge(ClaudeCluster.layerRunner({ host: "127.0.0.1", port: 0 })),
        Layer.provide(ClaudeSessionStoreSql.layer),
        Layer.provideMerge(SqliteClient.layer({ filename }))
      )
      yield* Effect.gen(function*() {
        const c = yield* conversation("conv-5")
        expect(yield* c.chat("agent one", { turnId: "t1" })).toBe("echo: agent one")
        expect(yield* c.chat("agent two", { turnId: "t2" })).toBe("echo: agent two")
        expect(JSON.stringify(api.messageRequests().at(-1)?.body.messages)).toContain("agent one")
        // The controls reach the hosted client's ClaudeLive: nothing runs between turns, and a
        // model set now is the next request's.
        const idle = yield* Effect.flip(c.controls.interrupt)
        expect(idle).toMatchObject({ _tag: "ClaudeLiveError", reason: { _tag: "NoRunningTurn" } })
        yield* c.controls.setModel("claude-sonnet-4-5")
        expect(yield* c.chat("agent three", { turnId: "t3" })).toBe("echo: agent three")
        expect(api.messageRequests().at(-1)?.body.model).toBe("claude-sonnet-4-5")
      }).pipe(Effect.provide(runner))
    }).pipe(Effect.scoped), 120_000)
})
