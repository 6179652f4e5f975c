import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { AgentSdkPackage } from "../src/internal/claudeAgentSdk.js"
import * as AgentSettingsSqlite from "../src/layers/AgentSettingsSqlite.js"

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

/** Value imports (not `import type`) and re-exports of a source file, as written. */
const valueImports = (file: string): Array<string> => {
  // Comments go first: TSDoc examples import from the package itself.
  const source = fs.readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "")
  const specifiers: Array<string> = []
  for (const match of source.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+"([^"]+)"/gms)) {
    specifiers.push(match[1]!)
  }
  for (const match of source.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)) specifiers.push(match[1]!)
  return specifiers
}

/** Every package a source entry reaches through value imports, following relative ones. */
const packagesReachedFrom = (entry: string): Set<string> => {
  const seen = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const specifier of valueImports(file)) {
      if (specifier.startsWith(".")) visit(path.resolve(path.dirname(file), specifier.replace(/\.js$/, ".ts")))
      else if (!specifier.startsWith("node:")) {
        const parts = specifier.split("/")
        packages.add(specifier.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!)
      }
    }
  }
  visit(path.join(root, entry))
  return packages
}

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
    const reached = packagesReachedFrom("src/index.ts")
    for (const optional of [...optionalPeers, "better-sqlite3", "@effect/ai"]) expect(reached).not.toContain(optional)
    // Everything it does reach is installed with the required peers or as a dependency.
    const installed = new Set([...requiredPeers.map(([name]) => name), ...Object.keys(pkg.dependencies)])
    expect([...reached].filter((name) => !installed.has(name))).toEqual([])
  })

  it("each optional entry reaches its own peer", () => {
    expect(packagesReachedFrom("src/drift-guard.ts")).toContain("typescript")
    // These two are loaded at run time from a computed specifier, so that a missing peer is a typed error.
    expect(optionalPeers).toContain(AgentSettingsSqlite.peer)
    expect(optionalPeers).toContain(AgentSdkPackage)
  })
})
