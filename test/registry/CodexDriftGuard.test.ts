/**
 * CodexDriftGuard.check on stand-in CLIs (real child processes: small Node scripts): the tools a
 * probe's requests carry are compared with the catalog, the features list is read, what the probe's
 * MCP server answers is what a client needs to mount it, and every way a CLI can fail the check is a
 * `DriftGuardError` that says which step failed. The real `@openai/codex` is checked in
 * `CodexCliCatalog.test.ts`.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as CodexCliCatalog from "../../src/registry/CodexCliCatalog.ts"
import * as CodexDriftGuard from "../../src/registry/CodexDriftGuard.ts"

type Mode = "probe" | "silent" | "fails" | "killed"

/**
 * A stand-in `codex` (`.js`, so the guard runs it with this Node): `--version`, `features list`, and
 * `exec` runs that talk to the probe as a CLI would, logging what the probe's MCP endpoint answered.
 */
const standIn = (mode: Mode) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const box = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-drift-"))
      const log = path.join(box, "mcp.jsonl")
      const binary = path.join(box, "codex.js")
      fs.writeFileSync(
        binary,
        `const fs = require("node:fs")
const MODE = ${JSON.stringify(mode)}
const LOG = ${JSON.stringify(log)}
const args = process.argv.slice(2)
const main = async () => {
  if (args[0] === "--version") {
    if (MODE === "fails") { process.stderr.write("boom: config unreadable\\n"); process.exit(3) }
    if (MODE === "killed") process.kill(process.pid, "SIGKILL")
    console.log("codex-cli 9.9.9")
    return
  }
  if (args[0] === "features") {
    console.log("apps       stable     true\\nplugins    removed    false\\nnot a feature line")
    return
  }
  if (MODE === "silent") return
  const provider = args.find((a) => a.startsWith("model_providers.probe="))
  const root = /base_url="([^"]+)\\/v1"/.exec(provider)[1]
  const send = async (method, where, body) => {
    const res = await fetch(root + where, { method, headers: { "content-type": "application/json" }, body })
    const text = await res.text()
    const json = (res.headers.get("content-type") ?? "").includes("json")
    return { status: res.status, body: text === "" ? undefined : json ? JSON.parse(text) : text }
  }
  const rpc = (message) => send("POST", "/mcp", JSON.stringify({ jsonrpc: "2.0", ...message }))
  const seen = {
    initialize: await rpc({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18" } }),
    bareInitialize: await rpc({ id: 2, method: "initialize" }),
    notification: await rpc({ method: "notifications/initialized" }),
    tools: await rpc({ id: 3, method: "tools/list", params: {} }),
    resources: await rpc({ id: 4, method: "resources/list" }),
    templates: await rpc({ id: 5, method: "resources/templates/list" }),
    ping: await rpc({ id: 6, method: "ping" }),
    get: await send("GET", "/mcp"),
    garbage: await send("POST", "/mcp", "{ not json")
  }
  fs.appendFileSync(LOG, JSON.stringify(seen) + "\\n")
  const enabled = args.flatMap((a, i) => (args[i - 1] === "--enable" ? [a] : []))
  const tools = [
    { type: "function", name: "exec_command" },
    { type: "web_search" },
    { type: "namespace", name: "mcp__probe", tools: [{ type: "function", name: "not_a_builtin" }] },
    ...enabled.map((name) => ({ type: "function", name: "tool_of_" + name }))
  ]
  const answer = await send("POST", "/v1/responses", JSON.stringify({ model: "m", tools }))
  // The probe answers "ok" as a Responses stream.
  if (answer.status !== 200 || !answer.body.includes('"text":"ok"')) process.exit(1)
}
main().catch((e) => { console.error(String(e)); process.exit(1) })
`
      )
      const answers = () =>
        fs.readFileSync(log, "utf8").trim().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>)
      return { box, binary, answers }
    }),
    ({ box }) => Effect.sync(() => fs.rmSync(box, { recursive: true, force: true }))
  )

const check = (binary: string, probes?: ReadonlyArray<CodexDriftGuard.Probe>) =>
  CodexDriftGuard.check(CodexCliCatalog.registry, { binary, ...(probes === undefined ? {} : { probes }) }).pipe(
    Effect.provide(NodeFileSystem.layer)
  )

/** Every feature the catalog names. */
const catalogFeatures = new Set([
  ...CodexCliCatalog.alwaysDisabledFeatures,
  ...Object.values(CodexCliCatalog.controls).flatMap((c) => c?.features ?? [])
])

const sdkNames = CodexCliCatalog.registry.descriptors.filter((d) => d.kind === "sdk").map((d) => d.name)

