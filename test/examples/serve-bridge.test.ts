import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, readFileSync, statSync } from "node:fs"
import * as path from "node:path"
import { probePort } from "../layers/mcpBridgeSupport.ts"

const waitForLine = (child: ChildProcess, pattern: RegExp, output: { text: string }) =>
  new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${pattern}; output:\n${output.text}`)),
      30_000
    )
    const onData = () => {
      const match = pattern.exec(output.text)
      if (match !== null) {
        clearTimeout(timer)
        child.stdout!.off("data", onData)
        resolve(match)
      }
    }
    child.stdout!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`exited early with ${code}; output:\n${output.text}`)))
    onData()
  })

const waitForExit = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode)
    else child.once("exit", (code) => resolve(code))
  })

describe("examples/serve-bridge.ts", () => {
  it("serves tools to an MCP client configured from the written file, and cleans up on SIGINT", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/serve-bridge.ts"], {
      stdio: ["ignore", "pipe", "pipe"]
    })
    const output = { text: "" }
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output.text += chunk))
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output.text += chunk))
    try {
      // The last line of the banner: everything before it has been printed by then.
      await waitForLine(child, /Press Ctrl-C to stop/, output)
      const configPath = /MCP config: (\S+)\n/.exec(output.text)?.[1]
      expect(configPath).toBeDefined()
      expect(statSync(configPath!).mode & 0o777).toBe(0o600)
      expect(statSync(path.dirname(configPath!)).mode & 0o777).toBe(0o700)

      const config = JSON.parse(readFileSync(configPath!, "utf8"))
      const entry = config.mcpServers.gtb
      expect(entry).toMatchObject({ type: "http", alwaysLoad: true })
      const token = (entry.headers.Authorization as string).replace(/^Bearer /, "")
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(output.text).not.toContain(token)
      expect(output.text).toContain(`--mcp-config ${configPath} --strict-mcp-config --allowedTools "mcp__gtb__*"`)

      const client = new Client({ name: "example-test", version: "0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(entry.url), { requestInit: { headers: entry.headers } })
      )
      const listed = await client.listTools()
      expect(listed.tools.map((t) => t.name)).toEqual(["add_note", "list_notes", "add"])
      const stored = await client.callTool({ name: "add_note", arguments: { text: "buy milk" } })
      expect(stored.isError).toBe(false)
      expect(JSON.parse((stored.content as Array<{ text: string }>)[0]!.text)).toEqual({ stored: "buy milk", count: 1 })
      const notes = await client.callTool({ name: "list_notes", arguments: {} })
      expect(JSON.parse((notes.content as Array<{ text: string }>)[0]!.text)).toEqual(["buy milk"])
      const port = Number(new URL(entry.url).port)

      // The client keeps its SSE stream open while the process is asked to stop.
      child.kill("SIGINT")
      const code = await waitForExit(child)
      // Effect 4's runMain: an interruption by SIGINT exits with 130 (128 + SIGINT), after clean-up.
      expect(code).toBe(130)
      expect(existsSync(configPath!)).toBe(false)
      expect(existsSync(path.dirname(configPath!))).toBe(false)
      expect(await probePort(port)).toBe("ECONNREFUSED")
      expect(output.text).toContain("Bridge stopped, config file removed.")
      await client.close().catch(() => undefined)
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL")
    }
  })
})
