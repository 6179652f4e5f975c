/**
 * One runner in this process on a SQLite file, the real `claude` against the fake API: turns go
 * through the entity, a re-sent turn id is answered from the cluster's storage, and usage adds up.
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ClaudeCluster from "../../src/layers/ClaudeCluster.ts"
import * as ClaudeConversationRunner from "../../src/layers/ClaudeConversationRunner.ts"
import * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as ClaudeSessionStoreSql from "../../src/layers/ClaudeSessionStoreSql.ts"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as NodeSubprocess from "../../src/layers/NodeSubprocess.ts"
import * as SqliteClient from "../../src/layers/SqliteClient.ts"
import * as ClaudeConversation from "../../src/services/ClaudeConversation.ts"
import * as Tool from "../../src/services/Tool.ts"
import { claudeBinary, sandbox } from "../support/claudeCli.js"
import { describeWithClaude } from "../support/describeWithClaude.js"
import * as Fake from "../support/FakeMessagesApi.js"

describeWithClaude("ClaudeConversation (one runner, SQLite)", () => {
  it.live("chat, a duplicate turn id, ask and usage", () =>
    Effect.gen(function*() {
      const api = yield* Fake.make((req) => {
        const looked = Fake.toolResults(req).find((r) => r.content.includes("Rome"))
        if (looked !== undefined) return { text: `tool said ${looked.content}` }
        const last = Fake.lastUserLine(req)
        if (last.includes("json") && (req.body.tools ?? []).some((t) => t.name === "StructuredOutput")) {
          return { toolUses: [{ name: "StructuredOutput", input: { city: "Paris" } }] }
        }
        if (last.includes("look")) return { toolUses: [{ name: "mcp__gtb__lookup", input: { city: "Rome" } }] }
        return { text: `echo: ${last}` }
      })
      const box = yield* sandbox(api.url)
      const dir = mkdtempSync(join(tmpdir(), "ecb-cluster-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const sql = SqliteClient.layer({ filename: join(dir, "cluster.db") })
      let lookups = 0
      const lookup = Tool.make("lookup", {
        description: "Looks a city up",
        parameters: { city: Schema.String },
        handler: ({ city }) => Effect.sync(() => `${city}: ${++lookups}`)
      })
      const runner = ClaudeConversationRunner.layer({
        make: ClaudeLocal.make,
        conversation: ({ idempotent }) =>
          Effect.succeed({
            options: { binary: claudeBinary, cwd: box.cwd, env: box.env, requestTimeout: "60 seconds" },
            tools: [idempotent(lookup)]
          })
      }).pipe(
        Layer.provideMerge(ClaudeCluster.layerRunner({ host: "127.0.0.1", port: 0 })),
        Layer.provide(ClaudeSessionStoreSql.layer),
        Layer.provide(Layer.merge(NodeSubprocess.layer, NodeSecretFile.layer({ directory: box.secrets }))),
        Layer.provideMerge(sql)
      )
      yield* Effect.gen(function*() {
        const conversations = yield* ClaudeConversation.client
        const c = yield* conversations("conv-1")
        const first = yield* c.chat("hello one", { turnId: "t1" })
        expect(first).toBe("echo: hello one")
        const calls = api.messageRequests().length
        const again = yield* c.chat("hello one", { turnId: "t1" })
        expect(again).toBe(first)
        expect(api.messageRequests().length).toBe(calls)
        const answer = yield* c.ask("give json", Schema.Struct({ city: Schema.String }), { turnId: "t2" })
        expect(answer).toEqual({ city: "Paris" })
        const looked = yield* c.chat("look Rome up", { turnId: "t3" })
        expect(looked).toContain("Rome: 1")
        const usage = yield* c.usage
        expect(usage.known).toBe(true)
      }).pipe(Effect.provide(runner))
    }).pipe(Effect.scoped), 120_000)
})
