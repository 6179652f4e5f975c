/**
 * Options read from environment variables, under the options given in code: what an agent CLI
 * provider's `configFromEnv` returns. A variable that is not set leaves its option out (so the
 * provider's default applies), and an override left `undefined` does not hide a variable.
 */
import * as Option from "effect/Option"

export const mergeEnvOptions = <O extends object>(
  read: Record<string, Option.Option<unknown>>,
  overrides: O
): O => {
  const fromEnv: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(read)) {
    if (Option.isSome(value)) fromEnv[key] = value.value
  }
  const given = Object.fromEntries(Object.entries(overrides).filter(([, value]) => value !== undefined))
  return { ...fromEnv, ...given } as O
}