describe("CodexDriftGuard.check on stand-in CLIs", () => {
  it.live("unions the probes' tools, leaves MCP servers' tools out, and reports every drift", () =>
    Effect.gen(function*() {
      const cli = yield* standIn("probe")
      const report = yield* check(cli.binary, [
        { label: "one", args: ["-c", "model=\"x\""] },
        { label: "two", args: ["--enable", "goals"] }
      ])
      expect(report.version).toBe("9.9.9")
      expect(report.cliTools).toEqual(["exec_command", "tool_of_goals", "web_search"].sort())
      expect(report.missing).toEqual(["tool_of_goals"])
      expect(report.stale).toEqual(sdkNames.filter((n) => n !== "exec_command" && n !== "web_search").sort())
      expect(report.unknownFeatures).toEqual([...catalogFeatures].filter((f) => f !== "apps").sort())
      expect(report.ok).toBe(false)
      const lines = CodexDriftGuard.formatReport(report).split("\n")
      expect(lines).toContain("missing: Codex CLI built-in tool_of_goals has no catalog entry — classify it")
      expect(lines).toContain("feature: plugins is not a feature of the installed Codex CLI")
      // What the probe's MCP endpoint answered, on each run.
      const answers = cli.answers()
      expect(answers).toHaveLength(2)
      expect(answers[0]).toEqual({
        initialize: {
          status: 200,
          body: {
            jsonrpc: "2.0",
            id: 1,
            result: {
              protocolVersion: "2025-06-18",
              capabilities: { tools: {}, resources: {} },
              serverInfo: { name: "probe", version: "0" }
            }
          }
        },
        bareInitialize: {
          status: 200,
          body: {
            jsonrpc: "2.0",
            id: 2,
            result: { capabilities: { tools: {}, resources: {} }, serverInfo: { name: "probe", version: "0" } }
          }
        },
        notification: { status: 202 },
        tools: { status: 200, body: { jsonrpc: "2.0", id: 3, result: { tools: [] } } },
        resources: { status: 200, body: { jsonrpc: "2.0", id: 4, result: { resources: [] } } },
        templates: { status: 200, body: { jsonrpc: "2.0", id: 5, result: { resourceTemplates: [] } } },
        ping: { status: 200, body: { jsonrpc: "2.0", id: 6, result: {} } },
        get: { status: 405 },
        garbage: { status: 202 }
      })
    }))

  it.live("a run that sends the model no request fails the check, naming the probe", () =>
    Effect.gen(function*() {
      const cli = yield* standIn("silent")
      const error = yield* Effect.flip(check(cli.binary, [{ label: "quiet", args: [] }]))
      expect(error._tag).toBe("DriftGuardError")
      expect(error.message).toBe("probe quiet: the CLI sent no request")
    }))

  it.live("a CLI that exits non-zero, is killed, or cannot start fails with the step and what it said", () =>
    Effect.gen(function*() {
      const failing = yield* standIn("fails")
      expect((yield* Effect.flip(check(failing.binary))).message).toBe(
        "codex --version: exited with 3: boom: config unreadable"
      )
      const killed = yield* standIn("killed")
      expect((yield* Effect.flip(check(killed.binary))).message).toBe("codex --version: exited with SIGKILL: ")
      const missing = path.join(failing.box, "no-such-codex")
      const absent = yield* Effect.flip(check(missing))
      expect(absent.message).toContain("codex --version: ")
      expect(absent.message).toContain("ENOENT")
    }))
})

describe("CodexDriftGuard pure parts", () => {
  it("skips tools that are not objects, namespaces without children, and tools with neither name nor type", () => {
    expect(CodexDriftGuard.toolNamesOfRequest({ tools: "none" })).toEqual([])
    expect(CodexDriftGuard.toolNamesOfRequest(null)).toEqual([])
    expect(
      CodexDriftGuard.toolNamesOfRequest({
        tools: [
          "shell",
          null,
          { type: "namespace", name: "collab" },
          { type: "namespace", tools: [{ name: "spawn_agent" }, { type: 3 }] },
          { description: "nameless" },
          { type: "image_generation" }
        ]
      })
    ).toEqual(["image_generation", "spawn_agent"])
  })

  it("a registry in sync with the CLI's tools and features is ok, with or without a version", () => {
    const inSync = CodexDriftGuard.diff(CodexCliCatalog.registry, sdkNames, catalogFeatures)
    expect(inSync).toMatchObject({ ok: true, missing: [], stale: [], unknownFeatures: [], version: undefined })
    expect(CodexDriftGuard.formatReport(inSync)).toBe(`codex  tools: ${sdkNames.length} built-ins, catalog in sync`)
    expect(CodexDriftGuard.formatReport({ ...inSync, version: "0.171.0" })).toBe(
      `codex 0.171.0 tools: ${sdkNames.length} built-ins, catalog in sync`
    )
  })
})

describe("CodexCliCatalog lookups the drift report is read with", () => {
  it("a Codex tool's Claude Code names, none for a name the catalog does not map", () => {
    expect(CodexCliCatalog.claudeNamesOf("web_search")).toEqual(["WebSearch"])
    expect(CodexCliCatalog.claudeNamesOf("tool_of_goals")).toEqual([])
    expect(CodexCliCatalog.equivalentsOf("WebSearch")).toEqual(["web_search"])
    expect(CodexCliCatalog.equivalentsOf("NotAClaudeTool")).toEqual([])
  })
})
