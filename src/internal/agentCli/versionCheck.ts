/**
 * The oldest release an agent CLI provider runs on, checked once per client, at its first turn:
 * the version of the npm package the command resolves to (no process: Gemini CLI's `--version`
 * starts the whole CLI, ~2 s), else `<binary> --version`, compared with the provider's minimum — the release its workarounds and
 * tests were checked on. An older CLI fails the turn with a `ConfigurationError` naming both
 * versions and the upgrade command, before any run. Output without a version (a wrapper script)
 * is logged and the run goes on; a `--version` that fails says nothing, and the run reports why
 * the CLI cannot start.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as fs from "node:fs"
import * as path from "node:path"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"
import type { SubprocessError, SubprocessService } from "../../services/Subprocess.ts"
import * as CliVersion from "../claude/cliVersion.ts"

export interface Requirement {
  /** The provider name in errors. */
  readonly provider: string
  /** The CLI's name for people: `Gemini CLI`. */
  readonly name: string
  readonly minimum: string
  /** The command that installs a supported release. */
  readonly upgrade: string
  /** The npm package whose `package.json` holds the version, when the command is its bin. */
  readonly packageName?: string | undefined
}

/** How to run `<binary> --version` the way the provider runs the CLI. */
export interface VersionRun {
  readonly command: string
  readonly env: Record<string, string | undefined>
  readonly cwd: string
}

export const tooOld = (requirement: Requirement, installed: string): ProviderError =>
  new ProviderError({
    provider: requirement.provider,
    reason: new ConfigurationError({
      message: `The installed ${requirement.name} is ${installed}; this provider needs ${requirement.minimum} or ` +
        `newer. Upgrade it with \`${requirement.upgrade}\`, or point \`binary\` at a newer one.`
    })
  })

/** Whether `printed` names a release older than the minimum; none when it names no version. */
export const isOlder = (requirement: Requirement, printed: string): Option.Option<string> =>
  Option.flatMap(
    CliVersion.parse(printed),
    (version) =>
      CliVersion.compare(version, Option.getOrThrow(CliVersion.parse(requirement.minimum))) < 0
        ? Option.some(CliVersion.format(version))
        : Option.none()
  )

/** `command` as a file: itself when it names a path, else the first executable of that name on `PATH`. */
const resolveCommand = (command: string, pathVariable: string | undefined): string | undefined => {
  if (command.includes("/")) return path.resolve(command)
  for (const dir of (pathVariable ?? "").split(path.delimiter)) {
    if (dir === "") continue
    const candidate = path.join(dir, command)
    try {
      fs.accessSync(candidate, fs.constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

/**
 * The version in the `package.json` of `packageName` that holds the command's real file (npm
 * links a bin into `node_modules/.bin` or a global prefix); none for anything else, such as a
 * wrapper script.
 */
export const packageVersion = (
  command: string,
  packageName: string,
  pathVariable: string | undefined
): Option.Option<string> => {
  try {
    const file = resolveCommand(command, pathVariable)
    if (file === undefined) return Option.none()
    let dir = path.dirname(fs.realpathSync(file))
    for (let up = 0; up < 6; up++) {
      const manifest = path.join(dir, "package.json")
      if (fs.existsSync(manifest)) {
        const json = JSON.parse(fs.readFileSync(manifest, "utf8")) as {
          readonly name?: unknown
          readonly version?: unknown
        }
        if (json.name === packageName && typeof json.version === "string") return Option.some(json.version)
      }
      const parent = path.dirname(dir)
      if (parent === dir) break
      dir = parent
    }
    return Option.none()
  } catch {
    return Option.none()
  }
}

/** The check of one client: runs `--version` until it has passed once. */
export const make = (
  requirement: Requirement,
  subprocess: SubprocessService,
  run: () => VersionRun,
  fromSubprocess: (error: SubprocessError) => ProviderError
): Effect.Effect<Effect.Effect<void, ProviderError>> =>
  Effect.map(Ref.make(false), (passed) =>
    Effect.gen(function*() {
      if (yield* Ref.get(passed)) return
      const { command, cwd, env } = run()
      const packaged = requirement.packageName === undefined
        ? Option.none<string>()
        : packageVersion(command, requirement.packageName, env["PATH"] ?? process.env["PATH"])
      const printed = Option.isSome(packaged) ? packaged.value : yield* subprocess.run({
        command,
        args: ["--version"],
        env,
        cwd,
        timeout: Duration.seconds(30)
      }).pipe(
        Effect.map((result) => result.stdout),
        Effect.catchReason("SubprocessError", "Exited", () => Effect.succeed("")),
        Effect.mapError(fromSubprocess)
      )
      const older = isOlder(requirement, printed)
      if (Option.isSome(older)) return yield* Effect.fail(tooOld(requirement, older.value))
      if (Option.isNone(CliVersion.parse(printed))) {
        yield* Effect.logWarning(`${command} --version printed no version; running it as a supported release`)
      }
      yield* Ref.set(passed, true)
    }))
