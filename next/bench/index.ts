/**
 * Runs every `bench/*.bench.ts` in its own process, one after another, so one benchmark's
 * garbage and open handles cannot skew the next. Each prints ratios against a baseline it measures
 * in the same run.
 */
import { spawnSync } from "node:child_process"
import { readdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
const files = readdirSync(here)
  .filter((f) => f.endsWith(".bench.ts"))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
let failed = 0
for (const file of files) {
  console.log(`\n=== ${file} ===`)
  const r = spawnSync(process.execPath, ["--import", "tsx", join(here, file)], { stdio: "inherit" })
  if (r.status !== 0) failed++
}
process.exit(failed === 0 ? 0 : 1)
