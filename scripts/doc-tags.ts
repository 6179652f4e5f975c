/**
 * Checks that every export a user can reach carries `@since` and one `@category` from the
 * library's vocabulary, the tags `effect`'s own modules carry and its docs are navigated by:
 *
 * ```sh
 * npm run --silent doc-tags            # one line per missing tag; exit code 1 when any is missing
 * npm run --silent doc-tags -- --fix 2.0.0   # adds the missing tags (a guessed @category: review it)
 * npm run --silent doc-tags -- --fix 2.0.0 --base <commit>   # exports already there at <commit>
 *                                                            # get the tags they had there
 * ```
 *
 * "Reachable" starts at the package's entry points (`package.json` `exports` → `src/<entry>.ts`),
 * follows their `export * as Module from` lines to the public modules, and takes every export of
 * those, resolved through re-exports to the declaration typedoc documents (a type re-exported
 * from an internal file is checked where it is declared). Each declaration of a name counts (a
 * `const` and the `type` of the same name each show on the page); of an overloaded function only
 * the signatures do, not the implementation. Parsing and binding only, no type check: about a
 * second for the whole package.
 *
 * @since 2.0.0
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import ts from "typescript"

/** The categories an export may have (common to the whole package, as in `effect`). */
export const Categories: ReadonlyArray<string> = [
  "models",
  "constructors",
  "layers",
  "services",
  "errors",
  "schemas",
  "accessors",
  "guards",
  "utils",
  "config",
  "testing"
]

/** One declaration of a public export that lacks a tag. */
export interface Problem {
  /** The file it is declared in, relative to the repository. */
  readonly file: string
  /** The 1-based line of the declaration itself (below its doc comment). */
  readonly line: number
  /** `Module.name` as a user writes it (the entry point's namespace and the export). */
  readonly name: string
  /** What is missing or wrong, e.g. `@since`, `@category`, `@category "other" is not one of …`. */
  readonly missing: ReadonlyArray<string>
}

/** A public export's declaration, with where it is reached from. */
export interface PublicDeclaration {
  readonly file: string
  readonly line: number
  readonly name: string
  readonly node: ts.Declaration
  /** The doc comment that typedoc shows for it, if any. */
  readonly doc: ts.JSDoc | undefined
}

const repo = path.resolve(import.meta.dirname, "..")

/** `src/<entry>.ts` for each entry of `package.json` `exports` (but `./package.json`). */
export const entryFiles = (root: string = repo): ReadonlyArray<string> => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
    readonly exports: Record<string, unknown>
  }
  return Object.keys(pkg.exports).filter((key) => key !== "./package.json").map((key) =>
    path.join(root, "src", `${key === "." ? "index" : key.slice(2)}.ts`)
  )
}

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts")).map((f) =>
    path.join(dir, f)
  )

/** The node a declaration's doc comment is attached to (a `const`'s is on its statement). */
const commented = (node: ts.Declaration): ts.Node =>
  ts.isVariableDeclaration(node) && ts.isVariableDeclarationList(node.parent) ? node.parent.parent : node

/** The last doc comment before a declaration: the one typedoc and editors show. */
export const docOf = (node: ts.Declaration): ts.JSDoc | undefined =>
  ts.getJSDocCommentsAndTags(commented(node)).filter(ts.isJSDoc).at(-1)

const tagText = (tag: ts.JSDocTag): string =>
  (typeof tag.comment === "string" ? tag.comment : ts.getTextOfJSDocComment(tag.comment) ?? "").trim()

const isOverloadImplementation = (node: ts.Declaration, all: ReadonlyArray<ts.Declaration>): boolean =>
  ts.isFunctionDeclaration(node) && node.body !== undefined &&
  all.some((d) => ts.isFunctionDeclaration(d) && d !== node)

/** Every declaration of every export reachable from the package's entry points. */
export const publicDeclarations = (root: string = repo): ReadonlyArray<PublicDeclaration> => {
  const entries = entryFiles(root)
  // Every source file, without following imports: `effect`'s declarations are not needed to bind
  // `src`'s exports, and leaving them out makes this a second instead of ten.
  const program = ts.createProgram(sourceFiles(path.join(root, "src")), {
    allowImportingTsExtensions: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    noEmit: true,
    noResolve: true,
    types: []
  })
  const checker = program.getTypeChecker()
  const resolve = (symbol: ts.Symbol): ts.Symbol =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
  const found: Array<PublicDeclaration> = []
  const seen = new Set<ts.Declaration>()
  for (const entry of entries) {
    const source = program.getSourceFile(entry)
    const entrySymbol = source && checker.getSymbolAtLocation(source)
    if (entrySymbol === undefined) throw new Error(`cannot read entry point ${entry}`)
    for (const namespace of checker.getExportsOfModule(entrySymbol)) {
      const module = resolve(namespace)
      for (const exported of checker.getExportsOfModule(module)) {
        const declarations = resolve(exported).declarations ?? []
        for (const node of declarations) {
          if (seen.has(node) || isOverloadImplementation(node, declarations)) continue
          seen.add(node)
          const file = node.getSourceFile()
          found.push({
            file: path.relative(root, file.fileName),
            line: file.getLineAndCharacterOfPosition(commented(node).getStart(file)).line + 1,
            name: `${namespace.name}.${exported.name}`,
            node,
            doc: docOf(node)
          })
        }
      }
    }
  }
  return found
}

