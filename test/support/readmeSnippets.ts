/**
 * The complete programs of the README and its guides (a ```ts block right after a
 * `<!-- snippet: name -->` line), written out to be type-checked and run as a user would: under
 * the strict flags the README promises, importing `effect-chat-bridge` by its package name.
 */
import type * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { runNode, type RunResult } from "./runTsx.ts"

export interface Snippet {
  readonly name: string
  /** The markdown file it comes from, relative to the repository. */
  readonly source: string
  readonly code: string
}

const root = path.resolve(import.meta.dirname, "../..")
/** Inside node_modules so that `effect` and `@types/node` resolve as in an app; never committed. */
export const snippetDir = path.join(root, "node_modules/.cache/readme-snippets")

const marked = /<!-- snippet: ([a-z0-9-]+) -->\n```ts\n([\s\S]*?)```/g

/** The snippets of README.md and docs/*.md, in file order. */
export const readSnippets = (): ReadonlyArray<Snippet> => {
  const files = [
    "README.md",
    ...fs.readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)
  ]
  return files.flatMap((source) =>
    [...fs.readFileSync(path.join(root, source), "utf8").matchAll(marked)].map((m) => ({
      name: m[1]!,
      source,
      code: m[2]!
    }))
  )
}

// The package's entry points are its `src` modules here: tsc maps them with `paths`; the copies
// that run import them by absolute path (tsx applies no `paths` inside node_modules).
const toSource = (code: string): string =>
  code.replace(
    /from "effect-chat-bridge(\/[a-z-]+)?"/g,
    (_, entry: string | undefined) =>
      `from ${JSON.stringify(path.join(root, "src", `${entry === undefined ? "index" : entry.slice(1)}.ts`))}`
  )

const strictFlags = {
  target: "ES2022",
  module: "nodenext",
  moduleResolution: "nodenext",
  types: ["node"],
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  noPropertyAccessFromIndexSignature: true,
  verbatimModuleSyntax: true,
  skipLibCheck: false,
  noEmit: true,
  // Only for `src`'s own `.ts` imports, which an app never sees (it gets `dist`).
  allowImportingTsExtensions: true
}

/**
 * Writes each snippet as `<name>.ts` (for tsc) and `<name>.run.ts` (to run), and a tsconfig for
 * them, in `dir` (a test file of its own passes its own, so that test files running at the same
 * time do not remove each other's).
 */
export const writeSnippets = (snippets: ReadonlyArray<Snippet>, dir: string = snippetDir): void => {
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
  for (const s of snippets) {
    fs.writeFileSync(path.join(dir, `${s.name}.ts`), s.code)
    fs.writeFileSync(path.join(dir, `${s.name}.run.ts`), toSource(s.code))
  }
  const paths = {
    "effect-chat-bridge": [path.join(root, "src/index.ts")],
    "effect-chat-bridge/*": [path.join(root, "src/*.ts")]
  }
  fs.writeFileSync(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { ...strictFlags, paths }, files: snippets.map((s) => `${s.name}.ts`) }, null, 2)
  )
}

/** `tsc -p` on the written snippets: exit code 0 and no output when every one type-checks. */
export const typecheckSnippets: Effect.Effect<RunResult> = runNode([
  path.join(root, "node_modules/typescript/bin/tsc"),
  "-p",
  path.join(snippetDir, "tsconfig.json")
])

/** The runnable copy of a written snippet. */
export const runnable = (name: string, dir: string = snippetDir): string => path.join(dir, `${name}.run.ts`)
