/**
 * The `SecretFile` implementation over `effect/FileSystem` (so it runs wherever a
 * `FileSystem` layer exists), with `layer` wired to Node's file system.
 *
 * `FileSystem.makeTempFileScoped` has no mode option (its file is 0644 under the usual umask), so
 * the file is created with `wx` and an explicit 0600 inside a fresh directory, both are chmod-ed
 * explicitly (a umask can only remove bits, but a caller may have changed it to anything), and the
 * modes are read back before the path is handed out.
 *
 * @summary The `SecretFile` implementation over `effect/FileSystem`, wired to Node's file system.
 * @group Processes & files
 * @since 0.1.0
 * @module
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as os from "node:os"
import * as path from "node:path"
import { trackDirectory } from "../internal/agentCli/exitCleanup.ts"
import {
  CreateDirectory,
  InsecureMode,
  SecretFile,
  SecretFileError,
  type SecretFileService,
  Write
} from "../services/SecretFile.ts"

/**
 * Where secret files are created.
 *
 * @category config
 * @since 1.0.0
 */
export interface Options {
  /** Parent of the fresh per-secret directories. Defaults to `os.tmpdir()`. */
  readonly directory?: string
  /** Name prefix of the per-secret directories. Defaults to `"effect-chat-bridge-secret-"`. */
  readonly prefix?: string
}

const FILE_MODE = 0o600
const DIR_MODE = 0o700
const FILE_NAME = "secret"

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const checkMode = (actual: number, expected: number, what: string, path: string) =>
  (actual & 0o777) === expected
    ? Effect.void
    : Effect.fail(
      new SecretFileError({
        reason: new InsecureMode({
          path,
          mode: actual & 0o777,
          expected,
          message: `Secret ${what} has mode ${(actual & 0o777).toString(8)}, expected ${expected.toString(8)}`
        })
      })
    )

/**
 * Builds the service over the `FileSystem` in context. With `removeOnExit` (what {@link layer}
 * sets: the paths are Node's own), a directory is also removed when the process goes without
 * closing the scope: on exit, on SIGINT/SIGTERM/SIGHUP, and by a watchdog after a SIGKILL.
 *
 * @category constructors
 * @since 1.0.0
 */
export const make: (
  options?: Options,
  removeOnExit?: boolean
) => Effect.Effect<SecretFileService, never, FileSystem.FileSystem> = Effect.fnUntraced(
  function*(
    options: Options = {},
    removeOnExit = false
  ) {
    const fs = yield* FileSystem.FileSystem
    const parent = options.directory ?? os.tmpdir()
    const prefix = options.prefix ?? "effect-chat-bridge-secret-"

    const removeDirectory = (directory: string) =>
      fs.remove(directory, { recursive: true }).pipe(
        Effect.catch((error) => Effect.logWarning(`SecretFile: could not remove ${directory}: ${describe(error)}`))
      )

    // The directory is the resource: once it exists it is removed on scope close, so a failure or
    // interruption while writing the file inside it leaves nothing behind.
    const acquireDirectory = Effect.acquireRelease(
      fs.makeTempDirectory({ directory: parent, prefix }).pipe(
        Effect.mapError((error) =>
          new SecretFileError({
            reason: new CreateDirectory({
              path: parent,
              message: `Could not create a secret directory in ${parent}: ${describe(error)}`
            })
          })
        ),
        Effect.map((directory) => ({ directory, untrack: removeOnExit ? trackDirectory(directory) : () => {} }))
      ),
      ({ directory, untrack }) => Effect.ensuring(removeDirectory(directory), Effect.sync(untrack))
    )

    const writeScoped = Effect.fn("NodeSecretFile.writeScoped")(function*(contents: string) {
      const { directory } = yield* acquireDirectory
      const file = path.join(directory, FILE_NAME)
      const writeFailed = (error: unknown) =>
        new SecretFileError({
          reason: new Write({ path: file, message: `Could not write secret file ${file}: ${describe(error)}` })
        })
      yield* fs.chmod(directory, DIR_MODE).pipe(Effect.mapError(writeFailed))
      // `wx`: never follow or reuse something that appeared at this path.
      yield* fs.writeFileString(file, contents, { flag: "wx", mode: FILE_MODE }).pipe(Effect.mapError(writeFailed))
      yield* fs.chmod(file, FILE_MODE).pipe(Effect.mapError(writeFailed))
      const [directoryInfo, fileInfo] = yield* Effect.all([fs.stat(directory), fs.stat(file)]).pipe(
        Effect.mapError(writeFailed)
      )
      yield* checkMode(directoryInfo.mode, DIR_MODE, "directory", directory)
      yield* checkMode(fileInfo.mode, FILE_MODE, "file", file)
      return file
    })

    return SecretFile.of({ writeScoped })
  }
)

/**
 * The service over a `FileSystem` from context (for non-Node platforms or a custom file system).
 *
 * @category layers
 * @since 1.0.0
 */
export const layerFileSystem = (options: Options = {}): Layer.Layer<SecretFile, never, FileSystem.FileSystem> =>
  Layer.effect(SecretFile, make(options))

/**
 * The service over Node's file system. Its directories are removed even when the process goes
 * without closing the scope (exit, SIGINT/SIGTERM/SIGHUP, SIGKILL).
 *
 * @category layers
 * @since 1.0.0
 */
export const layer = (options: Options = {}): Layer.Layer<SecretFile> =>
  Layer.effect(SecretFile, make(options, true)).pipe(Layer.provide(NodeFileSystem.layer))
