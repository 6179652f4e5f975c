import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { runNode } from "./support/runTsx.ts"

// The main entry is light: importing it loads no MCP SDK (nor the zod, ajv and hono it pulls);
// starting a bridge does. Checked at run time, in a fresh Node whose synchronous resolve hook
// records every module URL resolved: dynamic `import()`s inside a bridge's `make` count only once
// they run, which a reading of the source cannot tell.
const heavy =
  /\/node_modules\/(?:@modelcontextprotocol\/sdk|zod|zod-to-json-schema|ajv|ajv-formats|hono|@hono\/[^/]+)\//

const script = `
import { registerHooks } from "node:module"
const urls = new Set()
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); urls.add(r.url); return r } })
const packages = () => [...new Set([...urls].flatMap((u) => {
  const m = ${heavy.toString()}.exec(u)
  return m === null ? [] : [m[0].slice("/node_modules/".length, -1)]
}))].sort()
const main = await import("./src/index.ts")
console.log("after import: " + JSON.stringify(packages()))
const { Effect } = await import("effect")
await Effect.runPromise(Effect.scoped(main.NodeMcpBridge.make()))
console.log("after a bridge: " + JSON.stringify(packages()))
`

const line = (stdout: string, label: string): ReadonlyArray<string> =>
  JSON.parse(stdout.split("\n").find((l) => l.startsWith(label))!.slice(label.length)) as ReadonlyArray<string>

describe("the main entry's import", () => {
  it.live("loads no MCP SDK, zod, ajv or hono until a bridge starts", () =>
    Effect.gen(function*() {
      const run = yield* runNode(["--import", "tsx", "--input-type=module", "-e", script])
      expect(run.stderr).toBe("")
      expect(run.code).toBe(0)
      expect(line(run.stdout, "after import: ")).toEqual([])
      // The bridge loads the SDK when it starts: the hook sees it, so the check above is real.
      expect(line(run.stdout, "after a bridge: ")).toContain("@modelcontextprotocol/sdk")
    }), 120_000)
})
