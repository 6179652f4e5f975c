/**
 * Lists the test names of a set of test files, one `file: describe > … > it` line per test, so a
 * ported suite can be diffed against the Effect 3 line's (test/v3TestNames.txt) name by name:
 *
 * ```sh
 * npm run --silent test-names -- test/registry > /tmp/now.txt
 * grep "^registry/" test/v3TestNames.txt | diff - /tmp/now.txt
 * ```
 *
 * Each argument is a test file or a folder (searched for `*.test.ts`); files are printed relative
 * to the folder given, so the two trees compare line by line. Names are read statically with the
 * TypeScript parser, not by running the suites: `describe`/`it`/`test` calls and their modifiers
 * (`it.effect`, `it.live`, `it.skip`, `it.each(…)`, `describe.skip`, …). A name built from a
 * template keeps its `${…}` placeholders as written, so a test declared in a loop is one line
 * (vitest counts each iteration): compare these lists with each other, not with vitest's count.
 * Use `npm run --silent` to leave out npm's own header lines.
 *
 * `--diff <v3 folder or names file> <v4 folder>` compares two whole suites by name (the names
 * file is this script's output for the v3 suite, kept as `test/v3TestNames.txt` since the v3
 * tree is gone): it prints every v3 test with
 * no v4 test of the same file and name that `test/renamedTests.json` does not explain (`"file:
 * name"` → why it is gone or what it is called now), then the count of v4-only tests, and exits
 * with 1 when anything is unexplained. `npm run --silent test-names -- --diff test/v3TestNames.txt test`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"

const suiteRoots = new Set(["describe", "suite"])
const testRoots = new Set(["it", "test"])

/** The root identifier of a callee such as `it.effect`, `describe.skip` or `it.each(rows)`. */
const rootName = (callee: ts.Expression): string | undefined => {
  if (ts.isIdentifier(callee)) return callee.text
  if (ts.isPropertyAccessExpression(callee)) return rootName(callee.expression)
  if (ts.isCallExpression(callee)) return rootName(callee.expression)
  return undefined
}

const nameOf = (arg: ts.Expression | undefined, source: ts.SourceFile): string | undefined => {
  if (arg === undefined) return undefined
  if (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg)) return arg.text
  // One line per test, also for a template that spans lines.
  if (ts.isTemplateExpression(arg)) return arg.getText(source).slice(1, -1).replace(/\s*\n\s*/g, " ")
  return undefined
}

/** Every test of one file, as `describe > … > it`, in source order. */
const testNames = (file: string): ReadonlyArray<string> => {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const out: Array<string> = []
  const visit = (node: ts.Node, scope: ReadonlyArray<string>): void => {
    if (ts.isCallExpression(node)) {
      const root = rootName(node.expression)
      const name = nameOf(node.arguments[0], source)
      if (root !== undefined && name !== undefined && (suiteRoots.has(root) || testRoots.has(root))) {
        if (testRoots.has(root)) {
          out.push([...scope, name].join(" > "))
          return
        }
        for (const arg of node.arguments.slice(1)) visit(arg, [...scope, name])
        return
      }
    }
    ts.forEachChild(node, (child) => visit(child, scope))
  }
  visit(source, [])
  return out
}

const filesUnder = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".test.ts"))
    .map((e) => path.join(e.parentPath, e.name))
    .sort()

/** `file: name` lines of every test under `dir`, files relative to `dir`. */
const suiteLines = (dir: string): ReadonlyArray<string> =>
  filesUnder(dir).flatMap((file) => testNames(file).map((name) => `${path.relative(dir, file)}: ${name}`))

const explained = (): Readonly<Record<string, string>> => {
  const file = path.join(path.dirname(new URL(import.meta.url).pathname), "..", "test", "renamedTests.json")
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, string> : {}
}

const diff = (v3: string, v4: string): void => {
  const ported = new Set(suiteLines(v4))
  const reasons = explained()
  const v3Lines = [
    ...new Set(
      fs.statSync(v3).isDirectory()
        ? suiteLines(v3)
        : fs.readFileSync(v3, "utf8").split("\n").filter((line) => line !== "")
    )
  ]
  const missing = v3Lines.filter((line) => !ported.has(line) && reasons[line] === undefined)
  const justified = v3Lines.filter((line) => !ported.has(line) && reasons[line] !== undefined)
  const v3Set = new Set(v3Lines)
  const added = [...ported].filter((line) => !v3Set.has(line))
  for (const line of missing) process.stdout.write(`missing: ${line}\n`)
  process.stdout.write(
    `${v3Lines.length} v3 tests: ${v3Lines.length - missing.length - justified.length} ported by name, ` +
      `${justified.length} explained in test/renamedTests.json, ${missing.length} missing; ` +
      `${added.length} tests only on v4\n`
  )
  if (missing.length > 0) process.exitCode = 1
}

const main = (args: ReadonlyArray<string>): void => {
  if (args[0] === "--diff" && args.length === 3) return diff(args[1]!, args[2]!)
  if (args.length === 0) {
    process.stderr.write("usage: test-names <test file or folder>...\n")
    process.exitCode = 2
    return
  }
  for (const arg of args) {
    const isDir = fs.statSync(arg).isDirectory()
    const base = isDir ? arg : path.dirname(arg)
    for (const file of isDir ? filesUnder(arg) : [arg]) {
      const rel = path.relative(base, file)
      for (const name of testNames(file)) process.stdout.write(`${rel}: ${name}\n`)
    }
  }
}

main(process.argv.slice(2))
