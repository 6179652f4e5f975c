import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { formatProblem, problems, publicDeclarations } from "../../scripts/doc-tags.ts"

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

  it("names the file, the export and what it lacks, following re-exports to the declaration", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "doc-tags-"))
    try {
      const write = (file: string, text: string) => {
        fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true })
        fs.writeFileSync(path.join(root, file), text)
      }
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
          ``
        ].join("\n")
      )
      write("src/internal/hidden.ts", `/**\n * @since 1.0.0\n */\nexport const hidden = 3\n`)
      write("src/Extra.ts", `/**\n * @category options\n * @since 2.0\n */\nexport interface Extra {}\n`)
      expect(problems(publicDeclarations(root)).map(formatProblem)).toEqual([
        "src/Thing.ts:9 Thing.untagged: missing @since, @category",
        "src/internal/hidden.ts:4 Thing.hidden: missing @category",
        "src/Extra.ts:5 Extra.Extra: missing @since x.y.z, @category \"options\" is not one of models, constructors, " +
        "layers, services, errors, schemas, accessors, guards, utils, config, testing"
      ])
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
})
