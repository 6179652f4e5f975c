// A module resolve hook that makes `@effect/ai` look uninstalled, as in an app without the optional peer.
export async function resolve(specifier, context, next) {
  if (specifier === "@effect/ai" || specifier.startsWith("@effect/ai/")) {
    const error = new Error(`Cannot find package '${specifier}' (hidden by test/support/hideEffectAi.mjs)`)
    error.code = "ERR_MODULE_NOT_FOUND"
    throw error
  }
  return next(specifier, context)
}
