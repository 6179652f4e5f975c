import { describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Gemini from "../../src/layers/Gemini.ts"
import { SecretKey } from "./httpProviderSupport.ts"

const env = (map: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromUnknown(map))

describe("Gemini.configFromEnv", () => {
  it.effect("reads the key and the GEMINI_* options; overrides win", () =>
    Effect.gen(function*() {
      const options = yield* Gemini.configFromEnv({ maxSteps: 3 }).pipe(
        Effect.provide(env({ GEMINI_API_KEY: SecretKey, GEMINI_MODEL: "gemini-env", GEMINI_MAX_STEPS: "9" }))
      )
      expect(Redacted.value(options.apiKey)).toBe(SecretKey)
      expect(options).toMatchObject({ model: "gemini-env", maxSteps: 3 })
    }))

  it.effect("without GEMINI_API_KEY it is a ConfigError naming the variable", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Gemini.configFromEnv().pipe(Effect.provide(env({ GEMINI_MODEL: "m" }))))
      expect(error._tag).toBe("ConfigError")
      expect(String(error)).toContain("GEMINI_API_KEY")
    }))
})
