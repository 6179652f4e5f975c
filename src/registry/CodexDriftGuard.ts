/**
 * Keeps the Codex CLI catalog honest against the installed `@openai/codex`. The binary has no
 * command that lists its tools for a model it calls directly (`codex debug prompt-input` only
 * renders code-mode models' tools), so the guard asks the binary itself: it runs `codex exec` a
 * few times against a loopback probe (a Responses endpoint that records the request and answers
 * "ok", and an empty MCP server so the MCP-resource tools appear), in a throwaway `CODEX_HOME`
 * with no user config or rules, and reads the tool names of each request. It also checks that
 * every feature the catalog switches off still exists (`codex features list`). Nothing leaves
 * the machine.
 *
 * @summary Checks the Codex CLI catalog against the installed binary's requests and feature list.
 * @group Claude Code tool policy
 * @since 2.2.0
 * @module
 */
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as ChildProcess from "node:child_process"
import * as Http from "node:http"
import { createRequire } from "node:module"
import type * as Net from "node:net"
import * as NodePath from "node:path"
import * as CodexCliCatalog from "./CodexCliCatalog.ts"
import { DriftGuardError } from "./DriftGuard.ts"
import type * as Registry from "./Registry.ts"

/**
 * Result of a check.
 *
 * @category models
 * @since 2.2.0
 */
export interface CodexDriftReport {
  /** The CLI's version (`codex --version`). */
  readonly version: string | undefined
  /** The built-in tool names the probes saw, sorted. */
  readonly cliTools: ReadonlyArray<string>
  /** A CLI built-in with no catalog entry. */
  readonly missing: ReadonlyArray<string>
  /** A catalog built-in no probe saw. */
  readonly stale: ReadonlyArray<string>
  /** A feature the catalog switches off that the CLI no longer lists (or lists as removed). */
  readonly unknownFeatures: ReadonlyArray<string>
  /** True when nothing is missing, stale or unknown. */
  readonly ok: boolean
}

/**
 * One `codex exec` run of the guard: the arguments that select the model and features.
 *
 * @category models
 * @since 2.2.0
 */
export interface Probe {
  readonly label: string
  readonly args: ReadonlyArray<string>
}

/**
 * The runs that together show every catalog tool: the defaults with a model the CLI does not
 * know (fallback metadata), a model whose metadata declares `apply_patch` and `tool_search`, and
 * the experimental features whose tools the catalog classifies.
 *
 * @category models
 * @since 2.2.0
 */
export const probes: ReadonlyArray<Probe> = [
  { label: "defaults", args: ["-c", "model=\"effect-chat-bridge-probe\""] },
  { label: "gpt-5.5", args: ["-c", "model=\"gpt-5.5\""] },
  {
    label: "experimental",
    args: [
      "-c",
      "model=\"effect-chat-bridge-probe\"",
      ...["multi_agent_v2", "request_permissions_tool", "send_message_to_user_async"].flatMap((f) => ["--enable", f])
    ]
  }
]

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/**
 * The built-in tool names of a Responses request body: functions and custom tools by `name`,
 * hosted tools (`web_search`) by `type`, a namespace's children by their own names; MCP
 * namespaces (`mcp__<server>`) are the servers' tools, not built-ins, and are left out.
 *
 * @category utils
 * @since 2.2.0
 */
export const toolNamesOfRequest = (body: unknown): ReadonlyArray<string> => {
  const tools = isRecord(body) && Array.isArray(body["tools"]) ? body["tools"] as ReadonlyArray<unknown> : []
  const out = new Set<string>()
  const visit = (tool: unknown) => {
    if (!isRecord(tool)) return
    if (tool["type"] === "namespace") {
      if (typeof tool["name"] === "string" && tool["name"].startsWith("mcp__")) return
      if (Array.isArray(tool["tools"])) { for (const child of tool["tools"]) visit(child) }
    } else if (typeof tool["name"] === "string") out.add(tool["name"])
    else if (typeof tool["type"] === "string") out.add(tool["type"])
  }
  for (const tool of tools) visit(tool)
  return [...out].sort()
}

/**
 * The features `codex features list` prints that are not removed.
 *
 * @category utils
 * @since 2.2.0
 */
export const parseFeatures = (output: string): ReadonlySet<string> =>
  new Set(
    output.split("\n").map((line) => line.trim().split(/\s{2,}/)).filter((cols) =>
      cols.length >= 3 && cols[1] !== "removed"
    ).map((cols) => cols[0]!)
  )

