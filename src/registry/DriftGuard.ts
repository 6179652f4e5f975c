/**
 * Keeps the hand-written catalog honest against the installed agent SDK: parses the
 * `ToolInputSchemas` and `ToolOutputSchemas` unions of its `sdk-tools.d.ts` with the TypeScript
 * compiler API and reports SDK tools the registry lacks (in either union) and `sdkTyped` entries
 * the input union no longer has. (Removals are also caught at compile time by `SdkCoverage`.)
 * `typescript` is loaded lazily, only when a check runs.
 *
 * @summary Checks the Claude Code catalog against the installed Agent SDK's typed tool list.
 * @group Claude Code tool policy
 * @since 0.1.0
 * @module
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { createRequire } from "node:module"
import * as NodePath from "node:path"
import type * as TS from "typescript"
import type * as Registry from "./Registry.ts"

/**
 * A check could not run: the file is missing, unreadable, or has no `ToolInputSchemas` union.
 *
 * @category errors
 * @since 1.0.0
 */
export class DriftGuardError extends Schema.TaggedError<DriftGuardError>()("DriftGuardError", {
  /** What could not be loaded or parsed. */
  message: Schema.String
}) {}

/**
 * SDK interface name → runtime tool name, where dropping `Input` is not the runtime name. The
 * last five follow the CLI's own legacy-name map and the SDK's `BUILTIN_TOOL_NAMES`.
 *
 * @category models
 * @since 1.0.0
 */
export const aliases: Readonly<Record<string, string>> = {
  FileEditInput: "Edit",
  FileReadInput: "Read",
  FileWriteInput: "Write",
  ListMcpResourcesInput: "ListMcpResourcesTool",
  ReadMcpResourceInput: "ReadMcpResourceTool",
  ReadMcpResourceDirInput: "ReadMcpResourceDirTool",
  ProposeGoalInput: "SetGoal",
  ProposeSkillsInput: "propose_skills"
}

/**
 * Union members that are not tools: the generic MCP input and output, and the output union.
 *
 * @category models
 * @since 1.0.0
 */
export const skipped: ReadonlyArray<string> = ["McpInput", "McpOutput", "ToolOutputSchemas"]

/**
 * Runtime tool name of an SDK interface name, input (`FileEditInput`) or output (`FileEditOutput`,
 * `BashOutput` — Bash's output, not the legacy `BashOutput` tool).
 *
 * @category utils
 * @since 1.0.0
 */
export const toolNameOf = (member: string): string => {
  const input = member.endsWith("Output") ? `${member.slice(0, -"Output".length)}Input` : member
  return aliases[input] ?? input.replace(/Input$/, "")
}

/**
 * Result of a check.
 *
 * @category models
 * @since 1.0.0
 */
export interface DriftReport {
  /** Tool names in the SDK's input union, sorted. */
  readonly sdkTools: ReadonlyArray<string>
  /** Tool names in the SDK's output union, sorted (a tool may have no output type). */
  readonly outputTools: ReadonlyArray<string>
  /** In the SDK's input or output union, not an `sdkTyped` registry entry. */
  readonly missing: ReadonlyArray<string>
  /** An `sdkTyped` registry entry the SDK no longer has. */
  readonly stale: ReadonlyArray<string>
  /** True when nothing is missing and nothing is stale. */
  readonly ok: boolean
}

type TypeScript = typeof TS

const loadTypeScript = Effect.tryPromise({
  try: async (): Promise<TypeScript> => {
    const mod = (await import("typescript")) as TypeScript & { readonly default?: TypeScript }
    return mod.default ?? mod
  },
  catch: (cause) =>
    new DriftGuardError({
      message: "the drift guard needs the optional peer `typescript` (~5.9; TypeScript 7 has no compiler API): " +
        `npm install -D typescript@~5.9 (${String(cause)})`
    })
})

/**
 * The member names of `export type ToolInputSchemas = A | B | …` in `source`, in order.
 *
 * @category utils
 * @since 1.0.0
 */
export const parseToolInputSchemas = (
  ts: TypeScript,
  source: string,
  fileName = "sdk-tools.d.ts"
): Result.Result<ReadonlyArray<string>, DriftGuardError> => parseUnion(ts, source, fileName, "ToolInputSchemas")

/**
 * The member names of `export type ToolOutputSchemas = A | B | …` in `source`, in order.
 *
 * @category utils
 * @since 1.0.0
 */
