import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as PlatformError from "effect/PlatformError"
import * as Ref from "effect/Ref"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeSecretFile from "../../src/layers/NodeSecretFile.ts"
import * as TestSecretFile from "../../src/layers/TestSecretFile.ts"
import * as SecretFile from "../../src/services/SecretFile.ts"

/** A fresh folder for the test, removed when its scope closes. */
const testFolder = Effect.acquireRelease(
  Effect.sync(() => nodeFs.mkdtempSync(path.join(os.tmpdir(), "secret-file-test-"))),
  (dir) => Effect.sync(() => nodeFs.rmSync(dir, { recursive: true, force: true }))
)

/** Runs with the process umask set to `mask`, restoring the previous one afterwards. */
const withUmask = (mask: number) =>
  Effect.acquireRelease(
    Effect.sync(() => process.umask(mask)),
    (previous) => Effect.sync(() => process.umask(previous))
  )

const mode = (p: string) => nodeFs.statSync(p).mode & 0o777
const exists = (p: string) => nodeFs.existsSync(p)

const writeIn = (directory: string, contents: string) =>
  SecretFile.writeScoped(contents).pipe(Effect.provide(NodeSecretFile.layer({ directory })))

describe("NodeSecretFile", () => {
  it.effect("writes the exact contents to a 0600 file in a fresh 0700 directory, even with umask 0", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      yield* withUmask(0o000)
      const contents = "{\"token\":\"s3cr3t\"}\nline two ✓ ünïcödé\n"
      const file = yield* Effect.scoped(
        Effect.gen(function*() {
          const file = yield* writeIn(folder, contents)
          assert.strictEqual(mode(file), 0o600)
          assert.strictEqual(mode(path.dirname(file)), 0o700)
          assert.strictEqual(path.dirname(path.dirname(file)), folder)
          assert.strictEqual(nodeFs.readFileSync(file, "utf8"), contents)
          return file
        })
      )
      assert.isFalse(exists(file), "file removed after scope")
      assert.isFalse(exists(path.dirname(file)), "directory removed after scope")
      assert.deepStrictEqual(nodeFs.readdirSync(folder), [])
    }))

  it.effect("two writes get two different directories", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const [a, b] = yield* Effect.scoped(Effect.all([writeIn(folder, "a"), writeIn(folder, "b")]))
      assert.notStrictEqual(path.dirname(a), path.dirname(b))
      assert.deepStrictEqual(nodeFs.readdirSync(folder), [])
    }))

  it.effect("removes the file and directory when the scope fails", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const seen = yield* Ref.make("")
      const exit = yield* Effect.exit(
        Effect.scoped(
          Effect.gen(function*() {
            const file = yield* writeIn(folder, "secret")
            yield* Ref.set(seen, file)
            assert.isTrue(exists(file))
            return yield* Effect.fail("boom" as const)
          })
        )
      )
      assert.deepStrictEqual(exit, Exit.fail("boom" as const))
      const file = yield* Ref.get(seen)
      assert.notStrictEqual(file, "")
      assert.isFalse(exists(file))
      assert.deepStrictEqual(nodeFs.readdirSync(folder), [])
    }))

  it.effect("removes the file and directory when the fiber is interrupted", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const written = yield* Deferred.make<string>()
      const fiber = yield* Effect.forkChild(
        Effect.scoped(
          Effect.gen(function*() {
            const file = yield* writeIn(folder, "secret")
            yield* Deferred.succeed(written, file)
            return yield* Effect.never
          })
        )
      )
      const file = yield* Deferred.await(written)
      assert.isTrue(exists(file))
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(Exit.hasInterrupts(exit))
      assert.isFalse(exists(file))
      assert.deepStrictEqual(nodeFs.readdirSync(folder), [])
    }))

  it.effect("a missing parent directory is a typed CreateDirectory error", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const error = yield* Effect.flip(Effect.scoped(writeIn(path.join(folder, "does-not-exist"), "x")))
      assert.strictEqual(error._tag, "SecretFileError")
      assert.strictEqual(error.reason._tag, "CreateDirectory")
      assert.strictEqual(error.isRetryable, false)
      assert.include(error.message, "does-not-exist")
    }))

  it.effect("a removal failure is logged, not raised over the result", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const messages = yield* Ref.make<ReadonlyArray<string>>([])
      const logger = Logger.make(({ message }) => {
        Effect.runSync(Ref.update(messages, (all) => [...all, String(message)]))
      })
      const failingRemove = Layer.effect(
        FileSystem.FileSystem,
        Effect.map(FileSystem.FileSystem, (fs) => ({
          ...fs,
          remove: (p: string) =>
            Effect.fail(
              PlatformError.systemError({
                _tag: "PermissionDenied",
                module: "FileSystem",
                method: "remove",
                pathOrDescriptor: p
              })
            )
        }))
      ).pipe(Layer.provide(NodeFileSystem.layer))
      const file = yield* Effect.scoped(SecretFile.writeScoped("kept")).pipe(
        Effect.provide(NodeSecretFile.layerFileSystem({ directory: folder }).pipe(Layer.provide(failingRemove))),
        Effect.provide(Logger.layer([logger]))
      )
      assert.strictEqual(nodeFs.readFileSync(file, "utf8"), "kept")
      const logged = yield* Ref.get(messages)
      assert.isTrue(
        logged.some((m) => m.includes("could not remove") && m.includes(path.dirname(file))),
        logged.join("\n")
      )
      assert.isFalse(logged.some((m) => m.includes("kept")), "contents never logged")
    }))
})

