/**
 * Import time of the main entry as a user's app pays it: `src/index.ts` bundled by esbuild with its
 * packages left external (what `dist/` amounts to), imported by plain `node` in a fresh process per
 * sample, against importing `effect`'s barrel alone (the target: at most 1.2× it) and with
 * `@effect/platform-node`'s HTTP client, the same way — the ratios say what this library adds on
 * top of what an Effect app loads anyway. The MCP SDK (with zod, ajv, hono) is loaded only when a
 * bridge starts, so it is not part of the number.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { median } from "./util.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const work = mkdtempSync(join(tmpdir(), "ecb-import-bench-"))

/** Milliseconds one fresh `node` spends in `import(specifiers…)`, measured inside it. */
const importMillis = (specifiers: ReadonlyArray<string>): number => {
  const script = `const t = performance.now(); ${
    specifiers.map((s) => `await import(${JSON.stringify(s)});`).join(" ")
  } console.log(performance.now() - t)`
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: root, encoding: "utf8" })
  return Number(out.trim().split("\n").at(-1))
}

try {
  const bundle = join(work, "index.mjs")
  execFileSync(join(root, "node_modules/.bin/esbuild"), [
    join(root, "src/index.ts"),
    "--bundle",
    "--platform=node",
    "--format=esm",
    "--packages=external",
    "--log-level=warning",
    `--outfile=${bundle}`
  ])
  // Resolve the bundle's bare imports from the repository's node_modules.
  const entry = join(root, ".import-bench.mjs")
  execFileSync("cp", [bundle, entry])
  try {
    const rounds = 9
    const main: Array<number> = []
    const effectAlone: Array<number> = []
    const withHttp: Array<number> = []
    // Interleaved, so a change in the machine's load hits all three alike.
    for (let i = 0; i < rounds; i++) {
      effectAlone.push(importMillis(["effect"]))
      withHttp.push(importMillis(["effect", "@effect/platform-node/NodeHttpClient"]))
      main.push(importMillis([pathToFileURL(entry).href]))
    }
    const m = median(main)
    const e = median(effectAlone)
    const h = median(withHttp)
    console.log(
      `import of the main entry: ${m.toFixed(0)} ms vs effect alone ${e.toFixed(0)} ms → ratio ${
        (m / e).toFixed(2)
      }× (target ≤ 1.2×); vs effect + NodeHttpClient ${h.toFixed(0)} ms → ratio ${
        (m / h).toFixed(2)
      }× (median of ${rounds} fresh node processes each)`
    )
  } finally {
    rmSync(entry, { force: true })
  }
} finally {
  rmSync(work, { recursive: true, force: true })
}