export const parseToolOutputSchemas = (
  ts: TypeScript,
  source: string,
  fileName = "sdk-tools.d.ts"
): Result.Result<ReadonlyArray<string>, DriftGuardError> => parseUnion(ts, source, fileName, "ToolOutputSchemas")

const parseUnion = (
  ts: TypeScript,
  source: string,
  fileName: string,
  typeName: string
): Result.Result<ReadonlyArray<string>, DriftGuardError> => {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS)
  for (const statement of file.statements) {
    if (!ts.isTypeAliasDeclaration(statement) || statement.name.text !== typeName) continue
    const members = ts.isUnionTypeNode(statement.type) ? statement.type.types : [statement.type]
    const names: Array<string> = []
    for (const member of members) {
      if (!ts.isTypeReferenceNode(member) || !ts.isIdentifier(member.typeName)) {
        return Result.fail(
          new DriftGuardError({ message: `${fileName}: unexpected ${typeName} member ${member.getText(file)}` })
        )
      }
      names.push(member.typeName.text)
    }
    return Result.succeed(names)
  }
  return Result.fail(new DriftGuardError({ message: `${fileName}: no \`type ${typeName}\` found` }))
}

/**
 * Compares SDK interface names with the registry: `members` of the input union, `outputMembers`
 * of the output union (a tool with only an output type is missing too).
 *
 * @category utils
 * @since 1.0.0
 */
export const diff = (
  registry: Registry.Registry,
  members: ReadonlyArray<string>,
  outputMembers: ReadonlyArray<string> = []
): DriftReport => {
  const sdk = new Set(members.filter((m) => !skipped.includes(m)).map(toolNameOf))
  const output = new Set(outputMembers.filter((m) => !skipped.includes(m)).map(toolNameOf))
  const typed = new Set(registry.descriptors.filter((d) => d.kind === "sdk" && d.sdkTyped === true).map((d) => d.name))
  const missing = [...new Set([...sdk, ...output])].filter((n) => !typed.has(n)).sort()
  const stale = [...typed].filter((n) => !sdk.has(n)).sort()
  return {
    sdkTools: [...sdk].sort(),
    outputTools: [...output].sort(),
    missing,
    stale,
    ok: missing.length === 0 && stale.length === 0
  }
}

/**
 * Path of the installed agent SDK's `sdk-tools.d.ts`.
 *
 * @category utils
 * @since 1.0.0
 */
export const locateSdkTools: Effect.Effect<string, DriftGuardError> = Effect.try({
  try: () => {
    const main = createRequire(import.meta.url).resolve("@anthropic-ai/claude-agent-sdk")
    return NodePath.join(NodePath.dirname(main), "sdk-tools.d.ts")
  },
  catch: (cause) =>
    new DriftGuardError({
      message: "the drift guard reads the tool list of the optional peer `@anthropic-ai/claude-agent-sdk`: " +
        `npm install -D @anthropic-ai/claude-agent-sdk@0.3.335, or pass the path of an sdk-tools.d.ts (${
          String(cause)
        })`
    })
})

/**
 * Checks `registry` against a `sdk-tools.d.ts` (by default the installed SDK's).
 *
 * @category utils
 * @since 1.0.0
 */
export const check: (
  registry: Registry.Registry,
  options?: { readonly sdkToolsPath?: string }
) => Effect.Effect<DriftReport, DriftGuardError, FileSystem.FileSystem> = Effect.fn("DriftGuard.check")(
  function*(registry: Registry.Registry, options?: { readonly sdkToolsPath?: string }) {
    const fs = yield* FileSystem.FileSystem
    const path = options?.sdkToolsPath ?? (yield* locateSdkTools)
    const source = yield* fs.readFileString(path).pipe(
      Effect.mapError((e) => new DriftGuardError({ message: `cannot read ${path}: ${e.message}` }))
    )
    const ts = yield* loadTypeScript
    const members = yield* Effect.fromResult(parseToolInputSchemas(ts, source, path))
    const outputs = yield* Effect.fromResult(parseToolOutputSchemas(ts, source, path))
    return diff(registry, members, outputs)
  }
)

/**
 * Human-readable report, one finding a line.
 *
 * @category utils
 * @since 1.0.0
 */
export const formatReport = (report: DriftReport): string =>
  report.ok
    ? `claude-agent-sdk tools: ${report.sdkTools.length} typed tools (${report.outputTools.length} with an output type), registry in sync`
    : [
      ...report.missing.map((n) => `missing: SDK tool ${n} has no sdkTyped registry entry — classify it`),
      ...report.stale.map((n) => `stale: registry entry ${n} is sdkTyped but the SDK no longer has it`)
    ].join("\n")
