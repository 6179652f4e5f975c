import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { exportsAt, fix, formatProblem, problems, publicDeclarations } from "../../scripts/doc-tags.ts"

// Every export a user reaches from the package's entry points carries `@since` and one `@category`
// of the vocabulary (scripts/doc-tags.ts; `npm run docs` checks the rendered pages the same way).
describe("doc tags", () => {
  it("every public export has @since and a @category of the vocabulary", () => {
    const declarations = publicDeclarations()
    // The entry points' modules, re-exports resolved: hundreds, not a handful found by mistake.
    expect(declarations.length).toBeGreaterThan(400)
    expect(declarations.map((d) => d.name)).toEqual(
      expect.arrayContaining(["ChatClient.ProviderError", "ClaudeAgent.layer", "ToolPolicy.AgentToolSettings"])
    )
    expect(problems(declarations).map(formatProblem)).toEqual([])
  })

  /** A package of two entry points in a temporary folder, removed after `f`. */
  const withPackage = (f: (root: string) => void) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "doc-tags-"))
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
      fs.writeFileSync(path.join(root, file), text)
    }
    try {
      write("package.json", JSON.stringify({ exports: { ".": {}, "./extra": {}, "./package.json": "./package.json" } }))
      write("src/index.ts", `export * as Thing from "./Thing.ts"\n`)
      write("src/extra.ts", `export * as Extra from "./Extra.ts"\n`)
      write(
        "src/Thing.ts",
        [
          `/**\n * Tagged.\n *\n * @category models\n * @since 1.0.0\n */`,
          `export const tagged = 1`,
          `/** No tags. */`,
          `export const untagged = 2`,
          `export { hidden } from "./internal/hidden.ts"`,
          `export const layerThing = 4`,
          ``
        ].join("\n")
      )
      write("src/internal/hidden.ts", `/**\n * Hidden.\n *\n * @since 1.0.0\n */\nexport const hidden = 3\n`)
      write("src/Extra.ts", `/**\n * @category options\n * @since 2.0\n */\nexport interface Extra {}\n`)
      f(root)
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  }

  it("names the file, the export and what it lacks, following re-exports to the declaration", () =>
    withPackage((root) => {
      expect(problems(publicDeclarations(root)).map(formatProblem)).toEqual([
        "src/Thing.ts:9 Thing.untagged: missing @since, @category",
        "src/internal/hidden.ts:6 Thing.hidden: missing @category",
        "src/Thing.ts:11 Thing.layerThing: missing @since, @category",
        "src/Extra.ts:5 Extra.Extra: missing @since x.y.z, @category \"options\" is not one of models, constructors, " +
        "layers, services, errors, schemas, accessors, guards, utils, config, testing"
      ])
    }))

  it("--fix adds only the missing tags, inside the doc comment or as a new one; a wrong tag is left to a person", () =>
    withPackage((root) => {
      expect(fix("2.0.0", root)).toEqual([
        "src/Thing.ts:9 Thing.untagged: @category models (guessed), @since 2.0.0",
        "src/internal/hidden.ts:6 Thing.hidden: @category models (guessed)",
        "src/Thing.ts:11 Thing.layerThing: @category layers (guessed), @since 2.0.0"
      ])
      expect(fs.readFileSync(path.join(root, "src/Thing.ts"), "utf8")).toContain(
        [
          `/**\n * No tags.\n *\n * @category models\n * @since 2.0.0\n */\nexport const untagged = 2`,
          `export { hidden } from "./internal/hidden.ts"`,
          `/**\n * @category layers\n * @since 2.0.0\n */\nexport const layerThing = 4`
        ].join("\n")
      )
      expect(fs.readFileSync(path.join(root, "src/internal/hidden.ts"), "utf8")).toBe(
        `/**\n * Hidden.\n *\n * @since 1.0.0\n * @category models\n */\nexport const hidden = 3\n`
      )
      expect(problems(publicDeclarations(root)).map((p) => p.name)).toEqual(["Extra.Extra"])
    }))

  it("--fix --base: exports already there at the base commit get the tags they had, new ones the new version", () =>
    withPackage((root) => {
      const git = (...args: ReadonlyArray<string>) =>
        execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: root })
      fs.writeFileSync(path.join(root, "package.json"), JSON.stringify({ version: "1.4.0", exports: { ".": {} } }))
      git("init", "-q")
      git("add", "-A")
      git("commit", "-qm", "base")
      // A merge conflict resolved to a version without the tags; a new export.
      const thing = path.join(root, "src/Thing.ts")
      fs.writeFileSync(thing, fs.readFileSync(thing, "utf8").replace(/\/\*\*\n \* Tagged[^/]*\//, "/** Tagged. */"))
      fs.appendFileSync(thing, `/** New. */\nexport class NewError extends Error {}\n`)
      const known = exportsAt("HEAD", root)
      expect(known.get("Thing.untagged")).toEqual({ since: "1.4.0", category: undefined })
      expect(known.get("Thing.tagged")).toEqual({ since: "1.0.0", category: "models" })
      expect(known.has("Thing.NewError")).toBe(false)
      fix("2.0.0", root, known)
      const text = fs.readFileSync(path.join(root, "src/Thing.ts"), "utf8")
      expect(text).toContain(`/**\n * No tags.\n *\n * @category models\n * @since 1.4.0\n */\nexport const untagged`)
      expect(text).toContain(`/**\n * Tagged.\n *\n * @category models\n * @since 1.0.0\n */\nexport const tagged = 1`)
      expect(text).toContain(`/**\n * New.\n *\n * @category errors\n * @since 2.0.0\n */\nexport class NewError`)
    }))
})
