// `node --import ./test/support/withoutEffectAi.mjs`: run with `@effect/ai` unresolvable.
import { register } from "node:module"

register("./hideEffectAi.mjs", import.meta.url)
