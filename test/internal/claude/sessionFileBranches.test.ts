import { describe, expect, it } from "@effect/vitest"
import { realpathSync } from "node:fs"
import { homedir } from "node:os"
import { join, resolve } from "node:path"
import * as SessionFile from "../../../src/internal/claude/sessionFile.ts"

describe("sessionFile paths", () => {
  it("configDir: a variable the changes unset is not read from this process; HOME unset is the user's home", () => {
    expect(SessionFile.configDir({ CLAUDE_CONFIG_DIR: undefined, HOME: undefined })).toBe(join(homedir(), ".claude"))
  })

  it("configDir: a variable the changes do not mention is this process's", () => {
    const saved = process.env["CLAUDE_CONFIG_DIR"]
    process.env["CLAUDE_CONFIG_DIR"] = "/from/process"
    try {
      expect(SessionFile.configDir({ HOME: "/h" })).toBe("/from/process")
      expect(SessionFile.configDir({ CLAUDE_CONFIG_DIR: "/from/changes" })).toBe("/from/changes")
    } finally {
      if (saved === undefined) delete process.env["CLAUDE_CONFIG_DIR"]
      else process.env["CLAUDE_CONFIG_DIR"] = saved
    }
  })

  it("sessionPath: the working directory defaults to this process's, resolved like the CLI does", () => {
    expect(SessionFile.sessionPath("/cfg", undefined, "s-1")).toBe(
      join("/cfg", "projects", SessionFile.projectDirName(realpathSync(process.cwd())), "s-1.jsonl")
    )
  })

  it("sessionPath: a directory that does not exist (yet) is named from its resolved path", () => {
    const missing = join("does-not-exist-here", "sub dir")
    expect(SessionFile.sessionPath("/cfg", missing, "s-2")).toBe(
      join("/cfg", "projects", SessionFile.projectDirName(resolve(missing)), "s-2.jsonl")
    )
    expect(SessionFile.projectDirName(resolve(missing))).not.toMatch(/[^a-zA-Z0-9-]/)
  })
})
