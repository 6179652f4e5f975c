/**
 * Keeps the Gemini CLI catalog honest against the installed `@google/gemini-cli`: reads the
 * `ALL_BUILTIN_TOOL_NAMES` list out of its JavaScript bundle (resolving each `*_TOOL_NAME`
 * constant to its string) and reports built-ins the catalog lacks and catalog entries the CLI no
 * longer has. The bundle is plain text; nothing of it is loaded or run.
 *
 * @summary Checks the Gemini CLI catalog against the installed CLI's built-in tool list.
 * @group Claude Code tool policy
 * @since 2.2.0
 * @module
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Result from "effect/Result"
import { createRequire } from "node:module"
import * as NodePath from "node:path"
import { DriftGuardError } from "./DriftGuard.ts"
import type * as Registry from "./Registry.ts"

/**
 * Result of a check.
 *
 * @category models
 * @since 2.2.0
 */
export interface GeminiDriftReport {
  /** The CLI's version (its `package.json`), when read from an installed package. */
  readonly version: string | undefined
  /** The CLI's built-in tool names, sorted. */
  readonly cliTools: ReadonlyArray<string>
  /** A CLI built-in with no catalog entry. */
  readonly missing: ReadonlyArray<string>
  /** A catalog built-in the CLI no longer has. */
  readonly stale: ReadonlyArray<string>
  /** True when nothing is missing and nothing is stale. */
  readonly ok: boolean
}

const listStart = "var ALL_BUILTIN_TOOL_NAMES = ["

/**
 * The names in `var ALL_BUILTIN_TOOL_NAMES = [A_TOOL_NAME, "literal", …]` of a bundle chunk, each
 * constant resolved through its `var A_TOOL_NAME = "…"`; `undefined` when the chunk has no list.
 *
 * @category utils
 * @since 2.2.0
 */
export const parseBuiltinNames = (
  source: string,
  fileName = "bundle"
): Result.Result<ReadonlyArray<string> | undefined, DriftGuardError> => {
  const start = source.indexOf(listStart)
  if (start < 0) return Result.succeed(undefined)
  const end = source.indexOf("]", start + listStart.length)
  if (end < 0) return Result.fail(new DriftGuardError({ message: `${fileName}: ALL_BUILTIN_TOOL_NAMES is not closed` }))
  const names: Array<string> = []
  for (const raw of source.slice(start + listStart.length, end).split(",")) {
    const item = raw.replace(/\/\/.*$/gm, "").trim()
    if (item === "") continue
    const literal = /^"([^"]+)"$/.exec(item)
    if (literal !== null) {
      names.push(literal[1]!)
      continue
    }
    if (!/^[A-Za-z_$][\w$]*$/.test(item)) {
      return Result.fail(new DriftGuardError({ message: `${fileName}: unexpected list member ${item.slice(0, 80)}` }))
    }
    // Bundlers rename clashing constants (`X2`); the first declaration before the list is the one in scope.
    const declaration = new RegExp(`\\bvar ${item.replace(/\$/g, "\\$")} = "([^"]+)";`).exec(source.slice(0, start))
    if (declaration === null) {
      return Result.fail(new DriftGuardError({ message: `${fileName}: no string constant ${item}` }))
    }
    names.push(declaration[1]!)
  }
  return Result.succeed(names)
}

/**
 * Compares the CLI's built-in names with the registry's built-ins (`kind: "sdk"`).
 *
 * @category utils
 * @since 2.2.0
 */
export const diff = (
  registry: Registry.Registry,
  cliTools: ReadonlyArray<string>,
  version?: string
): GeminiDriftReport => {
  const cli = new Set(cliTools)
  const known = new Set(registry.descriptors.filter((d) => d.kind === "sdk").map((d) => d.name))
  const missing = [...cli].filter((n) => !known.has(n)).sort()
  const stale = [...known].filter((n) => !cli.has(n)).sort()
  return { version, cliTools: [...cli].sort(), missing, stale, ok: missing.length === 0 && stale.length === 0 }
}

/**
 * The installed `@google/gemini-cli`'s package directory.
 *
 * @category utils
 * @since 2.2.0
 */
export const locatePackage: Effect.Effect<string, DriftGuardError> = Effect.try({
  try: () => NodePath.dirname(createRequire(import.meta.url).resolve("@google/gemini-cli/package.json")),
  catch: (cause) =>
    new DriftGuardError({
      message: "the Gemini drift guard reads the tool list of `@google/gemini-cli`: " +
        `npm install -D @google/gemini-cli@0.61.0, or pass its package directory (${String(cause)})`
    })
})

/**
 * Checks `registry` against a Gemini CLI package directory (by default the installed one's):
 * every bundle chunk that declares `ALL_BUILTIN_TOOL_NAMES` is read, and they must agree.
 *
 * @category utils
 * @since 2.2.0
 */
export const check: (
  registry: Registry.Registry,
  options?: { readonly packageDir?: string }
) => Effect.Effect<GeminiDriftReport, DriftGuardError, FileSystem.FileSystem> = Effect.fn("GeminiDriftGuard.check")(
  function*(registry: Registry.Registry, options?: { readonly packageDir?: string }) {
    const fs = yield* FileSystem.FileSystem
    const dir = options?.packageDir ?? (yield* locatePackage)
    const fail = (what: string) => (e: { readonly message: string }) =>
      new DriftGuardError({ message: `cannot read ${what}: ${e.message}` })
    const pkg = yield* fs.readFileString(NodePath.join(dir, "package.json")).pipe(Effect.mapError(fail(dir)))
    const version = (JSON.parse(pkg) as { readonly version?: string }).version
    const bundle = NodePath.join(dir, "bundle")
    const files = (yield* fs.readDirectory(bundle).pipe(Effect.mapError(fail(bundle)))).filter((f) => f.endsWith(".js"))
    const lists: Array<readonly [string, ReadonlyArray<string>]> = []
    for (const file of files.sort()) {
      const source = yield* fs.readFileString(NodePath.join(bundle, file)).pipe(Effect.mapError(fail(file)))
      const names = yield* Effect.fromResult(parseBuiltinNames(source, file))
      if (names !== undefined) lists.push([file, names])
    }
    if (lists.length === 0) {
      return yield* new DriftGuardError({ message: `${bundle}: no chunk declares ALL_BUILTIN_TOOL_NAMES` })
    }
    const [first, names] = lists[0]!
    const other = lists.find(([, n]) => [...n].sort().join() !== [...names].sort().join())
    if (other !== undefined) {
      return yield* new DriftGuardError({
        message: `${first} and ${other[0]} disagree on ALL_BUILTIN_TOOL_NAMES: ${names.join()} vs ${other[1].join()}`
      })
    }
    return diff(registry, names, version)
  }
)

/**
 * Human-readable report, one finding a line.
 *
 * @category utils
 * @since 2.2.0
 */
export const formatReport = (report: GeminiDriftReport): string =>
  report.ok
    ? `gemini-cli ${report.version ?? ""} tools: ${report.cliTools.length} built-ins, catalog in sync`
    : [
      ...report.missing.map((n) => `missing: Gemini CLI built-in ${n} has no catalog entry — classify it`),
      ...report.stale.map((n) => `stale: catalog entry ${n} is not a built-in of the installed Gemini CLI`)
    ].join("\n")
