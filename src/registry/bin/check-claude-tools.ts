#!/usr/bin/env node
/**
 * `check-claude-tools [path/to/sdk-tools.d.ts]`: compares the Claude Code catalog with the
 * installed agent SDK's typed tools; prints the drift and exits 1 when there is any (2 when the
 * check cannot run).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as ClaudeCodeCatalog from "../ClaudeCodeCatalog.ts"
import * as DriftGuard from "../DriftGuard.ts"

const sdkToolsPath = process.argv[2]

const setExitCode = (code: number) =>
  Effect.sync(() => {
    process.exitCode = code
  })

const program = DriftGuard.check(
  ClaudeCodeCatalog.registry,
  sdkToolsPath === undefined ? {} : { sdkToolsPath }
).pipe(
  Effect.flatMap((report) =>
    report.ok
      ? Console.log(DriftGuard.formatReport(report))
      : Console.error(DriftGuard.formatReport(report)).pipe(Effect.andThen(setExitCode(1)))
  ),
  Effect.catchTag(
    "DriftGuardError",
    (e) => Console.error(`check-claude-tools: ${e.message}`).pipe(Effect.andThen(setExitCode(2)))
  )
)

NodeRuntime.runMain(program.pipe(Effect.provide(NodeFileSystem.layer)), { disableErrorReporting: true })