/** What a declaration's doc comment lacks: `@since`, a `@category` of the vocabulary. */
export const missingTags = (doc: ts.JSDoc | undefined): ReadonlyArray<string> => {
  const tags = doc?.tags ?? []
  const since = tags.filter((t) => t.tagName.text === "since")
  const categories = tags.filter((t) => t.tagName.text === "category").map(tagText)
  return [
    ...(since.length === 0
      ? ["@since"]
      : since.some((t) => !/^\d+\.\d+\.\d+$/.test(tagText(t)))
      ? ["@since x.y.z"]
      : []),
    ...(categories.length === 0
      ? ["@category"]
      : categories.length > 1
      ? ["one @category (has several)"]
      : Categories.includes(categories[0]!)
      ? []
      : [`@category "${categories[0]}" is not one of ${Categories.join(", ")}`])
  ]
}

/** Every public declaration that lacks `@since` or a valid `@category`. */
export const problems = (declarations: ReadonlyArray<PublicDeclaration>): ReadonlyArray<Problem> =>
  declarations.flatMap(({ doc, file, line, name }) => {
    const missing = missingTags(doc)
    return missing.length === 0 ? [] : [{ file, line, name, missing }]
  })

/** `src/layers/Foo.ts:12 Foo.bar: missing @since, @category` */
export const formatProblem = (p: Problem): string => `${p.file}:${p.line} ${p.name}: missing ${p.missing.join(", ")}`

/**
 * A first guess at a declaration's category, from its kind and name, for {@link fix}: a person
 * reviews it (is `make` a constructor or a layer? is an interface a model or config?).
 */
export const guessCategory = (name: string, node: ts.Declaration): string => {
  const text = (n: ts.Node | undefined) => n?.getText() ?? ""
  if (/^(Test[A-Z]|Scripted\.)|Memory\./.test(name)) return "testing"
  const short = name.slice(name.indexOf(".") + 1)
  if (ts.isClassDeclaration(node)) {
    // `extends Schema.Class<…>(…)({ …fields })`: the callee, not the fields (`isError: …`).
    const heritage = node.heritageClauses?.flatMap((c) => c.types.map((t) => text(t.expression))).join(" ") ?? ""
    if (/^(Schema\.TaggedError|Data\.(TaggedError|Error))\b/.test(heritage) || /Error$/.test(short)) return "errors"
    if (/Context\.(Service|Reference)/.test(heritage)) return "services"
    return /Schema\./.test(heritage) ? "schemas" : "models"
  }
  if (ts.isInterfaceDeclaration(node) || ts.isTypeAliasDeclaration(node)) {
    return /Error$/.test(short) ? "errors" : /(Options|Config)$/.test(short) ? "config" : "models"
  }
  if (/^layer/.test(short)) return "layers"
  if (/^is[A-Z]/.test(short)) return "guards"
  if (/^(make|from)/.test(short)) return "constructors"
  const init = ts.isVariableDeclaration(node) ? text(node.initializer) : ""
  if (/^Schema\./.test(init)) return "schemas"
  if (/^Context\./.test(init)) return "services"
  if (/^Default|^default/.test(short)) return "config"
  return ts.isFunctionDeclaration(node) || /=>|^Effect\.fn/.test(init.slice(0, 120)) ? "utils" : "models"
}

/** The tags an export had before (see {@link exportsAt}). */
export interface KnownTags {
  readonly since: string
  readonly category: string | undefined
}

/** `Module.name`, and `:type` for an interface or type alias (a name may be a value and a type). */
export const keyOf = (d: Pick<PublicDeclaration, "name" | "node">): string =>
  ts.isInterfaceDeclaration(d.node) || ts.isTypeAliasDeclaration(d.node) ? `${d.name}:type` : d.name

const tagOf = (doc: ts.JSDoc | undefined, name: string): string | undefined => {
  const tag = doc?.tags?.find((t) => t.tagName.text === name)
  return tag && tagText(tag)
}