/**
 * Compares the names the probes saw with the registry's built-ins (`kind: "sdk"`), and the
 * catalog's feature switches with the CLI's features.
 *
 * @category utils
 * @since 2.2.0
 */
export const diff = (
  registry: Registry.Registry,
  cliTools: ReadonlyArray<string>,
  features: ReadonlySet<string>,
  version?: string
): CodexDriftReport => {
  const cli = new Set(cliTools)
  const known = new Set(registry.descriptors.filter((d) => d.kind === "sdk").map((d) => d.name))
  const missing = [...cli].filter((n) => !known.has(n)).sort()
  const stale = [...known].filter((n) => !cli.has(n)).sort()
  const named = new Set([
    ...CodexCliCatalog.alwaysDisabledFeatures,
    ...Object.values(CodexCliCatalog.controls).flatMap((c) => c?.features ?? [])
  ])
  const unknownFeatures = [...named].filter((f) => !features.has(f)).sort()
  return {
    version,
    cliTools: [...cli].sort(),
    missing,
    stale,
    unknownFeatures,
    ok: missing.length === 0 && stale.length === 0 && unknownFeatures.length === 0
  }
}

/**
 * The installed `@openai/codex` launcher (`bin/codex.js`, which finds the platform binary).
 *
 * @category utils
 * @since 2.2.0
 */
export const locateBinary: Effect.Effect<string, DriftGuardError> = Effect.try({
  try: () =>
    NodePath.join(
      NodePath.dirname(createRequire(import.meta.url).resolve("@openai/codex/package.json")),
      "bin",
      "codex.js"
    ),
  catch: (cause) =>
    new DriftGuardError({
      message: "the Codex drift guard runs `@openai/codex`: npm install -D @openai/codex@0.171.0, " +
        `or pass the binary (${String(cause)})`
    })
})

/** One probe request's answer: a Responses stream with one "ok" message. */
const okStream = [
  { type: "response.created", response: { id: "probe" } },
  {
    type: "response.output_item.done",
    item: { type: "message", role: "assistant", id: "probe-m", content: [{ type: "output_text", text: "ok" }] }
  },
  {
    type: "response.completed",
    response: { id: "probe", usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } }
  }
].map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("")

/** An MCP server with nothing on it, over plain JSON responses: enough for the CLI to mount it. */
const mcpAnswer = (message: Record<string, unknown>): unknown => {
  const method = message["method"]
  const params = isRecord(message["params"]) ? message["params"] : {}
  const result = method === "initialize"
    ? {
      protocolVersion: params["protocolVersion"],
      capabilities: { tools: {}, resources: {} },
      serverInfo: { name: "probe", version: "0" }
    }
    : method === "tools/list"
    ? { tools: [] }
    : method === "resources/list"
    ? { resources: [] }
    : method === "resources/templates/list"
    ? { resourceTemplates: [] }
    : {}
  return { jsonrpc: "2.0", id: message["id"], result }
}

/** The loopback probe: records each `/v1/responses` body; closed with the scope. */
const probeServer = Effect.acquireRelease(
  Effect.callback<{ readonly server: Http.Server; readonly port: number; readonly bodies: Array<unknown> }>(
    (resume) => {
      const bodies: Array<unknown> = []
      const server = Http.createServer((req, res) => {
        let raw = ""
        req.on("data", (chunk: Buffer) => raw += chunk.toString("utf8"))
        req.on("end", () => {
          let body: unknown = undefined
          try {
            body = raw === "" ? undefined : JSON.parse(raw)
          } catch {
            // Not JSON: answered as an empty request.
          }
          if (req.url?.startsWith("/mcp") === true) {
            if (req.method !== "POST" || !isRecord(body) || body["id"] === undefined) {
              res.writeHead(req.method === "POST" ? 202 : 405).end()
              return
            }
            res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(mcpAnswer(body)))
            return
          }
          bodies.push(body)
          res.writeHead(200, { "content-type": "text/event-stream" }).end(okStream)
        })
      })
      // The CLI reuses idle sockets; never keep one it might write to as Node closes it.
      server.keepAliveTimeout = 0
      server.listen(
        0,
        "127.0.0.1",
        () => resume(Effect.succeed({ server, port: (server.address() as Net.AddressInfo).port, bodies }))
      )
    }
  ),
  ({ server }) =>
    Effect.callback<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
)

/**
 * Runs the CLI to its end with stdin closed (`codex exec` otherwise waits on it), bounded in
 * time: a run over the limit is killed, and so is one still running when the check is interrupted.
 */
