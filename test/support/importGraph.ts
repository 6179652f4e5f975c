/** A source file's import graph, read from its text: which packages it reaches at run time. */
import * as fs from "node:fs"
import * as path from "node:path"

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

/**
 * Every bare specifier (a package or one of its subpaths, such as `effect/ai/Tool`, or a `node:`
 * builtin) the source file `entry` (an absolute path) reaches through value imports, following
 * relative ones.
 */
export const modulesReachedFrom = (entry: string): Set<string> => {
  const seen = new Set<string>()
  const modules = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const specifier of valueImports(file)) {
      if (specifier.startsWith(".")) visit(path.resolve(path.dirname(file), specifier.replace(/\.js$/, ".ts")))
      else modules.add(specifier)
    }
  }
  visit(entry)
  return modules
}

/** Every package the source file `entry` (an absolute path) reaches through value imports, following relative ones. */
export const packagesReachedFrom = (entry: string): Set<string> => {
  const packages = new Set<string>()
  for (const specifier of modulesReachedFrom(entry)) {
    if (specifier.startsWith("node:")) continue
    const parts = specifier.split("/")
    packages.add(specifier.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]!)
  }
  return packages
}
