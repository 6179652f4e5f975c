import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as Net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import type * as ToolSettingsServer from "../../examples/tool-settings-server.ts"
import type { Screen } from "../../examples/tool-settings-server.ts"
import * as ToolPolicy from "../../src/registry/ToolPolicy.ts"
import { probePort } from "../layers/mcpBridgeSupport.ts"
import { request, type RunningServer, send, startServer } from "./toolSettingsServerSupport.ts"

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tool-settings-server-"))
let server: RunningServer

beforeAll(async () => {
  server = await startServer(path.join(folder, "agents.sqlite"))
})
afterAll(async () => {
  await server?.close()
  fs.rmSync(folder, { recursive: true, force: true })
})

const screenOf = async (agentId: string, locale = "en"): Promise<Screen> => {
  const reply = await send(server.url, "GET", `/api/agents/${encodeURIComponent(agentId)}?locale=${locale}`)
  expect(reply.status, reply.text).toBe(200)
  return reply.json as Screen
}

const switchOf = (screen: Screen, id: string) => screen.sections.flatMap((s) => s.switches).find((e) => e.id === id)
const fixedOf = (screen: Screen, name: string) => screen.sections.flatMap((s) => s.fixed).find((t) => t.name === name)

describe("examples/tool-settings-server.ts API", () => {
  it("serves the page and a first agent with every switch on", async () => {
    const page = await request(server.url, "GET", "/")
    expect(page.status).toBe(200)
    expect(page.contentType).toMatch(/^text\/html/)
    expect(page.text).toContain("<script type=\"module\">")

    const agents = await send(server.url, "GET", "/api/agents")
    expect(agents.json).toEqual({ agents: [{ agentId: "assistant", disabledTools: [] }] })

    const screen = await screenOf("assistant")
    expect(screen.sections.map((s) => s.category)).toEqual([
      "shell",
      "file",
      "search",
      "orchestration",
      "media",
      "context"
    ])
    expect(switchOf(screen, "group:notes")).toMatchObject({
      label: "Notes",
      tools: ["mcp__notes__read_note", "mcp__notes__write_note"],
      enabled: true
    })
    // Tools without a switch are shown with why: internal, disabled, or behind a condition.
    expect(fixedOf(screen, "BashOutput")).toMatchObject({ exposure: "internal", pairGroup: "bash", on: true })
    expect(fixedOf(screen, "WebFetch")).toMatchObject({ exposure: "disabled", on: false })
    expect(fixedOf(screen, "EnterWorktree")).toMatchObject({
      exposure: "conditional",
      condition: "workspace-has-git",
      on: false
    })
    expect(screen.flags[0]).toBe("--disallowedTools")
    expect(screen.flags[1]!.split(",")).not.toContain("Bash")
    expect(screen.flags.slice(2)).toEqual([
      "--allowedTools",
      "mcp__gtb__*,mcp__notes__read_note,mcp__notes__write_note"
    ])
  })

  it("toggles a pair group as one switch, stores it, and answers with the new flags in the asked language", async () => {
    const created = await send(server.url, "POST", "/api/agents", { agentId: "reviewer" })
    expect(created.status).toBe(201)
    const off = await send(server.url, "PUT", "/api/agents/reviewer/switches/group%3Abash?locale=zh-TW", {
      enabled: false
    })
    expect(off.status, off.text).toBe(200)
    const screen = off.json as Screen
    expect(screen.locale).toBe("zh-TW")
    expect(screen.disabledTools).toEqual(["Bash"])
    expect(switchOf(screen, "group:bash")).toMatchObject({ enabled: false, label: "Shell 指令" })
    // Pair-group atomicity: the internal member goes with the switch.
    expect(fixedOf(screen, "BashOutput")?.on).toBe(false)
    expect(screen.flags[1]!.split(",")).toEqual(expect.arrayContaining(["Bash", "BashOutput"]))
    // Why a tool has no switch comes in the asked language too, saying which language it is in.
    expect(fixedOf(screen, "WebFetch")).toMatchObject({
      reason: "有自己網路工具的應用程式透過 MCP 提供它們",
      reasonLocale: "zh-TW"
    })

    const notesOff = await send(server.url, "PUT", "/api/agents/reviewer/switches/group%3Anotes", { enabled: false })
    expect((notesOff.json as Screen).flags.slice(2)).toEqual(["--allowedTools", "mcp__gtb__*"])
    const stored = await screenOf("reviewer")
    expect(stored.disabledTools).toEqual(["Bash", "mcp__notes__read_note", "mcp__notes__write_note"])
    const back = await send(server.url, "PUT", "/api/agents/reviewer/switches/group%3Abash", { enabled: true })
    expect((back.json as Screen).disabledTools).toEqual(["mcp__notes__read_note", "mcp__notes__write_note"])
  })

  describe("the session it describes: a plain ClaudeLocal run by default", () => {
    const startWith = async (name: string, session: ToolSettingsServer.Session) => {
      const running = await startServer(path.join(folder, `${name}.sqlite`), 0, session)
      const get = async (locale = "en") => {
        const reply = await send(running.url, "GET", `/api/agents/assistant?locale=${locale}`)
        expect(reply.status, reply.text).toBe(200)
        return reply.json as Screen
      }
      return { running, get }
    }
    /** The withheld tools that have a switch (the interactive ones without a switch are withheld too). */
    const asking = (screen: Screen) =>
      screen.policy.withheld.map((w) => w.tool).filter((t) => ["Bash", "Edit", "Write"].includes(t))
    const disallowed = (screen: Screen) => screen.flags[screen.flags.indexOf("--disallowedTools") + 1]!.split(",")

    it("marks Bash, Edit and Write withheld, with why and how to allow them, and blocks them in the flags", async () => {
      const { get, running } = await startWith("plain", {})
      try {
        const screen = await get()
        expect(screen.session).toEqual({})
        expect(switchOf(screen, "group:bash")).toMatchObject({
          enabled: true,
          withheld: expect.stringContaining("Claude Code asks before each Bash call"),
          withheldText: {
            tool: "Bash",
            label: "Needs approval",
            reason:
              "Claude Code asks before each Bash call, and no one can answer on this headless claude -p run (permission mode default, no canUseTool, not in allowedTools)",
            hint:
              "To offer it: decide calls with canUseTool, allow it with toolPolicy.allowedTools, or use permission mode bypassPermissions"
          }
        })
        expect(switchOf(screen, "Edit")?.withheldText?.hint).toMatch(/permission mode acceptEdits$/)
        expect(switchOf(screen, "Write")?.withheldText?.tool).toBe("Write")
        expect(switchOf(screen, "Read")).not.toHaveProperty("withheld")
        expect(switchOf(screen, "Read")).not.toHaveProperty("withheldText")
        expect(switchOf(screen, "group:notes")).not.toHaveProperty("withheldText")
        // The session's verdict, not the agent's choice: nothing is stored as an opt-out.
        expect(screen.disabledTools).toEqual([])
        expect(asking(screen)).toEqual(["Bash", "Edit", "Write"])
        // The flags are exactly what the policy gives the CLI for this session.
        expect(screen.flags).toEqual(ToolPolicy.toCliFlags(screen.policy))
        expect(disallowed(screen)).toEqual(expect.arrayContaining(["Bash", "Edit", "Write"]))
        expect(disallowed(screen)).not.toContain("Read")

        const zhCN = switchOf(await get("zh-CN"), "group:bash")?.withheldText
        expect(zhCN?.label).toBe("需要批准")
        expect(zhCN?.reason).toContain("Claude Code 在每次调用 Bash 前都会询问")
        const zhTW = switchOf(await get("zh-TW"), "Edit")?.withheldText
        expect(zhTW?.label).toBe("需要核准")
        expect(zhTW?.hint).toBe(
          "若要提供它：用 canUseTool 決定每次呼叫，用 toolPolicy.allowedTools 允許它，或使用權限模式 acceptEdits"
        )
      } finally {
        await running.close()
      }
    })

    it("withholds only Bash under acceptEdits, and nothing when the application answers prompts", async () => {
      const accept = await startWith("accept-edits", { permissionMode: "acceptEdits" })
      try {
        const screen = await accept.get()
        expect(switchOf(screen, "group:bash")?.withheldText?.reason).toContain("(permission mode acceptEdits,")
        expect(switchOf(screen, "Edit")).not.toHaveProperty("withheld")
        expect(disallowed(screen)).toContain("Bash")
        expect(disallowed(screen)).not.toContain("Edit")
      } finally {
        await accept.running.close()
      }
      // The shared server describes an application with canUseTool.
      const answered = await screenOf("assistant")
      expect(answered.session).toEqual({ canUseTool: true })
      expect(answered.sections.flatMap((s) => s.switches).filter((e) => e.withheld !== undefined)).toEqual([])
      expect(asking(answered)).toEqual([])
    })
  })

  describe("bad input gets a 4xx with a clear message and changes nothing", () => {
    /** A valid switch request padded to 64 KiB, in 4 KiB pieces. */
    const oversized = JSON.stringify({ enabled: false, pad: "x".repeat(64 * 1024) }).match(/[\s\S]{1,4096}/g)!
    const put = (agent: string, id: string, body: string, headers = { "content-type": "application/json" }) =>
      request(server.url, "PUT", `/api/agents/${agent}/switches/${encodeURIComponent(id)}`, { body, headers })

    const cases: ReadonlyArray<{
      readonly name: string
      readonly run: () => ReturnType<typeof request>
      readonly status: number
      readonly message: RegExp
      /** The server ends the connection after this answer. */
      readonly closes?: boolean
    }> = [
      {
        name: "unknown agent",
        run: () => put("nobody", "Read", "{\"enabled\":false}"),
        status: 404,
        message: /agent "nobody" does not exist; create it with POST \/api\/agents/
      },
      {
        name: "unknown tool",
        run: () => put("assistant", "Telepathy", "{\"enabled\":false}"),
        status: 404,
        message: /no switch "Telepathy"; the switches are group:bash, Read, .*group:notes/
      },
      {
        name: "a disabled tool",
        run: () => put("assistant", "WebFetch", "{\"enabled\":true}"),
        status: 409,
        message: /WebFetch is disabled: it has no switch/
      },
      {
        name: "a pair-group member",
        run: () => put("assistant", "BashOutput", "{\"enabled\":false}"),
        status: 409,
        message: /BashOutput has no switch of its own: it goes with the group:bash switch/
      },
      {
        name: "a body that is not JSON",
        run: () => put("assistant", "Read", "{\"enabled\":"),
        status: 400,
        message: /the body is not JSON/
      },
      {
        name: "an empty body",
        run: () => put("assistant", "Read", ""),
        status: 400,
        message: /invalid body: [\s\S]*actual null/
      },
      {
        name: "a body of the wrong type",
        run: () => put("assistant", "Read", "{\"enabled\":\"no\"}"),
        status: 400,
        // Effect 4's text: the path after the message.
        message: /invalid body: Expected boolean, actual "no" at \["enabled"\]/
      },
      {
        name: "a body with an unknown field",
        run: () => put("assistant", "Read", "{\"enabled\":false,\"force\":true}"),
        status: 400,
        message: /invalid body: Unexpected key with value true at \["force"\]/
      },
      {
        name: "a body that is not sent as JSON",
        run: () => put("assistant", "Read", "{\"enabled\":false}", { "content-type": "text/plain" }),
        status: 415,
        message: /Content-Type: application\/json/
      },
      {
        name: "a body over the size limit",
        run: () => put("assistant", "Read", JSON.stringify({ enabled: false, pad: "x".repeat(64 * 1024) })),
        status: 413,
        message: /the body is over 16384 bytes/,
        closes: true
      },
      {
        name: "a chunked body over the size limit (no Content-Length)",
        run: () =>
          request(server.url, "PUT", "/api/agents/assistant/switches/Read", {
            chunks: oversized,
            headers: { "content-type": "application/json" }
          }),
        status: 413,
        message: /the body is over 16384 bytes/,
        closes: true
      },
      {
        name: "an unknown locale",
        run: () => request(server.url, "GET", "/api/agents/assistant?locale=fr"),
        status: 400,
        message: /unknown locale "fr"; use one of en, zh-CN, zh-TW/
      },
      {
        name: "an invalid agent id",
        run: () => send(server.url, "POST", "/api/agents", { agentId: "" }),
        status: 400,
        message: /invalid agent id/
      },
      {
        name: "an agent that exists",
        run: () => send(server.url, "POST", "/api/agents", { agentId: "assistant" }),
        status: 409,
        message: /agent "assistant" already exists/
      },
      {
        name: "an unknown route",
        run: () => request(server.url, "DELETE", "/api/agents/assistant"),
        status: 404,
        message: /no route DELETE \/api\/agents\/assistant/
      },
      {
        name: "a Host that is not this server (DNS rebinding)",
        run: () => request(server.url, "GET", "/api/agents", { headers: { host: `evil.example:${server.port}` } }),
        status: 403,
        message: /unexpected Host "evil\.example:\d+"; open http:\/\/127\.0\.0\.1:\d+\//
      },
      {
        name: "another origin",
        run: () =>
          request(server.url, "PUT", "/api/agents/assistant/switches/Read", {
            body: "{\"enabled\":false}",
            headers: { "content-type": "application/json", origin: "http://evil.example" }
          }),
        status: 403,
        message: /requests from http:\/\/evil\.example are not accepted/
      }
    ]

    for (const c of cases) {
      it(c.name, async () => {
        const before = await send(server.url, "GET", "/api/agents")
        const reply = await c.run()
        expect(reply.status, reply.text).toBe(c.status)
        expect(reply.contentType).toMatch(/^application\/json/)
        expect((reply.json as { error: string }).error).toMatch(c.message)
        if (c.closes === true) expect(reply.connection).toBe("close")
        expect((await send(server.url, "GET", "/api/agents")).json).toEqual(before.json)
      })
    }

    it("a chunked body that would not end is answered 413 before the client is done sending", async () => {
      // 4 MiB in 4 KiB pieces: the server answers once it has seen more than 16 KiB.
      const reply = await request(server.url, "PUT", "/api/agents/assistant/switches/Read", {
        chunks: Array.from({ length: 1024 }, () => "x".repeat(4096)),
        headers: { "content-type": "application/json" }
      })
      expect(reply.status, reply.text).toBe(413)
      expect(reply.connection).toBe("close")
      expect(reply.unsent).toBeGreaterThan(0)
      // A body within the limit still works, chunked too.
      const small = await request(server.url, "PUT", "/api/agents/assistant/switches/Read", {
        chunks: ["{\"enabled\":", "true}"],
        headers: { "content-type": "application/json" }
      })
      expect(small.status, small.text).toBe(200)
      expect((small.json as Screen).disabledTools).toEqual([])
    })
  })
})

