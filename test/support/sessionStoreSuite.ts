/**
 * The behaviour every `ClaudeSessionStore` layer must have, run on the memory store
 * (test/services/ClaudeSessionStore.test.ts), a SQLite file and PostgreSQL
 * (test/layers/ClaudeSessionStoreSql.test.ts). The layer is built once per suite; each test works
 * under its own fresh project key, so the tests also show that project keys keep sessions apart.
 */
import { assert, layer } from "@effect/vitest"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import * as ClaudeSessionStore from "../../src/services/ClaudeSessionStore.ts"

type Entry = ClaudeSessionStore.TranscriptEntry

/** A project key no other test uses. */
export const freshProject = (label = "project"): string => `${label}-${randomUUID()}`

/** A user entry with a `uuid`, as the CLI writes them. */
export const entry = (uuid: string, text = `text of ${uuid}`): Entry => ({
  type: "user",
  uuid,
  timestamp: "2026-12-02T01:02:03.456Z",
  message: { role: "user", content: [{ type: "text", text }] }
})

/** An entry without `uuid` (the CLI's summary and metadata lines). */
const plain = (text: string): Entry => ({ type: "summary", summary: text })

const store = ClaudeSessionStore.ClaudeSessionStore

/** The stored transcript; failing the test when there is none. */
const loaded = (key: ClaudeSessionStore.SessionKey) =>
  Effect.gen(function*() {
    const found = yield* (yield* store).load(key)
    if (Option.isNone(found)) return assert.fail(`expected ${JSON.stringify(key)} to be stored`)
    return found.value
  })

const uuids = (entries: ReadonlyArray<Entry>) => entries.map((e) => e.uuid ?? `<${String(e["summary"])}>`)

/** Entries that exercise the JSON round trip: nesting, every JSON type, unicode, escapes. */
const awkwardEntries = (): ReadonlyArray<Entry> => [
  {
    type: "assistant",
    uuid: randomUUID(),
    parentUuid: null,
    message: {
      content: [
        { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "echo 'hi' \"there\" \\ $HOME" } },
        { type: "text", text: "déjà vu — 日本語 — עברית — 🧪🚀 — e\u0301 — \u0000 \u2028 \ud800 end" }
      ],
      usage: { input_tokens: 12, output_tokens: 0, ratio: 0.125, negative: -3.5e-7, big: 9007199254740991 }
    },
    flags: [true, false, null, [], {}, [[{ deep: { deeper: { deepest: ["x"] } } }]]],
    empty: "",
    "key with spaces and \"quotes\"": "value"
  },
  { type: "user", uuid: randomUUID(), message: { content: "x".repeat(100 * 1024) } },
  { type: "user", uuid: randomUUID(), message: { content: "é🧪".repeat(20 * 1024) } }
]

/**
 * Registers the suite for `storeLayer`, built once for all its tests. `timeout` bounds the
 * layer's construction (a database server may be slow to start on a loaded machine).
 */
