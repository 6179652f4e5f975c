/**
 * The examples of the API docs: every ```ts block of a doc comment in `src` (each under a
 * `**Example** (title)` label, as in `effect`, or an `@example` tag), written out with the README
 * snippets' machinery (readmeSnippets.ts: the strict flags, the package's entry points resolved to
 * `src`) so tsc checks them as a user's code, and tsc's complaints mapped back to the source line.
 */
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type Snippet, snippetDir, writeSnippets } from "./readmeSnippets.ts"
import { runNode, type RunResult } from "./runTsx.ts"

export interface DocExample extends Snippet {
  /** What the example shows: its `**Example** (title)` label, or the text after `@example`. */
  readonly title: string
  /** The 1-based line in `source` of the example's first line of code. */
  readonly line: number
}

const root = path.resolve(import.meta.dirname, "../..")

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .sort()
    .map((f) => `${dir}/${f}`)

/** The label above a fence, looking back over blank lines: `**Example** (title)` or `@example title`. */
const titleAbove = (lines: ReadonlyArray<string>, fence: number): string | undefined => {
  let i = fence - 1
  while (i >= 0 && lines[i] === "") i--
  const label = /^\*\*Example\*\* \((.+)\)$/.exec(lines[i] ?? "") ?? /^@example\b\s*(.*)$/.exec(lines[i] ?? "")
  return label === null ? undefined : label[1] === "" ? "@example" : label[1]
}

/** The examples of one file's doc comments, in file order. */
export const examplesOf = (source: string, text: string): ReadonlyArray<DocExample> => {
  const found: Array<DocExample> = []
  for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
    const firstLine = text.slice(0, comment.index).split("\n").length
    // Each line of the comment without its ` * ` margin.
    const lines = comment[0].split("\n").map((l) =>
      l.replace(/^\s*(\/\*\*|\*\/|\*(?!\/) ?)/, "").replace(/\s*\*\/$/, "")
    )
    for (let i = 0; i < lines.length; i++) {
      if (!/^```ts\b/.test(lines[i]!)) continue
      const end = lines.findIndex((l, j) => j > i && l === "```")
      if (end < 0) throw new Error(`${source}:${firstLine + i}: unclosed \`\`\`ts block`)
      const line = firstLine + i + 1
      found.push({
        name: `${source.replace(/^src\//, "").replace(/\.ts$/, "").replace(/\//g, "-")}-${line}`,
        source,
        line,
        title: titleAbove(lines, i) ?? "untitled",
        code: `${lines.slice(i + 1, end).join("\n")}\n`
      })
      i = end
    }
  }
  return found
}

/** Every example of `src`'s doc comments. */
export const readDocExamples = (): ReadonlyArray<DocExample> =>
  sourceFiles("src").flatMap((source) => examplesOf(source, fs.readFileSync(path.join(root, source), "utf8")))

/** An `@example` tag whose code is not in a ```ts block: it cannot be extracted, so it is never checked. */
export const unfencedExamples = (): ReadonlyArray<string> =>
  sourceFiles("src").flatMap((source) => {
    const lines = fs.readFileSync(path.join(root, source), "utf8").split("\n")
    return lines.flatMap((l, i) => {
      if (!/^\s*\* @example\b/.test(l)) return []
      const next = lines.slice(i + 1).find((n) => !/^\s*\*\s*$/.test(n)) ?? ""
      return /^\s*\* ```ts\b/.test(next) ? [] : [`${source}:${i + 1}`]
    })
  })

/** Where the examples are written; apart from the README's, so the two tests can run at once. */
export const examplesDir = `${snippetDir}-doc-examples`

/** Writes the examples (as readmeSnippets' `writeSnippets`, with its tsconfig) and runs tsc on them. */
export const typecheckExamples = (examples: ReadonlyArray<DocExample>, dir: string = examplesDir) => {
  writeSnippets(examples, dir)
  // The README's flags but for `skipLibCheck`: the README test already checks the libraries'
  // declarations under them, and leaving that out here halves tsc's time.
  const tsconfig = path.join(dir, "tsconfig.json")
  const config = JSON.parse(fs.readFileSync(tsconfig, "utf8")) as { compilerOptions: Record<string, unknown> }
  fs.writeFileSync(
    tsconfig,
    JSON.stringify({ ...config, compilerOptions: { ...config.compilerOptions, skipLibCheck: true } })
  )
  return runNode([path.join(root, "node_modules/typescript/bin/tsc"), "-p", path.join(dir, "tsconfig.json")])
}

/**
 * tsc's output, one line per error, each named by the example's source line and title:
 * `src/services/Tool.ts:196 (Defining a tool): error TS2322: …`. Lines tsc prints about other files
 * (`src` itself) are kept as they are.
 */
export const reportOf = (examples: ReadonlyArray<DocExample>, out: RunResult): ReadonlyArray<string> => {
  const byFile = new Map(examples.map((e) => [`${e.name}.ts`, e]))
  return (out.stdout + out.stderr).split("\n").filter((l) => /error TS\d+/.test(l)).map((l) => {
    const m = /^(?:.*[/\\])?([\w.-]+\.ts)\((\d+),\d+\): (.*)$/.exec(l)
    const example = m && byFile.get(m[1]!)
    return example ? `${example.source}:${example.line + Number(m[2]) - 1} (${example.title}): ${m[3]}` : l
  })
}

/** {@link typecheckExamples} and {@link reportOf} together. */
export const checkExamples = (
  examples: ReadonlyArray<DocExample>,
  dir?: string
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.map(typecheckExamples(examples, dir), (out) => reportOf(examples, out))