describe("examples/tool-settings-server.ts shutdown", () => {
  it("?catalog=gemini: Gemini CLI's switches from the same opt-outs, a --policy file, and a flip that writes them", async () => {
    const agentId = "gemini-api"
    expect((await send(server.url, "POST", "/api/agents", { agentId })).status).toBe(201)
    // Stored from Claude Code's screen: Read (and the notes group) off.
    expect((await send(server.url, "PUT", `/api/agents/${agentId}/switches/Read?locale=en`, { enabled: false })).status)
      .toBe(200)
    const get = async () => {
      const reply = await send(server.url, "GET", `/api/agents/${agentId}?locale=en&catalog=gemini`)
      expect(reply.status, reply.text).toBe(200)
      return reply.json as Screen
    }
    const screen = await get()
    expect(screen).toMatchObject({ catalog: "gemini", command: "gemini" })
    expect(switchOf(screen, "read_file")).toMatchObject({ label: "Read files", enabled: false })
    expect(switchOf(screen, "read_many_files")).toMatchObject({ enabled: false })
    expect(switchOf(screen, "glob")).toMatchObject({ enabled: true })
    expect(screen.flags).toEqual(["--policy", "policy.toml", "--allowed-mcp-server-names", "gtb,notes"])
    expect(screen.policyToml).toMatch(/toolName = \[[^\]]*"read_file"[^\]]*\]\ndecision = "deny"/)
    expect(fixedOf(screen, "web_fetch")).toMatchObject({ exposure: "disabled", on: false })

    // A flip on Gemini CLI's screen: the Claude Code opt-out that stood for read_file goes too.
    const flip = await send(server.url, "PUT", `/api/agents/${agentId}/switches/read_file?locale=en&catalog=gemini`, {
      enabled: true
    })
    expect(flip.status, flip.text).toBe(200)
    expect((flip.json as Screen).disabledTools).toEqual([])
    const off = await send(server.url, "PUT", `/api/agents/${agentId}/switches/glob?locale=en&catalog=gemini`, {
      enabled: false
    })
    expect(off.status, off.text).toBe(200)
    expect((off.json as Screen).disabledTools).toEqual(["glob"])
    expect((off.json as Screen).policyToml).toMatch(/"glob"[^\n]*\ndecision = "deny"/)

    const bad = await send(server.url, "GET", `/api/agents/${agentId}?catalog=copilot`)
    expect(bad.status).toBe(400)
    expect(bad.json).toEqual({ error: "unknown catalog \"copilot\"; use claude, gemini or codex" })
  })

  it("?catalog=codex: Codex CLI's switches from the same opt-outs, the codex exec switches, and a flip that writes them", async () => {
    const agentId = "codex-api"
    expect((await send(server.url, "POST", "/api/agents", { agentId })).status).toBe(201)
    // Stored from Claude Code's screen: Read off, which on Codex CLI is view_image.
    expect((await send(server.url, "PUT", `/api/agents/${agentId}/switches/Read?locale=en`, { enabled: false })).status)
      .toBe(200)
    const reply = await send(server.url, "GET", `/api/agents/${agentId}?locale=zh-CN&catalog=codex`)
    expect(reply.status, reply.text).toBe(200)
    const screen = reply.json as Screen
    expect(screen).toMatchObject({ catalog: "codex", command: "codex", invocation: ["codex", "exec"] })
    expect(switchOf(screen, "view_image")).toMatchObject({ label: "查看图片", enabled: false })
    expect(switchOf(screen, "apply_patch")).toMatchObject({ enabled: true })
    expect(fixedOf(screen, "web_search")).toMatchObject({ exposure: "disabled", on: false })
    expect(fixedOf(screen, "request_user_input")).toMatchObject({ exposure: "internal", on: true })
    const pairs = (flags: ReadonlyArray<string>) => flags.flatMap((f, i) => i % 2 === 0 ? [`${f} ${flags[i + 1]}`] : [])
    expect(pairs(screen.flags)).toEqual(
      expect.arrayContaining(["--disable view_image", "--disable apps", "-c web_search=\"disabled\""])
    )
    expect(screen.policyToml).toBeUndefined()

    // A flip on Codex CLI's screen: the Claude Code opt-out that stood for view_image goes too.
    const flip = await send(server.url, "PUT", `/api/agents/${agentId}/switches/view_image?locale=en&catalog=codex`, {
      enabled: true
    })
    expect(flip.status, flip.text).toBe(200)
    expect((flip.json as Screen).disabledTools).toEqual([])
    expect(pairs((flip.json as Screen).flags)).not.toContain("--disable view_image")
    const off = await send(server.url, "PUT", `/api/agents/${agentId}/switches/apply_patch?locale=en&catalog=codex`, {
      enabled: false
    })
    expect(off.status, off.text).toBe(200)
    expect((off.json as Screen).disabledTools).toEqual(["apply_patch"])
    expect(pairs((off.json as Screen).flags)).toContain("-c sandbox_mode=\"read-only\"")
  })

  it("closes a connection that never carried a request, instead of waiting for it", async () => {
    // What a browser's preconnect leaves: Node's close() waits for such a socket, and a request
    // sent on it after the restart would go to the stopped server.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tool-settings-server-close-"))
    const other = await startServer(path.join(dir, "agents.sqlite"))
    try {
      const socket = Net.connect({ host: "127.0.0.1", port: other.port })
      await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject))
      const ended = new Promise<boolean>((resolve) => socket.once("close", () => resolve(true)))
      // Without the fix, close() gives up after 20 s and the socket stays open: the test times out.
      await other.close()
      expect(await ended).toBe(true)
      expect(await probePort(other.port)).toBe("ECONNREFUSED")
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

const waitForUrl = (child: ChildProcess, output: { text: string }) =>
  new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL printed; output:\n${output.text}`)), 60_000)
    const onData = () => {
      const match = /Tool settings at (http:\/\/127\.0\.0\.1:\d+)\//.exec(output.text)
      if (match !== null) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    }
    child.stdout!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`exited early with ${code}; output:\n${output.text}`)))
  })

describe("examples/tool-settings-server.ts run directly", () => {
  it("prints its URL, serves the page on 127.0.0.1, and stops on SIGINT with the port closed", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tool-settings-server-run-"))
    const file = path.join(dir, "agents.sqlite")
    const child = spawn(process.execPath, ["--import", "tsx", "examples/tool-settings-server.ts", file], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, HOME: dir, XDG_DATA_HOME: path.join(dir, "xdg"), SETTINGS_PERMISSION_MODE: "acceptEdits" }
    })
    const output = { text: "" }
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output.text += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output.text += chunk))
    try {
      const url = await waitForUrl(child, output)
      expect(output.text).toContain(`(settings in ${file}); Ctrl-C stops the server`)
      const page = await request(url, "GET", "/")
      expect(page.text).toContain("<title>Tool settings</title>")
      expect((await send(url, "GET", "/api/agents")).json).toEqual({
        agents: [{ agentId: "assistant", disabledTools: [] }]
      })
      // SETTINGS_PERMISSION_MODE describes the session: acceptEdits lets Edit run, Bash still asks.
      const screen = (await send(url, "GET", "/api/agents/assistant")).json as Screen
      expect(screen.session).toEqual({ permissionMode: "acceptEdits" })
      const withheld = screen.policy.withheld.map((w) => w.tool)
      expect(withheld).toContain("Bash")
      expect(withheld).not.toContain("Edit")
      child.kill("SIGINT")
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
      // Effect 4's runMain exits 130 when SIGINT interrupts the program (the shell's convention).
      expect(code, output.text).toBe(130)
      expect(await probePort(Number(new URL(url).port))).toBe("ECONNREFUSED")
      expect(fs.existsSync(file)).toBe(true)
      expect(fs.existsSync(path.join(dir, "xdg"))).toBe(false)
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("refuses to start on a session it cannot describe, saying which values it takes", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/tool-settings-server.ts", ":memory:"], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, SETTINGS_PERMISSION_MODE: "yolo" }
    })
    let stderr = ""
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    child.stdout.resume()
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
    expect(code, stderr).toBe(2)
    expect(stderr.trim()).toBe(
      "SETTINGS_PERMISSION_MODE=yolo: use one of default, acceptEdits, bypassPermissions, plan, dontAsk, auto"
    )
  }, 60_000)
})
