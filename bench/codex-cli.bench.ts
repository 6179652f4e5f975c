/**
 * CodexCli: one tool-using turn (the model calls your `add`, then answers) through the library —
 * a client built, its bridge started, the turn run (`codex exec --json`, prompt on stdin, skills
 * scanned and switched off), the client closed — against a bare `codex exec --json` of the same
 * turn spawned directly with node:child_process (prompt on argv, the same fake Responses API, the
 * same provider settings, an already running bridge, a fresh `CODEX_HOME` too). Both run the real
 * binary; samples alternate so machine load hits both alike. The ratio is what the library adds
 * to a turn. Then a later tool turn of a `keepAlive` client (a `turn/start` on its running `codex
 * app-server`) against a later tool turn of an `exec` client (a fresh `codex exec resume`), both
 * clients built and warmed once, samples alternating: what keeping the CLI alive saves a turn; and
 * the kept app-server's resident memory.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readlinkSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as CodexCli from "../src/layers/CodexCli.ts"
import * as NodeMcpBridge from "../src/layers/NodeMcpBridge.ts"
import * as NodeSubprocess from "../src/layers/NodeSubprocess.ts"
import * as Tool from "../src/services/Tool.ts"
import * as Fake from "../test/support/FakeOpenAiResponses.ts"
import { median, rssMiB, sample } from "./util.ts"

const binary = resolve("node_modules/.bin/codex")
const prompt = "Please add 2 and 3"
let calls = 0
const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: { a: Schema.Number, b: Schema.Number },
  handler: ({ a, b }) => Effect.sync(() => (calls++, a + b))
})

const model = (req: Fake.FakeRequest): Fake.FakeReply => {
  const outputs = Fake.functionOutputs(req)
  if (outputs.length > 0) return { text: `sum: ${outputs[0]!.output}` }
  return Fake.toolNames(req).includes("mcp__gtb.add")
    ? { functionCalls: [{ namespace: "mcp__gtb", name: "add", arguments: { a: 2, b: 3 } }] }
    : { text: "no tool offered" }
}

const dir = mkdtempSync(join(tmpdir(), "ecb-bench-codex-"))

/**
 * The same turn as a user would run it by hand: `codex exec` with the prompt on argv; `extra` adds
 * the library's switches (analytics, release check, plugins, apps, bundled skills off).
 */
const bareExec = (apiUrl: string, bridgeUrl: string, token: string, extra: ReadonlyArray<string>) => () =>
  new Promise<void>((done, reject) => {
    const home = mkdtempSync(join(dir, "bare-"))
    mkdirSync(join(home, "work"))
    const child = spawn(binary, [
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--ignore-user-config",
      "--ignore-rules",
      "--sandbox",
      "read-only",
      "--model",
      "gpt-fake",
      "-c",
      `model_provider="fake"`,
      "-c",
      `model_providers.fake={name="fake",base_url="${apiUrl}",wire_api="responses",env_key="FAKE_KEY"}`,
      "-c",
      `mcp_servers.gtb.url="${bridgeUrl}"`,
      "-c",
      `mcp_servers.gtb.bearer_token_env_var="GTB_TOKEN"`,
      "-c",
      `mcp_servers.gtb.default_tools_approval_mode="approve"`,
      ...extra,
      prompt
    ], {
      cwd: join(home, "work"),
      env: { PATH: process.env["PATH"], HOME: home, CODEX_HOME: home, FAKE_KEY: "k", GTB_TOKEN: token },
      stdio: ["ignore", "pipe", "ignore"]
    })
    let out = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("close", (code) => {
      rmSync(home, { recursive: true, force: true })
      if (code === 0 && out.includes("sum: ")) done()
      else reject(new Error(`bare codex exec failed (${code}): ${out.slice(-500)}`))
    })
  })

