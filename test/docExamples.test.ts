import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import {
  checkExamples,
  type DocExample,
  examplesDir,
  readDocExamples,
  unfencedExamples
} from "./support/docExamples.ts"

// The API docs' examples, copied out of `src`'s doc comments on each run and type-checked as a
// user's code importing the package's entry points (README snippets: test/examples/readme.test.ts).
const examples = readDocExamples()

// One copy with a planted type error, checked in the same tsc run as the real ones (tsc over the
// whole of `src` is the slow part): the check must name its file, line and title.
const target = examples.find((e) => e.source === "src/services/Tool.ts" && e.code.includes(`description: "Adds`))
const planted: DocExample | undefined = target && {
  ...target,
  name: `planted-${target.name}`,
  title: `planted: ${target.title}`,
  code: target.code.replace(`description: "Adds two numbers"`, "description: 42")
}
const plantedLine = target &&
  fs.readFileSync(target.source, "utf8").split("\n").findIndex((l, i) =>
      i >= target.line - 1 && l.includes(`description: "Adds two numbers"`)
    ) + 1

let report: ReadonlyArray<string> = []
beforeAll(() =>
  Effect.runPromise(checkExamples([...examples, ...(planted ? [planted] : [])])).then((r) => {
    report = r
  }), 240_000)
afterAll(() => fs.rmSync(examplesDir, { recursive: true, force: true }))

describe("the API docs' examples", () => {
  it("are all found: every @example and **Example** of src, each in a ```ts block", () => {
    expect(examples.length).toBeGreaterThanOrEqual(19)
    expect(unfencedExamples()).toEqual([])
    expect(examples.filter((e) => e.title === "untitled").map((e) => `${e.source}:${e.line}`)).toEqual([])
    // A user's imports: the package's entry points and its peers, never a path into `src`.
    const imports = examples.flatMap((e) => [...e.code.matchAll(/from "([^"]+)"/g)].map((m) => `${e.source}: ${m[1]}`))
    expect(imports.filter((i) => !/: (effect-chat-bridge(\/[a-z-]+)?|effect(\/[a-z]+)?|@effect\/[a-z-]+)$/.test(i)))
      .toEqual([])
    expect(examples.map((e) => e.source)).toEqual(
      expect.arrayContaining(["src/layers/ClaudeApi.ts", "src/services/Tool.ts", "src/ai/AiToolkit.ts"])
    )
  })

  it("type-check against the package's public entry points under the README's strict flags", () => {
    expect(report.filter((l) => !l.includes("(planted: "))).toEqual([])
  })

  it("a planted type error is reported with the example's file, line and title", () => {
    expect(planted).toBeDefined()
    expect(plantedLine).toBeGreaterThan(target!.line)
    expect(report).toEqual([
      expect.stringMatching(
        new RegExp(`^src/services/Tool\\.ts:${plantedLine} \\(planted: ${target!.title}\\): error TS2322: `)
      )
    ])
  })
})
