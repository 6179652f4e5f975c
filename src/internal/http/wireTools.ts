/**
 * What the vendor wire formats share for tools: call arguments as the object the APIs want, and
 * a name for the answer tool of `ask` that does not clash with the user's tools.
 */

/** Tool-call arguments as an object: the loop may hold them as JSON text. */
export const argumentsObject = (args: unknown): Record<string, unknown> => {
  let value = args
  if (typeof value === "string") {
    try {
      value = JSON.parse(value) as unknown
    } catch {
      return {}
    }
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
}

/** A name not in `taken`: `base`, else `base_2`, `base_3`, … */
export const uniqueName = (base: string, taken: ReadonlyArray<string>): string => {
  if (!taken.includes(base)) return base
  for (let n = 2;; n++) if (!taken.includes(`${base}_${n}`)) return `${base}_${n}`
}
