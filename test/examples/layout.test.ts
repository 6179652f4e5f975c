import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"

describe("examples/", () => {
  it("holds only runnable examples, each saying how to run it; shared helpers live in examples/support/", () => {
    const all = fs.readdirSync("examples", { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name)
    const files = all.filter((name) => name.endsWith(".ts"))
    expect(files.length).toBeGreaterThan(0)
    // Anything else is an asset of one example (the settings page's HTML), named by it.
    for (const asset of all.filter((name) => !name.endsWith(".ts"))) {
      const owners = files.filter((file) => fs.readFileSync(`examples/${file}`, "utf8").includes(asset))
      expect(owners, asset).toHaveLength(1)
    }
    for (const file of files) {
      const text = fs.readFileSync(`examples/${file}`, "utf8")
      expect(text, file).toContain(`tsx examples/${file}`)
      // A runnable example starts its program; a helper only exports things.
      expect(text, file).toMatch(/\brunMain\b|\brunExample\b/)
    }
    expect(fs.readdirSync("examples/support").sort()).toEqual([
      "chatLog.ts",
      "chatPage.ts",
      "providers.ts",
      "weatherTools.ts"
    ])
  })
})
