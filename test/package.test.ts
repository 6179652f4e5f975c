import { describe, expect, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { AgentSdkPackage } from "../src/internal/claudeAgent/sdk.ts"
import { modulesReachedFrom, packagesReachedFrom } from "./support/importGraph.ts"

// What ships: entry points, peers and the README's install line agree, and the main entry's
// import graph reaches no optional peer. (The tarball itself is exercised by scripts/consumer-test.sh.)
const root = path.resolve(import.meta.dirname, "..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
  readonly exports: Record<string, { readonly types: string; readonly default: string } | string>
  readonly peerDependencies: Record<string, string>
  readonly peerDependenciesMeta: Record<string, { readonly optional: boolean }>
  readonly dependencies: Record<string, string>
  readonly files: ReadonlyArray<string>
  readonly scripts: Record<string, string>
}
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
const requiredPeers = Object.entries(pkg.peerDependencies).filter(([name]) =>
  pkg.peerDependenciesMeta[name]?.optional !== true
)
const optionalPeers = Object.keys(pkg.peerDependencies).filter((name) => pkg.peerDependenciesMeta[name]?.optional)
const installed = new Set([...requiredPeers.map(([name]) => name), ...Object.keys(pkg.dependencies)])
// The Effect 3 line's packages, all inside `effect` (or gone, for SQLite) on this line.
const effect3Packages = [
  "@effect/platform",
  "@effect/experimental",
  "@effect/sql",
  "@effect/sql-sqlite-node",
  "@effect/ai",
  "better-sqlite3"
]
/** The packages `file` reaches that neither the required peers nor the dependencies install. */
const notInstalled = (file: string) =>
  [...packagesReachedFrom(path.join(root, file))].filter((name) => !installed.has(name))
const isEffectAi = (specifier: string) => specifier === "effect/ai" || specifier.startsWith("effect/ai/")

describe("package", () => {
  it("every export points at dist and has a source entry", () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === "string") continue
      const name = subpath === "." ? "index" : subpath.slice(2)
      expect(target).toEqual({ types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` })
      expect(fs.existsSync(path.join(root, "src", `${name}.ts`))).toBe(true)
    }
  })

  it("the README's install line names exactly the required peers, with their ranges", () => {
    const line = readme.split("\n").find((l) => l.startsWith("npm install effect-chat-bridge "))
    expect(line).toBeDefined()
    const named = line!.split(" ").slice(3)
    expect(named.sort()).toEqual(requiredPeers.map(([name, range]) => `${name}@${range}`).sort())
    // The Effect 4 line: exactly effect and @effect/platform-node, both ^4.1.
    expect(named).toEqual(["@effect/platform-node@^4.1.0", "effect@^4.1.5"])
    const script = fs.readFileSync(path.join(root, "scripts/consumer-test.sh"), "utf8")
    for (const spec of named) expect(script).toContain(spec)
    // Until the package is on the registry: a tarball from a clone, or a git dependency, with the same peers.
    expect(readme).toContain("**it is not there yet**")
    const fromRepository = readme.split("\n").filter((l) =>
      /npm install (?:\S*effect-chat-bridge-\d[\w.-]*\.tgz|git\+\S+) /.test(l)
    )
    expect(fromRepository).toHaveLength(2)
    for (const l of fromRepository) {
      expect(l.slice(l.indexOf("npm install")).split(" ").slice(3).sort(), l).toEqual([...named].sort())
    }
  })

  it("a git dependency builds: npm runs only `prepare` for one, and it builds only then", () => {
    expect(pkg.scripts["prepack"]).toBe("npm run build")
    // A stand-in `npm` that records what it was asked to run.
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "ecb-prepare-"))
    const log = path.join(bin, "calls")
    fs.writeFileSync(path.join(bin, "npm"), `#!/bin/sh\necho "$*" >> "${log}"\n`, { mode: 0o755 })
    const prepare = (env: Record<string, string>) =>
      execFileSync("sh", ["-c", pkg.scripts["prepare"]!], {
        env: { PATH: `${bin}${path.delimiter}${process.env["PATH"] ?? ""}`, ...env }
      })
    try {
      // The repository's own npm ci / npm pack: nothing (npm pack builds through prepack).
      prepare({})
      expect(fs.existsSync(log)).toBe(false)
      // pacote packing a git dependency sets npm_package_resolved.
      prepare({ npm_package_resolved: "git+https://example.invalid/effect-chat-bridge.git#abc" })
      expect(fs.readFileSync(log, "utf8")).toBe("run build\n")
    } finally {
      fs.rmSync(bin, { recursive: true, force: true })
    }
  })

  it("effect and @effect/* are peers, never dependencies", () => {
    expect(Object.keys(pkg.dependencies).filter((name) => name === "effect" || name.startsWith("@effect/"))).toEqual([])
    expect(requiredPeers.map(([name]) => name)).toContain("effect")
    // None of the Effect 3 line's packages is a peer any more.
    expect(Object.keys(pkg.peerDependencies).filter((name) => effect3Packages.includes(name))).toEqual([])
  })

  it("the main entry reaches no optional peer", () => {
    const modules = modulesReachedFrom(path.join(root, "src/index.ts"))
    const reached = packagesReachedFrom(path.join(root, "src/index.ts"))
    for (const optional of [...optionalPeers, ...effect3Packages]) expect(reached).not.toContain(optional)
    // effect/ai is part of effect now: the main entry still never loads it (test/ai/mainEntry.test.ts
    // checks the same at run time), nor node:sqlite (that is the agent-settings-sqlite entry's).
    expect([...modules].filter(isEffectAi)).toEqual([])
    expect(modules).not.toContain("node:sqlite")
    // Nor the cluster: effect/cluster and the socket runners are the cluster entry's.
    expect([...modules].filter((m) => m.includes("effect/cluster") || m.includes("NodeClusterSocket"))).toEqual([])
    // Everything it does reach is installed with the required peers or as a dependency.
    expect(notInstalled("src/index.ts")).toEqual([])
  })

  it("the benchmarks reach no test runner (they run under plain tsx)", () => {
    const benches = fs.readdirSync(path.join(root, "bench")).filter((f) => f.endsWith(".ts"))
    expect(benches).toContain("claude-pool.bench.ts")
    for (const bench of benches) {
      const reached = packagesReachedFrom(path.join(root, "bench", bench))
      expect([...reached].filter((name) => name.includes("vitest")), bench).toEqual([])
    }
  })

  it("each optional entry reaches its own peer", () => {
    expect(packagesReachedFrom(path.join(root, "src/drift-guard.ts"))).toContain("typescript")
    // Loaded at run time from a computed specifier, so that a missing peer is a typed error.
    expect(optionalPeers).toContain(AgentSdkPackage)
    // The SQLite store needs no peer on this line: Node's built-in node:sqlite, on effect/sql.
    const sqlite = modulesReachedFrom(path.join(root, "src/agent-settings-sqlite.ts"))
    expect(sqlite).toContain("node:sqlite")
    expect(notInstalled("src/agent-settings-sqlite.ts")).toEqual([])
    // effect-ai runs on effect/ai, inside effect: no peer of its own either.
    expect([...modulesReachedFrom(path.join(root, "src/effect-ai.ts"))].some(isEffectAi)).toBe(true)
    expect(notInstalled("src/effect-ai.ts")).toEqual([])
    // ag-ui serves through effect/ai's AgUiServer: no peer of its own.
    expect([...modulesReachedFrom(path.join(root, "src/ag-ui.ts"))].some(isEffectAi)).toBe(true)
    expect(notInstalled("src/ag-ui.ts")).toEqual([])
    // The cluster runs on effect/cluster and @effect/platform-node's socket runners: required peers.
    const cluster = [...modulesReachedFrom(path.join(root, "src/cluster.ts"))]
    expect(cluster.some((m) => m.includes("effect/cluster"))).toBe(true)
    expect(notInstalled("src/cluster.ts")).toEqual([])
  })
})
