/**
 * The skills a run switches off: linked skill folders are followed (both spellings of the file
 * are listed), and the search stops at the depth Codex nests skills in.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Skills from "../../../src/internal/codexCli/skills.ts"

describe("codexCli skills", () => {
  it("follows a linked skill folder, lists both paths, and stops six levels down", () => {
    const box = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "ecb-codex-skills2-")))
    try {
      const root = path.join(box, "skills")
      const shared = path.join(box, "shared", "linked")
      fs.mkdirSync(shared, { recursive: true })
      fs.writeFileSync(path.join(shared, "SKILL.md"), "---\nname: linked\n---\n")
      fs.mkdirSync(root, { recursive: true })
      fs.symlinkSync(shared, path.join(root, "linked"))
      const deepest = path.join(root, "1", "2", "3", "4", "5", "6", "SKILL.md")
      const tooDeep = path.join(root, "1", "2", "3", "4", "5", "6", "7", "SKILL.md")
      for (const file of [deepest, tooDeep]) {
        fs.mkdirSync(path.dirname(file), { recursive: true })
        fs.writeFileSync(file, "x")
      }
      // A link at the depth limit is not followed either.
      fs.symlinkSync(shared, path.join(root, "1", "2", "3", "4", "5", "6", "link"), "dir")
      expect(Skills.skillFiles([root, path.join(box, "missing")])).toEqual([
        path.join(root, "1", "2", "3", "4", "5", "6", "SKILL.md"),
        path.join(root, "linked", "SKILL.md"),
        path.join(shared, "SKILL.md")
      ].sort())
    } finally {
      fs.rmSync(box, { recursive: true, force: true })
    }
  })
})
