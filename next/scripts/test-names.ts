/**
 * Lists the test names of a set of test files, one `file: describe > … > it` line per test, so a
 * ported suite can be diffed against the root's name by name:
 *
 * ```sh
 * cd next
 * npm run --silent test-names -- ../test/registry > /tmp/root.txt
 * npm run --silent test-names -- test/registry > /tmp/next.txt
 * diff /tmp/root.txt /tmp/next.txt
 * ```
 *
 * Each argument is a test file or a folder (searched for `*.test.ts`); files are printed relative
 * to the folder given, so the two trees compare line by line. Names are read statically with the
 * TypeScript parser, not by running the suites: `describe`/`it`/`test` calls and their modifiers
 * (`it.effect`, `it.live`, `it.skip`, `it.each(…)`, `describe.skip`, …). A name built from a
 * template keeps its `${…}` placeholders as written, so a test declared in a loop is one line
 * (vitest counts each iteration): compare these lists with each other, not with vitest's count.
 * Use `npm run --silent` to leave out npm's own header lines.
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
  if (ts.isTemplateExpression(arg)) return arg.getText(source).slice(1, -1)
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

const main = (args: ReadonlyArray<string>): void => {
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