/**
 * Adds the missing `@since` and `@category` as lines before the closing `*\/` of each public
 * declaration's doc comment, or a doc comment of just those two where there is none; nothing else
 * in the file changes (a one-line comment becomes a block). An export in `known` gets the tags it
 * had; a new one `@since <since>` and a guessed category (review it). Returns what it added, one
 * line per declaration: `src/layers/Foo.ts:12 Foo.bar: @category utils (guessed), @since 2.0.0`.
 */
export const fix = (
  since: string,
  root: string = repo,
  known: ReadonlyMap<string, KnownTags> = new Map()
): ReadonlyArray<string> => {
  const added: Array<string> = []
  const edits = new Map<ts.SourceFile, Array<{ readonly pos: number; readonly end: number; readonly text: string }>>()
  for (const d of publicDeclarations(root)) {
    const missing = missingTags(d.doc)
    const before = known.get(keyOf(d))
    const tags = [
      ...(missing.includes("@category") ? [`@category ${before?.category ?? guessCategory(d.name, d.node)}`] : []),
      ...(missing.includes("@since") ? [`@since ${before?.since ?? since}`] : [])
    ]
    if (tags.length === 0) continue
    const guessed = missing.includes("@category") && before?.category === undefined
    added.push(
      `${d.file}:${d.line} ${d.name}: ${tags.join(", ")}`.replace(/(@category \w+)/, guessed ? "$1 (guessed)" : "$1")
    )
    const file = d.node.getSourceFile()
    const list = edits.get(file) ?? []
    edits.set(file, list)
    const start = d.doc?.getStart(file) ?? commented(d.node).getStart(file)
    const lineStart = file.text.lastIndexOf("\n", start - 1) + 1
    const indent = file.text.slice(lineStart, start)
    const lines = (prefix: ReadonlyArray<string>) =>
      [...prefix, ...tags].map((l) => `${indent} *${l === "" ? "" : ` ${l}`}`)
    if (d.doc === undefined) {
      list.push({ pos: lineStart, end: lineStart, text: [`${indent}/**`, ...lines([]), `${indent} */`, ""].join("\n") })
      continue
    }
    const doc = file.text.slice(start, d.doc.end)
    if (!doc.includes("\n")) {
      const body = doc.slice(3, -2).trim()
      list.push({ pos: start, end: d.doc.end, text: ["/**", ...lines([body, ""]), `${indent} */`].join("\n") })
      continue
    }
    const close = file.text.lastIndexOf("\n", d.doc.end - 1) + 1
    const last = doc.split("\n").at(-2)!.trim()
    // A blank line between the text and the tags, as in effect; none when tags are already there.
    const blank = last === "*" || last.startsWith("* @") ? [] : [""]
    list.push({ pos: close, end: close, text: [...lines(blank), ""].join("\n") })
  }
  for (const [file, list] of edits) {
    let text = file.text
    for (const e of [...list].sort((a, b) => b.pos - a.pos)) text = text.slice(0, e.pos) + e.text + text.slice(e.end)
    fs.writeFileSync(file.fileName, text)
  }
  return added
}

/**
 * The public exports of the package at a git commit, with their `@since` (else that commit's
 * `package.json` version) and `@category` there: after a merge, an export that lost its tags to a
 * conflict but existed before gets them back, and only the new ones get the new version.
 */
export const exportsAt = (ref: string, root: string = repo): ReadonlyMap<string, KnownTags> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "doc-tags-base-"))
  try {
    execFileSync(
      "sh",
      ["-c", `git archive ${JSON.stringify(ref)} package.json src | tar -x -C ${JSON.stringify(dir)}`],
      {
        cwd: root
      }
    )
    const version = (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version
    return new Map(
      publicDeclarations(dir).map((d) => [keyOf(d), {
        since: tagOf(d.doc, "since") ?? version,
        category: tagOf(d.doc, "category")
      }])
    )
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.main && process.argv[2] === "--fix") {
  const [since = "", flag, base] = process.argv.slice(3)
  if (!/^\d+\.\d+\.\d+$/.test(since) || (flag !== undefined && (flag !== "--base" || base === undefined))) {
    process.stderr.write("usage: tsx scripts/doc-tags.ts --fix <version> [--base <git ref>]\n")
    process.exit(2)
  }
  for (const line of fix(since, repo, base === undefined ? new Map() : exportsAt(base))) {
    process.stdout.write(`${line}\n`)
  }
} else if (import.meta.main) {
  const declarations = publicDeclarations()
  const found = problems(declarations)
  for (const p of found) process.stderr.write(`${formatProblem(p)}\n`)
  if (found.length > 0) {
    process.stderr.write(`${found.length} of ${declarations.length} public declarations lack doc tags\n`)
    process.exit(1)
  }
  process.stdout.write(`doc tags: ${declarations.length} public declarations, each with @since and @category\n`)
}
