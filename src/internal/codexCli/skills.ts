/**
 * The skills a Codex CLI run could load. Codex expands a `$name` mention in the user's text into
 * the named skill's `SKILL.md` (as an extra user message), with no escape and no switch for the
 * expansion itself; a skill switched off in `skills.config` is not expanded. So each run switches
 * off every `SKILL.md` under the roots Codex reads: its home, the user's `.agents`, the admin
 * directory, and `.codex/skills` / `.agents/skills` of the working directory and its ancestors.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** How deep below a root a `SKILL.md` is looked for (Codex nests skills in folders). */
const MaxDepth = 6

/** The directories Codex 0.171 reads skills from, for a run in `cwd`. */
export const roots = (codexHome: string, home: string, cwd: string): Array<string> => {
  const found = [path.join(codexHome, "skills"), path.join(home, ".agents", "skills"), "/etc/codex/skills"]
  for (let dir = path.resolve(cwd);; dir = path.dirname(dir)) {
    found.push(path.join(dir, ".codex", "skills"), path.join(dir, ".agents", "skills"))
    if (path.dirname(dir) === dir) break
  }
  return found
}

const walk = (dir: string, depth: number, out: Set<string>): void => {
  let entries: Array<fs.Dirent>
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return // Missing or unreadable: the CLI cannot load from it either.
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name)
    if (entry.isFile() && entry.name === "SKILL.md") {
      out.add(full)
      // The CLI may name a skill by its resolved path: switch that spelling off too.
      try {
        out.add(fs.realpathSync(full))
      } catch {
        // Gone meanwhile.
      }
    } else if ((entry.isDirectory() || entry.isSymbolicLink()) && depth < MaxDepth) {
      walk(full, depth + 1, out)
    }
  }
}

/** Every `SKILL.md` under `dirs`, sorted. */
export const skillFiles = (dirs: ReadonlyArray<string>): Array<string> => {
  const out = new Set<string>()
  for (const dir of dirs) walk(dir, 0, out)
  return Array.from(out).sort()
}
