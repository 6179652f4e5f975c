/**
 * A Chromium for browser tests, found without root and without a download at run time:
 * `CHROMIUM_PATH` when set; else a system Chrome or Chromium (Debian's `chromium`, Google Chrome,
 * on the usual paths or PATH); else the headless Chromium that the npm package
 * `@sparticuz/chromium` ships inside its tarball (linux x64), unpacked into the temp directory on
 * first use. `CHROMIUM_PATH=bundled` picks that one even when a system one exists. Used by the
 * settings page's and the chat page's browser tests.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { type BrowserContext, chromium } from "playwright-core"

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

export interface Found {
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
export const version = (executablePath: string, env: Readonly<Record<string, string>> = {}) => {
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
export const findChromium = async (): Promise<Found> => {
  const chosen = process.env["CHROMIUM_PATH"]
  if (chosen !== undefined && chosen !== "" && chosen !== "bundled") {
    if (version(chosen) === undefined) throw new Error(`CHROMIUM_PATH=${chosen} does not run (--version failed)`)
    return { executablePath: chosen, env: {}, source: "CHROMIUM_PATH" }
  }
  const system = chosen === "bundled" ? undefined : systemChromium()
  return system !== undefined ? { executablePath: system, env: {}, source: "system" } : bundledChromium()
}

/** A headless Chromium in a persistent profile under `folder` (English, 1000×900), as the browser tests use it. */
export const launch = async (folder: string): Promise<BrowserContext> => {
  const found = await findChromium()
  console.log(`chromium: ${found.executablePath} (${found.source}, ${version(found.executablePath, found.env)})`)
  const browser = await chromium.launchPersistentContext(path.join(folder, "profile"), {
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
  return browser
}