const runCli = (command: string, args: ReadonlyArray<string>, env: Record<string, string>, cwd: string) =>
  Effect.callback<string, { readonly message: string }>((resume) => {
    const child = ChildProcess.spawn(command, args, { env, cwd, stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => stdout += chunk.toString("utf8"))
    child.stderr.on("data", (chunk: Buffer) => stderr = (stderr + chunk.toString("utf8")).slice(-2_000))
    child.on("error", (e) => resume(Effect.fail({ message: e.message })))
    child.on("close", (code, signal) =>
      resume(
        code === 0
          ? Effect.succeed(stdout)
          : Effect.fail({ message: `exited with ${code ?? signal}: ${stderr.trim().slice(-500)}` })
      ))
    return Effect.sync(() => child.kill("SIGKILL"))
  })

const failWith = (what: string) => (e: { readonly message: string }) =>
  new DriftGuardError({ message: `${what}: ${e.message}` })

/**
 * Checks `registry` against a Codex CLI (by default the installed `@openai/codex`): runs each of
 * {@link probes} against a loopback probe and compares the tools its requests carried.
 *
 * @category utils
 * @since 2.2.0
 */
export const check: (
  registry: Registry.Registry,
  options?: { readonly binary?: string; readonly probes?: ReadonlyArray<Probe> }
) => Effect.Effect<CodexDriftReport, DriftGuardError, FileSystem.FileSystem> = Effect.fn(
  "CodexDriftGuard.check"
)(function*(
  registry: Registry.Registry,
  options?: { readonly binary?: string; readonly probes?: ReadonlyArray<Probe> }
) {
  const binary = options?.binary ?? (yield* locateBinary)
  const command = binary.endsWith(".js") ? process.execPath : binary
  const prefix = binary.endsWith(".js") ? [binary] : []
  return yield* Effect.scoped(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const home = yield* fs.makeTempDirectoryScoped({ prefix: "codex-drift-" }).pipe(
      Effect.mapError(failWith("cannot make a CODEX_HOME"))
    )
    const cwd = NodePath.join(home, "work")
    yield* fs.makeDirectory(cwd).pipe(Effect.mapError(failWith("cannot make a work folder")))
    const { bodies, port } = yield* probeServer
    // The user's HOME, keys and endpoints stay out: the probe is the only thing the CLI can reach.
    const env: Record<string, string> = {
      RUST_LOG: "error",
      PROBE_KEY: "probe",
      HOME: home,
      CODEX_HOME: home,
      TMPDIR: home
    }
    if (process.env["PATH"] !== undefined) env["PATH"] = process.env["PATH"]
    const run = (args: ReadonlyArray<string>) =>
      runCli(command, [...prefix, ...args], env, cwd).pipe(
        Effect.mapError(failWith(`codex ${args.slice(0, 2).join(" ")}`))
      )
    const version = (yield* run(["--version"])).trim().replace(/^codex-cli\s+/, "")
    const features = parseFeatures(yield* run(["features", "list"]))
    const names = new Set<string>()
    for (const probe of options?.probes ?? probes) {
      const before = bodies.length
      yield* run([
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ignore-user-config",
        "--ignore-rules",
        "--ephemeral",
        "-c",
        "model_provider=\"probe\"",
        "-c",
        `model_providers.probe={name="probe",base_url="http://127.0.0.1:${port}/v1",wire_api="responses",env_key="PROBE_KEY"}`,
        "-c",
        `mcp_servers.probe.url="http://127.0.0.1:${port}/mcp"`,
        ...probe.args,
        "reply ok"
      ])
      const body = bodies[before]
      if (body === undefined) {
        return yield* new DriftGuardError({ message: `probe ${probe.label}: the CLI sent no request` })
      }
      for (const name of toolNamesOfRequest(body)) names.add(name)
    }
    return diff(registry, [...names], features, version)
  }))
})

/**
 * Human-readable report, one finding a line.
 *
 * @category utils
 * @since 2.2.0
 */
export const formatReport = (report: CodexDriftReport): string =>
  report.ok
    ? `codex ${report.version ?? ""} tools: ${report.cliTools.length} built-ins, catalog in sync`
    : [
      ...report.missing.map((n) => `missing: Codex CLI built-in ${n} has no catalog entry — classify it`),
      ...report.stale.map((n) => `stale: catalog entry ${n} is not a built-in of the installed Codex CLI`),
      ...report.unknownFeatures.map((f) => `feature: ${f} is not a feature of the installed Codex CLI`)
    ].join("\n")