describe("TestSecretFile", () => {
  it.effect("records writes and marks them removed when their scope closes", () =>
    Effect.gen(function*() {
      const recorder = yield* TestSecretFile.TestSecretFile
      const inside = yield* Effect.scoped(
        Effect.gen(function*() {
          const p = yield* SecretFile.writeScoped("one")
          return { p, during: yield* recorder.written }
        })
      )
      assert.deepStrictEqual(inside.during, [{ path: inside.p, contents: "one", removed: false }])
      assert.deepStrictEqual(yield* recorder.written, [{ path: inside.p, contents: "one", removed: true }])
      assert.isFalse(exists(inside.p))
    }).pipe(Effect.provide(TestSecretFile.layer)))
})

describe("NodeSecretFile on a file system that does not honour the modes", () => {
  /** Node's file system, with `change` applied to it. */
  const patched = (change: (fs: FileSystem.FileSystem) => Partial<FileSystem.FileSystem>) =>
    Layer.effect(FileSystem.FileSystem, Effect.map(FileSystem.FileSystem, (fs) => ({ ...fs, ...change(fs) }))).pipe(
      Layer.provide(NodeFileSystem.layer)
    )

  /** A stat that reports `mode` for paths accepted by `which` (as a mount ignoring chmod would). */
  const reporting = (which: (p: string) => boolean, mode: number) =>
    patched((fs) => ({
      stat: (p: string) => Effect.map(fs.stat(p), (info) => (which(p) ? { ...info, mode } : info))
    }))

  const writeWith = (folder: string, fsLayer: Layer.Layer<FileSystem.FileSystem>) =>
    Effect.flip(Effect.scoped(SecretFile.writeScoped("s3cret"))).pipe(
      Effect.provide(NodeSecretFile.layerFileSystem({ directory: folder, prefix: "p-" }).pipe(Layer.provide(fsLayer)))
    )

  it.effect("a file readable by others is refused (InsecureMode) and removed with its directory", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const error = yield* writeWith(folder, reporting((p) => p.endsWith("/secret"), 0o100644))
      assert.strictEqual(error.reason._tag, "InsecureMode")
      assert.strictEqual(error.message, "Secret file has mode 644, expected 600")
      assert.deepInclude(error.reason, { mode: 0o644, expected: 0o600 })
      assert.match(error.reason._tag === "InsecureMode" ? error.reason.path : "", /p-[^/]+\/secret$/)
      assert.deepStrictEqual(nodeFs.readdirSync(folder), [])
    }))

  it.effect("a directory open to others is refused before the file is trusted", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const error = yield* writeWith(folder, reporting((p) => !p.endsWith("/secret"), 0o40755))
      assert.strictEqual(error.reason._tag, "InsecureMode")
      assert.include(error.message, "directory has mode 755")
      assert.deepStrictEqual(nodeFs.readdirSync(folder), [])
    }))

  it.effect("a failing chmod is a typed Write error naming the file; nothing is left behind", () =>
    Effect.gen(function*() {
      const folder = yield* testFolder
      const error = yield* writeWith(
        folder,
        patched((fs) => ({
          chmod: (p: string, mode: number) =>
            p.endsWith("/secret")
              ? Effect.fail(
                PlatformError.systemError({
                  _tag: "PermissionDenied",
                  module: "FileSystem",
                  method: "chmod",
                  pathOrDescriptor: p
                })
              )
              : fs.chmod(p, mode)
        }))
      )
      assert.strictEqual(error.reason._tag, "Write")
      assert.match(error.message, /^Could not write secret file .*p-[^/]+\/secret: /)
      assert.deepStrictEqual(nodeFs.readdirSync(folder), [])
    }))
})

describe("TestSecretFile scopes", () => {
  it.effect("closing one write's scope marks only that write removed", () =>
    Effect.gen(function*() {
      const recorder = yield* TestSecretFile.TestSecretFile
      const first = yield* Effect.scoped(SecretFile.writeScoped("one"))
      const second = yield* SecretFile.writeScoped("two")
      assert.notStrictEqual(first, second)
      assert.deepStrictEqual(yield* recorder.written, [
        { path: first, contents: "one", removed: true },
        { path: second, contents: "two", removed: false }
      ])
    }).pipe(Effect.provide(TestSecretFile.layer)))
})