export const sessionStoreSuite = <E>(
  name: string,
  storeLayer: Layer.Layer<ClaudeSessionStore.ClaudeSessionStore, E>,
  options: { readonly timeout?: Duration.Input } = {}
) =>
  layer(storeLayer, { timeout: options.timeout ?? "60 seconds" })(`ClaudeSessionStore behaviour: ${name}`, (it) => {
    it.effect("load gives the entries in append order; an empty append stores nothing", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        yield* s.append(key, [])
        assert.isTrue(Option.isNone(yield* s.load(key)), "an empty append creates no transcript")
        yield* s.append(key, [entry("a"), entry("b"), entry("c")])
        yield* s.append(key, [entry("d"), plain("s1"), entry("e")])
        assert.deepStrictEqual(yield* loaded(key), [
          entry("a"),
          entry("b"),
          entry("c"),
          entry("d"),
          plain("s1"),
          entry("e")
        ])
      }))

    it.effect("append is idempotent by uuid: the same batch twice, overlapping batches, duplicates in a batch", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        yield* s.append(key, [entry("a"), entry("b")])
        yield* s.append(key, [entry("a"), entry("b")])
        assert.deepStrictEqual(uuids(yield* loaded(key)), ["a", "b"], "the same batch twice")
        yield* s.append(key, [entry("b"), entry("c"), entry("d")])
        assert.deepStrictEqual(uuids(yield* loaded(key)), ["a", "b", "c", "d"], "overlapping batches")
        yield* s.append(key, [entry("e", "first"), entry("f"), entry("e", "second"), entry("f")])
        const all = yield* loaded(key)
        assert.deepStrictEqual(uuids(all), ["a", "b", "c", "d", "e", "f"], "duplicates within one batch")
        assert.deepStrictEqual(all[4], entry("e", "first"), "the first of the duplicates is kept")
        // A batch of nothing but known entries changes nothing.
        yield* s.append(key, [entry("c"), entry("a")])
        assert.deepStrictEqual(uuids(yield* loaded(key)), ["a", "b", "c", "d", "e", "f"])
      }))

    it.effect("entries without a uuid are appended each time", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        yield* s.append(key, [plain("x"), entry("a")])
        yield* s.append(key, [plain("x"), entry("a"), plain("x")])
        assert.deepStrictEqual(uuids(yield* loaded(key)), ["<x>", "a", "<x>", "<x>"])
      }))

    it.effect("load of a transcript never written is None", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        assert.isTrue(Option.isNone(yield* s.load(key)))
        yield* s.append(key, [entry("a")])
        assert.isTrue(Option.isNone(yield* s.load({ ...key, subpath: "subagents/agent-1.jsonl" })), "unknown subpath")
        assert.isTrue(Option.isNone(yield* s.load({ ...key, sessionId: randomUUID() })), "unknown session")
        assert.isTrue(Option.isNone(yield* s.load({ ...key, projectKey: freshProject() })), "other project")
      }))

    it.effect("subpaths are transcripts of their own, apart from the main one", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        const sub = { ...key, subpath: "subagents/agent-1.jsonl" }
        yield* s.append(key, [entry("a"), entry("shared")])
        yield* s.append(sub, [entry("shared"), entry("s1")])
        assert.deepStrictEqual(uuids(yield* loaded(key)), ["a", "shared"])
        assert.deepStrictEqual(uuids(yield* loaded(sub)), ["shared", "s1"], "a uuid is unique per transcript only")
        assert.deepStrictEqual(yield* s.listSubkeys(key), ["subagents/agent-1.jsonl"])
      }))

    it.effect("listSessions: the project's main transcripts only, with an integer mtime in ms", () =>
      Effect.gen(function*() {
        const s = yield* store
        const projectKey = freshProject()
        const [one, two, subOnly] = [randomUUID(), randomUUID(), randomUUID()]
        assert.deepStrictEqual(yield* s.listSessions(projectKey), [])
        const before = Date.now()
        yield* s.append({ projectKey, sessionId: one }, [entry("a")])
        yield* s.append({ projectKey, sessionId: two }, [entry("b")])
        yield* s.append({ projectKey, sessionId: two, subpath: "subagents/agent-1.jsonl" }, [entry("c")])
        yield* s.append({ projectKey, sessionId: subOnly, subpath: "subagents/agent-2.jsonl" }, [entry("d")])
        yield* s.append({ projectKey: freshProject(), sessionId: randomUUID() }, [entry("other")])
        const after = Date.now()
        const sessions = [...(yield* s.listSessions(projectKey))].sort((a, b) => a.sessionId.localeCompare(b.sessionId))
        assert.deepStrictEqual(sessions.map((x) => x.sessionId), [one, two].sort())
        for (const session of sessions) {
          assert.isTrue(Number.isInteger(session.mtime), `integer mtime, got ${session.mtime}`)
          assert.isTrue(session.mtime >= before - 1 && session.mtime <= after + 1, `mtime ${session.mtime} in range`)
        }
        const mtimeOne = sessions.find((x) => x.sessionId === one)!.mtime
        // The tests run on the TestClock; stores stamp with the wall clock, so wait on that.
        while (Date.now() <= mtimeOne + 1) yield* Effect.yieldNow
        yield* s.append({ projectKey, sessionId: one }, [entry("e")])
        const later = (yield* s.listSessions(projectKey)).find((x) => x.sessionId === one)!
        assert.isTrue(later.mtime > mtimeOne, `an append moves mtime forward (${mtimeOne} → ${later.mtime})`)
      }))

    it.effect("listSubkeys: the session's subpaths, not another session's", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        assert.deepStrictEqual(yield* s.listSubkeys(key), [])
        yield* s.append(key, [entry("a")])
        assert.deepStrictEqual(yield* s.listSubkeys(key), [], "the main transcript is not a subkey")
        yield* s.append({ ...key, subpath: "subagents/agent-b.jsonl" }, [entry("b")])
        yield* s.append({ ...key, subpath: "subagents/agent-a.jsonl" }, [entry("c")])
        yield* s.append({ ...key, subpath: "subagents/agent-a.jsonl" }, [entry("d")])
        yield* s.append({ ...key, sessionId: randomUUID(), subpath: "subagents/other.jsonl" }, [entry("e")])
        assert.deepStrictEqual(
          [...(yield* s.listSubkeys(key))].sort(),
          ["subagents/agent-a.jsonl", "subagents/agent-b.jsonl"]
        )
      }))

    it.effect("delete: a main transcript takes its subpaths; a subpath leaves the rest; nothing is fine", () =>
      Effect.gen(function*() {
        const s = yield* store
        const projectKey = freshProject()
        const key = { projectKey, sessionId: randomUUID() }
        const other = { projectKey, sessionId: randomUUID() }
        const [subA, subB] = [{ ...key, subpath: "subagents/a.jsonl" }, { ...key, subpath: "subagents/b.jsonl" }]
        yield* s.append(key, [entry("m")])
        yield* s.append(subA, [entry("a")])
        yield* s.append(subB, [entry("b")])
        yield* s.append(other, [entry("o")])

        yield* s.delete(subA)
        assert.isTrue(Option.isNone(yield* s.load(subA)))
        assert.deepStrictEqual(uuids(yield* loaded(key)), ["m"], "deleting a subpath leaves the main transcript")
        assert.deepStrictEqual(uuids(yield* loaded(subB)), ["b"], "and the other subpaths")
        assert.deepStrictEqual(yield* s.listSubkeys(key), ["subagents/b.jsonl"])

        yield* s.delete(key)
        assert.isTrue(Option.isNone(yield* s.load(key)))
        assert.isTrue(Option.isNone(yield* s.load(subB)), "deleting the main transcript deletes its subpaths")
        assert.deepStrictEqual(yield* s.listSubkeys(key), [])
        assert.deepStrictEqual((yield* s.listSessions(projectKey)).map((x) => x.sessionId), [other.sessionId])
        assert.deepStrictEqual(uuids(yield* loaded(other)), ["o"], "another session is untouched")

        yield* s.delete(key)
        yield* s.delete({ projectKey: freshProject(), sessionId: randomUUID(), subpath: "nothing.jsonl" })
        // A deleted transcript starts afresh: its uuids are forgotten.
        yield* s.append(key, [entry("m")])
        assert.deepStrictEqual(uuids(yield* loaded(key)), ["m"])
      }))

    it.effect("entries come back deep-equal: nesting, unicode, escapes, ~100 KB entries", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        const entries = awkwardEntries()
        yield* s.append(key, entries)
        const back = yield* loaded(key)
        assert.deepStrictEqual(back, entries)
        assert.strictEqual(JSON.stringify(back), JSON.stringify(entries), "same JSON text, same key order")
      }))

    it.effect("two concurrent appends to one session lose nothing, duplicate nothing, interleave nothing", () =>
      Effect.gen(function*() {
        const s = yield* store
        const key = { projectKey: freshProject(), sessionId: randomUUID() }
        const batch = (prefix: string) => Array.from({ length: 60 }, (_, i) => entry(`${prefix}-${i}`))
        const [left, right] = [batch("left"), batch("right")]
        yield* Effect.all([s.append(key, left), s.append(key, right)], { concurrency: 2 })
        const all = uuids(yield* loaded(key))
        assert.strictEqual(all.length, 120)
        assert.isTrue(
          all.join() === uuids([...left, ...right]).join() || all.join() === uuids([...right, ...left]).join(),
          "each append's entries stay together and in order"
        )
        // The same batch twice at once: stored once.
        const again = batch("again")
        yield* Effect.all([s.append(key, again), s.append(key, again)], { concurrency: 2 })
        assert.deepStrictEqual((yield* loaded(key)).slice(120).map((e) => e.uuid), uuids(again))
      }))

    it.effect("project keys, session ids and subpaths with quotes, SQL and unicode are plain data", () =>
      Effect.gen(function*() {
        const s = yield* store
        const projectKey = `${freshProject()} it's "quoted"; DROP TABLE claude_sessions; -- 日本 🧪 %_\\`
        const lookalike = projectKey.replace("%_", "ab")
        const sessionId = `'); DELETE FROM claude_session_entries; -- ${randomUUID()} é`
        const subpath = `subagents/it's "x"/🧪.jsonl`
        yield* s.append({ projectKey, sessionId }, [entry("a")])
        yield* s.append({ projectKey, sessionId, subpath }, [entry("b")])
        yield* s.append({ projectKey: lookalike, sessionId }, [entry("c")])
        assert.deepStrictEqual(uuids(yield* loaded({ projectKey, sessionId })), ["a"])
        assert.deepStrictEqual(uuids(yield* loaded({ projectKey, sessionId, subpath })), ["b"])
        assert.deepStrictEqual((yield* s.listSessions(projectKey)).map((x) => x.sessionId), [sessionId])
        assert.deepStrictEqual(yield* s.listSubkeys({ projectKey, sessionId }), [subpath])
        yield* s.delete({ projectKey, sessionId })
        assert.isTrue(Option.isNone(yield* s.load({ projectKey, sessionId, subpath })))
        assert.deepStrictEqual(
          uuids(yield* loaded({ projectKey: lookalike, sessionId })),
          ["c"],
          "only exact keys match"
        )
      }))
  })
