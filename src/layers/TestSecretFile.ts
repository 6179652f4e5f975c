/**
 * An in-memory `SecretFile` for tests of code that only passes the path along: nothing touches the
 * disk, every write is recorded with whether its scope has closed yet.
 *
 * @summary An in-memory `SecretFile` that records every write, for tests.
 * @group Testing
 * @since 0.1.0
 * @module
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import { SecretFile } from "../services/SecretFile.ts"

/**
 * One recorded `writeScoped` call.
 *
 * @category testing
 * @since 1.0.0
 */
export interface Written {
  /** The (fictitious) path that was returned. */
  readonly path: string
  /** What was written. */
  readonly contents: string
  /** True once the scope that wrote it has closed. */
  readonly removed: boolean
}

/**
 * Read access to what the test `SecretFile` recorded.
 *
 * @category testing
 * @since 1.0.0
 */
export class TestSecretFile extends Context.Service<TestSecretFile, {
  /** Every write so far, oldest first. */
  readonly written: Effect.Effect<ReadonlyArray<Written>>
}>()("effect-chat-bridge/TestSecretFile") {}

/**
 * Builds the recording service and its read side.
 *
 * @category testing
 * @since 1.0.0
 */
export const make: Effect.Effect<Context.Context<SecretFile | TestSecretFile>> = Effect.gen(function*() {
  const written = yield* Ref.make<ReadonlyArray<Written>>([])
  const counter = yield* Ref.make(0)
  const markRemoved = (path: string) =>
    Ref.update(written, (all) => all.map((w) => (w.path === path ? { ...w, removed: true } : w)))
  const writeScoped = (contents: string) =>
    Effect.acquireRelease(
      Effect.gen(function*() {
        const n = yield* Ref.getAndUpdate(counter, (i) => i + 1)
        const path = `/test-secret-file/${n}/secret`
        yield* Ref.update(written, (all) => [...all, { path, contents, removed: false }])
        return path
      }),
      markRemoved
    )
  return Context.make(SecretFile, SecretFile.of({ writeScoped })).pipe(
    Context.add(TestSecretFile, { written: Ref.get(written) })
  )
})

/**
 * A fresh recording `SecretFile` plus `TestSecretFile` to inspect it.
 *
 * @category testing
 * @since 1.0.0
 */
export const layer: Layer.Layer<SecretFile | TestSecretFile> = Layer.effectContext(make)