const program = Effect.gen(function*() {
  const api = yield* Fake.make(model)
  const bridge = yield* NodeMcpBridge.make({ serverName: "gtb", tools: [add] })
  const options: CodexCli.Options = {
    binary,
    model: "gpt-fake",
    baseUrl: api.url,
    apiKey: Redacted.make("k"),
    maxRetries: 0
  }
  const libraryTurn = () =>
    Effect.runPromise(
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const client = yield* CodexCli.make(options).pipe(Scope.provide(scope), Effect.provide(NodeSubprocess.layer))
        yield* client.setTools([add])
        const answer = yield* client.chat(prompt)
        yield* Scope.close(scope, Exit.void)
        if (!answer.includes("5")) throw new Error(`unexpected answer ${answer}`)
      })
    )
  const bare = bareExec(api.url, bridge.url, Redacted.value(bridge.token), [])
  const quiet = bareExec(api.url, bridge.url, Redacted.value(bridge.token), [
    ...["-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false"],
    ...["-c", "skills.bundled.enabled=false", "--disable", "plugins", "--disable", "apps"]
  ])
  const lib: Array<number> = []
  const base: Array<number> = []
  const baseQuiet: Array<number> = []
  const rounds = 4
  for (let r = 0; r < rounds; r++) {
    base.push(...(yield* Effect.promise(() => sample(2, bare, r === 0 ? 1 : 0))))
    baseQuiet.push(...(yield* Effect.promise(() => sample(2, quiet, r === 0 ? 1 : 0))))
    lib.push(...(yield* Effect.promise(() => sample(2, libraryTurn, r === 0 ? 1 : 0))))
  }
  const ml = median(lib)
  for (
    const [label, samples] of [["bare codex exec", base], [
      "bare codex exec, the library's switches",
      baseQuiet
    ]] as const
  ) {
    const mb = median(samples)
    console.log(
      `CodexCli tool turn (client + bridge + turn + close): ${ml.toFixed(0)} ms vs ${label} ${mb.toFixed(0)} ms → ` +
        `ratio ${(ml / mb).toFixed(2)}× (${lib.length} + ${samples.length} samples)`
    )
  }
  console.log(`tool calls run: ${calls} (one per turn)`)
  yield* laterTurns(options)
})

/** `codex app-server` processes (the launcher and the binary) working in `cwd`. */
const appServersIn = (cwd: string): Array<number> =>
  execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("app-server") && !line.includes("ps -eo"))
    .map((line) => Number(line.trim().split(/\s+/)[0]))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === cwd
      } catch {
        return false
      }
    })

/** A later tool turn: `keepAlive` (turn/start on the running app-server) vs exec (a fresh `codex exec resume`). */
const laterTurns = Effect.fnUntraced(function*(options: CodexCli.Options) {
  const scope = yield* Scope.make()
  const client = (extra: CodexCli.Options) =>
    CodexCli.make({ ...options, ...extra }).pipe(
      Scope.provide(scope),
      Effect.provide(NodeSubprocess.layer),
      Effect.tap((c) => c.setTools([add]))
    )
  const liveCwd = mkdtempSync(join(dir, "live-"))
  const live = yield* client({ keepAlive: true, cwd: liveCwd })
  const exec = yield* client({})
  const turn = (c: CodexCli.CodexCliClient) => () =>
    Effect.runPromise(c.chat(prompt)).then((answer) => {
      if (!answer.includes("5")) throw new Error(`unexpected answer ${answer}`)
    })
  const kept: Array<number> = []
  const fresh: Array<number> = []
  for (let r = 0; r < 4; r++) {
    fresh.push(...(yield* Effect.promise(() => sample(2, turn(exec), r === 0 ? 1 : 0))))
    kept.push(...(yield* Effect.promise(() => sample(2, turn(live), r === 0 ? 1 : 0))))
  }
  const rss = rssMiB(appServersIn(liveCwd))
  yield* Scope.close(scope, Exit.void)
  const [mk, mf] = [median(kept), median(fresh)]
  console.log(
    `CodexCli later tool turn, keepAlive (turn/start on the kept app-server): ${mk.toFixed(0)} ms vs a fresh ` +
      `exec turn (codex exec resume) ${mf.toFixed(0)} ms → ratio ${(mk / mf).toFixed(2)}× ` +
      `(${kept.length} + ${fresh.length} samples); kept app-server resident ${rss.toFixed(0)} MiB`
  )
})

Effect.runPromise(Effect.scoped(program)).then(
  () => rmSync(dir, { recursive: true, force: true }),
  (error: unknown) => {
    rmSync(dir, { recursive: true, force: true })
    console.error(error)
    process.exit(1)
  }
)
