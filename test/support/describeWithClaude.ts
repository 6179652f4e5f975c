/** The `describe` of real-binary suites: kept apart from claudeCli.ts, which the benchmarks import without vitest. */
import { describe } from "@effect/vitest"
import { noClaudeBinary } from "./claudeCli.ts"

/** `describe` for real-binary tests: skipped, with the reason printed, where no binary exists. */
export const describeWithClaude = (name: string, body: () => void) => {
  if (noClaudeBinary !== undefined) console.warn(`Skipping "${name}": ${noClaudeBinary}`)
  return describe.skipIf(noClaudeBinary !== undefined)(name, body)
}
