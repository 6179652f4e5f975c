import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { ChatClient, Content, Scripted, Tool } from "../../src/index.ts"
import { claudeBinary, sandbox } from "../support/claudeCli.ts"
import * as Fake from "../support/FakeMessagesApi.ts"
import { readSnippets, runnable, snippetDir, typecheckSnippets, writeSnippets } from "../support/readmeSnippets.ts"
import { runTsx } from "../support/runTsx.ts"

// The README's programs, copied out of README.md (and the guides' out of docs/*.md) on each run:
// if one stops compiling under the strict flags or stops doing what its comments say, this fails.
const snippets = readSnippets()
beforeAll(() => writeSnippets(snippets))
afterAll(() => fs.rmSync(snippetDir, { recursive: true, force: true }))

const run = (name: string, env: Record<string, string> = {}) => runTsx(runnable(name), env)

describe("README usage", () => {
  it("the first screen is three complete programs: tools, Claude Code, the policy", () => {
    const readme = fs.readFileSync("README.md", "utf8")
    expect(snippets.filter((s) => s.source === "README.md").map((s) => s.name)).toEqual([
      "tools",
      "claude-code",
      "policy"
    ])
    // All three come before the reference material.
    expect(readme.indexOf("<!-- snippet: policy -->")).toBeLessThan(readme.indexOf("## Requirements"))
    expect(snippets.map((s) => s.name)).toEqual(expect.arrayContaining(["fallback", "effect-ai"]))
  })

  it("every relative link of the README and its guides names a file that exists", () => {
    const pages = ["README.md", ...fs.readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
    const broken = pages.flatMap((page) =>
      [...fs.readFileSync(page, "utf8").matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
        .map((m) => m[1]!)
        .filter((target) => !/^[a-z]+:/.test(target))
        .filter((target) => !fs.existsSync(path.join(path.dirname(page), target)))
        .map((target) => `${page} → ${target}`)
    )
    expect(broken).toEqual([])
  })

  it("a shipped page links only to files that ship, and names repository files as such", () => {
    const pkg = JSON.parse(fs.readFileSync("package.json", "utf8")) as { readonly files: ReadonlyArray<string> }
    const globs = pkg.files.map((glob) =>
      new RegExp(
        `^${
          glob.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*\//g, "\u0000").replace(/\*/g, "[^/]*").replace(
            /\u0000/g,
            "(?:.*/)?"
          )
        }$`
      )
    )
    const ships = (file: string) => globs.some((glob) => glob.test(file))
    const pages = ["README.md", ...fs.readdirSync("docs").filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
    expect(pages.every(ships)).toBe(true)
    expect(ships("examples/cluster-runner.ts")).toBe(false)
    const unshipped = pages.flatMap((page) =>
      [...fs.readFileSync(page, "utf8").matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)]
        .map((m) => m[1]!)
        .filter((target) => !/^[a-z]+:/.test(target))
        .map((target) => path.normalize(path.join(path.dirname(page), target)))
        .filter((file) => !ships(file))
        .map((file) => `${page} → ${file}`)
    )
    expect(unshipped).toEqual([])
    // A guide may mention the repository's own files (examples, tests, benches, scripts) only in
    // a paragraph that says they are the repository's: a reader of the installed package has none.
    // docs/effect4.md, the port's record, says so once for the whole page, at its top.
    const repositoryOnly = /(?<![\w/.-])(?:examples|test|bench|scripts|src)\/[\w.*{-]|\bnpm (?:run|start|test)\b/
    const unmarked = pages.filter((page) => page.startsWith("docs/") && page !== "docs/effect4.md").flatMap((page) => {
      const blocks = fs.readFileSync(page, "utf8").split(/\n{2,}/)
      return blocks.flatMap((block, i) => {
        const context = block.startsWith("```") ? `${blocks[i - 1] ?? ""}\n${block}` : block
        return repositoryOnly.test(block) && !/repository/i.test(context) ? [`${page}: ${block.slice(0, 100)}`] : []
      })
    })
    expect(unmarked).toEqual([])
    const effect4 = fs.readFileSync("docs/effect4.md", "utf8").split(/\n{2,}/).slice(0, 3).join("\n")
    expect(effect4).toMatch(/paths on this page are the repository's/i)
  })

  it.live(
    "every snippet of the README and docs type-checks under the README's strict flags",
    () =>
      Effect.gen(function*() {
        const out = yield* typecheckSnippets
        expect(out.stdout + out.stderr).toBe("")
        expect(out.code).toBe(0)
      }),
    240_000
  )

  it.live("the add example answers 5 after calling the tool", () =>
    Effect.gen(function*() {
      const out = yield* run("tools")
      expect(out.stderr).toBe("")
      expect(out.stdout.trim()).toBe("5")
    }), 120_000)

  it.live(
    "the tools snippet runs on ClaudeApi when ANTHROPIC_API_KEY is set, the tool's result reaching the model",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(
          Fake.callsThenAnswers({ name: "add", input: { a: 2, b: 3 } }, (results) => results[0]!.content)
        )
        const out = yield* run("tools", { ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: api.url })
        expect(out.stderr).toBe("")
        expect(out.stdout.trim()).toBe("5")
        const [first, second] = api.messageRequests()
        expect(first!.body.tools?.map((t) => t.name)).toEqual(["add"])
        expect(Fake.toolResults(second!)).toMatchObject([{ content: "5", is_error: false }])
      }),
    120_000
  )

  it.live(
    "the Claude Code snippet: the real claude calls the app's tool over the bridge, Bash and WebFetch withheld",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(
          Fake.callsThenAnswers({ name: "mcp__gtb__order_status", input: { orderId: "A-42" } }, (results) =>
            `Order A-42: ${results[0]!.content}`)
        )
        const box = yield* sandbox(api.url)
        const out = yield* run("claude-code", { ...box.env, CLAUDE_BINARY: claudeBinary, CLAUDE_CWD: box.cwd })
        expect(out.stderr).toBe("")
        expect(out.stdout).toContain(`Order A-42: {"orderId":"A-42","status":"shipped"}`)
        const tools = api.messageRequests().find((r) =>
          r.body.tools?.some((t) => t.name === "mcp__gtb__order_status")
        )
        const names = tools?.body.tools?.map((t) => t.name) ?? []
        expect(names).toContain("Read")
        for (const withheld of ["Bash", "Edit", "Write", "WebFetch", "WebSearch"]) expect(names).not.toContain(withheld)
      }),
    120_000
  )

  it.live("the policy snippet prints the claude -p flags and no ignored opt-out", () =>
    Effect.gen(function*() {
      const out = yield* run("policy")
      expect(out.stderr).toBe("")
      const disallowed = /'--disallowedTools',\s*'([^']*)'/.exec(out.stdout)?.[1]?.split(",") ?? []
      expect(disallowed).toEqual(expect.arrayContaining(["Bash", "WebFetch", "mcp__docs__*"]))
      expect(disallowed).not.toContain("Read")
      expect(out.stdout).toMatch(/'--allowedTools',\s*'[^']*mcp__memory__remember/)
      expect(out.stdout.trim().endsWith("[]")).toBe(true)
    }), 120_000)

  it.effect("the media example: a prompt of parts reaches the model in order; a tool returns an image", () =>
    Effect.gen(function*() {
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47])
      const screenshot = Tool.make("screenshot", {
        description: "Takes a screenshot",
        parameters: {},
        handler: () =>
          Effect.succeed(Content.toolContent([Content.text("the screen"), Content.image(png, "image/png")]))
      })
      const seen: Array<unknown> = []
      const model = Scripted.layer({
        respond: ({ history }) =>
          Effect.sync(() => {
            seen.push(history.at(-1))
            return history.at(-1)!.role === "user"
              ? Scripted.toolCalls({ name: "screenshot" })
              : Scripted.text("a button is cut off")
          })
      })
      const answer = yield* Effect.gen(function*() {
        const chat = yield* ChatClient.ChatClient
        yield* chat.setTools([screenshot])
        return yield* chat.chat([
          Content.text("What is wrong in this screenshot, given the spec?"),
          Content.image(png, "image/png"),
          Content.document(png, { title: "spec.pdf" })
        ])
      }).pipe(Effect.provide(model))
      expect(answer).toBe("a button is cut off")
      expect(seen[0]).toMatchObject({ parts: [{ type: "text" }, { type: "image" }, { type: "document" }] })
      expect(seen[1]).toMatchObject({
        role: "tool",
        results: [{ content: "the screen", images: [Content.image(png, "image/png")] }]
      })
    }))
})
