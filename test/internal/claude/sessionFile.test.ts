import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SessionFile from "../../../src/internal/claude/sessionFile.ts"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "ecb-sessionfile-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

const id = "0b7f3c2e-1111-4222-8333-444455556666"
const entry = (n: number) => ({ type: "user", uuid: `u-${n}`, message: { role: "user", content: `hello ${n}` } })

describe("claudeSessionFile", () => {
  it("configDir: CLAUDE_CONFIG_DIR of the changes, else $HOME/.claude of the changes", () => {
    expect(SessionFile.configDir({ CLAUDE_CONFIG_DIR: "/c", HOME: "/h" })).toBe("/c")
    expect(SessionFile.configDir({ CLAUDE_CONFIG_DIR: "", HOME: "/h" })).toBe("/h/.claude")
    // `undefined` removes the variable from the run's environment, whatever this process has.
    expect(SessionFile.configDir({ CLAUDE_CONFIG_DIR: undefined, HOME: "/h" })).toBe("/h/.claude")
  })

  it("projectDirName: every character but ASCII letters and digits becomes -", () => {
    expect(SessionFile.projectDirName("/tmp/a b/c.d_e-f")).toBe("-tmp-a-b-c-d-e-f")
    expect(SessionFile.projectDirName("/Users/Zoë/Proj2")).toBe("-Users-Zo--Proj2")
    // The CLI's own JavaScript replace works on UTF-16 code units: an emoji is two of them.
    expect(SessionFile.projectDirName("/x/🙂")).toBe("-x---")
  })

  it.effect("sessionPath names the folder from the real cwd (symbolic links resolved)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      mkdirSync(join(dir, "real"))
      symlinkSync(join(dir, "real"), join(dir, "link"))
      const path = SessionFile.sessionPath("/config", join(dir, "link"), id)
      expect(path).toBe(join("/config", "projects", SessionFile.projectDirName(join(dir, "real")), `${id}.jsonl`))
    }))

  it.effect("writeSessionFile writes one entry per line, 0600, through a temporary file it does not leave", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = join(dir, "projects", "-work", `${id}.jsonl`)
      yield* SessionFile.writeSessionFile(file, id, [entry(1), entry(2)])
      yield* SessionFile.writeSessionFile(file, id, [entry(1), entry(2), entry(3)])
      expect(readdirSync(join(dir, "projects", "-work"))).toEqual([`${id}.jsonl`])
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(yield* SessionFile.readSessionFile(file, id)).toEqual([entry(1), entry(2), entry(3)])
    }))

  it.effect("a write that fails is a SessionStoreError and leaves no temporary file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      // The target is a directory: the rename fails after the temporary file was written.
      const file = join(dir, `${id}.jsonl`)
      mkdirSync(file)
      writeFileSync(join(file, "keep"), "")
      const error = yield* Effect.flip(SessionFile.writeSessionFile(file, id, [entry(1)]))
      expect(error).toMatchObject({ _tag: "SessionStoreError", operation: "load", sessionId: id, isRetryable: false })
      expect(error.reason._tag).toBe("SessionFileFailed")
      expect(error.message).toContain(file)
      expect(readdirSync(dir)).toEqual([`${id}.jsonl`])
    }))

  it.effect("readSessionFile: a last line still being written is not read; blank lines are skipped", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = join(dir, `${id}.jsonl`)
      writeFileSync(file, `${JSON.stringify(entry(1))}\n\n${JSON.stringify(entry(2))}\n{"type":"assis`)
      expect(yield* SessionFile.readSessionFile(file, id)).toEqual([entry(1), entry(2)])
      appendFileSync(file, `tant","uuid":"u-3"}\n`)
      expect((yield* SessionFile.readSessionFile(file, id)).map((e) => e.uuid)).toEqual(["u-1", "u-2", "u-3"])
    }))

  it.effect("readSessionFile: a line that is not JSON, or has no type, is a typed error; a missing file too", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = join(dir, `${id}.jsonl`)
      writeFileSync(file, `${JSON.stringify(entry(1))}\nnot json\n`)
      const notJson = yield* Effect.flip(SessionFile.readSessionFile(file, id))
      expect(notJson).toMatchObject({ _tag: "SessionStoreError", operation: "load", sessionId: id })
      expect(notJson.message).toContain("not JSON")
      writeFileSync(file, `[1,2]\n`)
      expect((yield* Effect.flip(SessionFile.readSessionFile(file, id))).message).toContain(`without a "type"`)
      const missing = yield* Effect.flip(SessionFile.readSessionFile(join(dir, "nope.jsonl"), id))
      expect(missing.message).toContain("Could not read")
    }))

  it.effect("readSessionFileFrom reads the complete lines after an offset, multi-byte text included", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = join(dir, `${id}.jsonl`)
      const first = `${JSON.stringify({ type: "user", text: "Zoë 🙂" })}\n`
      writeFileSync(file, `${first}{"type":"assistant","text":"ü`)
      const head = yield* SessionFile.readSessionFileFrom(file, id, 0)
      expect(head).toMatchObject({ entries: [{ type: "user", text: "Zoë 🙂" }], end: Buffer.byteLength(first) })
      expect(Buffer.from(head!.last).toString()).toBe(first)
      appendFileSync(file, `ber"}\n`)
      const tail = yield* SessionFile.readSessionFileFrom(file, id, head!.end, head!.last)
      expect(tail?.entries).toEqual([{ type: "assistant", text: "über" }])
      expect(tail?.end).toBe(statSync(file).size)
      const none = yield* SessionFile.readSessionFileFrom(file, id, tail!.end, tail!.last)
      expect(none).toMatchObject({ entries: [], end: tail!.end })
      expect(none?.last).toEqual(tail?.last)
      // Shorter than the offset, or no longer holding the last line read there: rewritten since.
      expect(yield* SessionFile.readSessionFileFrom(file, id, tail!.end + 1)).toBeUndefined()
      writeFileSync(file, `${JSON.stringify({ type: "user", text: "another file, longer than before" })}\n`)
      expect(yield* SessionFile.readSessionFileFrom(file, id, head!.end, head!.last)).toBeUndefined()
    }))

  it.effect("findSessionFile looks under every project folder; none without one", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      expect(yield* SessionFile.findSessionFile(dir, id)).toEqual(Option.none())
      const file = join(dir, "projects", "-elsewhere", `${id}.jsonl`)
      yield* SessionFile.writeSessionFile(file, id, [entry(1)])
      mkdirSync(join(dir, "projects", "-other"))
      expect(yield* SessionFile.findSessionFile(dir, id)).toEqual(Option.some(file))
      expect(yield* SessionFile.findSessionFile(dir, "another-id")).toEqual(Option.none())
    }))
})
