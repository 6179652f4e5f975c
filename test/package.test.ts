import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { AgentSdkPackage } from "../src/internal/claudeAgentSdk.js"
import * as AgentSettingsSqlite from "../src/layers/AgentSettingsSqlite.js"
import { packagesReachedFrom } from "./support/importGraph.js"

// What ships: entry points, peers and the README's install line agree, and the main entry's
// import graph reaches no optional peer. (The tarball itself is exercised by scripts/consumer-test.sh.)
const root = path.resolve(__dirname, "..")
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
  readonly exports: Record<string, { readonly types: string; readonly default: string } | string>
  readonly peerDependencies: Record<string, string>
  readonly peerDependenciesMeta: Record<string, { readonly optional: boolean }>
  readonly dependencies: Record<string, string>
  readonly files: ReadonlyArray<string>
}
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8")
const requiredPeers = Object.entries(pkg.peerDependencies).filter(([name]) =>
  pkg.peerDependenciesMeta[name]?.optional !== true
)
const optionalPeers = Object.keys(pkg.peerDependencies).filter((name) => pkg.peerDependenciesMeta[name]?.optional)

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
    const script = fs.readFileSync(path.join(root, "scripts/consumer-test.sh"), "utf8")
    for (const spec of named) expect(script).toContain(spec)
  })

  it("effect and @effect/* are peers, never dependencies", () => {
    expect(Object.keys(pkg.dependencies).filter((name) => name === "effect" || name.startsWith("@effect/"))).toEqual([])
    expect(requiredPeers.map(([name]) => name)).toContain("effect")
  })

  it("the main entry reaches no optional peer", () => {
    const reached = packagesReachedFrom(path.join(root, "src/index.ts"))
    for (const optional of [...optionalPeers, "better-sqlite3", "@effect/ai"]) expect(reached).not.toContain(optional)
    // Everything it does reach is installed with the required peers or as a dependency.
    const installed = new Set([...requiredPeers.map(([name]) => name), ...Object.keys(pkg.dependencies)])
    expect([...reached].filter((name) => !installed.has(name))).toEqual([])
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
    // These two are loaded at run time from a computed specifier, so that a missing peer is a typed error.
    expect(optionalPeers).toContain(AgentSettingsSqlite.peer)
    expect(optionalPeers).toContain(AgentSdkPackage)
  })
})
