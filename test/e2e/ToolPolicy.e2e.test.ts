/**
 * The tool policy's handling of MCP wildcards and of huge opt-out lists, on the pinned real
 * `claude` binary against the local fake Messages API: what the model is offered is the proof.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import { readdirSync } from "node:fs"
import type * as ClaudeLocal from "../../src/layers/ClaudeLocal.ts"
import * as ClaudeCodeCatalog from "../../src/registry/ClaudeCodeCatalog.ts"
import * as Registry from "../../src/registry/Registry.ts"
import { type SecretFile } from "../../src/services/SecretFile.ts"
import * as Tool from "../../src/services/Tool.ts"
import { type Sandbox, sandbox } from "../support/claudeCli.ts"
import { localClient, recordingSecretFile } from "../support/claudeClients.ts"
import * as Fake from "../support/FakeMessagesApi.ts"

const tool = (name: string) =>
  Tool.make(name, { description: name, parameters: {}, handler: () => Effect.succeed(name) })

const toolNames = (req: Fake.FakeRequest) => (req.body.tools ?? []).map((t) => t.name)

const clientIn = (box: Sandbox, options: ClaudeLocal.Options, secretFile: Layer.Layer<SecretFile>) =>
  localClient(box, { requestTimeout: "120 seconds", allowPermissionDenials: true, ...options }, { secretFile })

describe("ToolPolicy with the real claude binary", () => {
  it.live(
    "mcp__* (no always-on MCP tools): passed through, every MCP tool is gone, built-ins stay",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const secrets = recordingSecretFile(box)
        const chat = yield* clientIn(box, { toolPolicy: { disabledTools: ["mcp__*"] } }, secrets.layer)
        yield* chat.setTools([tool("lookup"), tool("write_note")])
        expect(yield* chat.chat("hi")).toBe("ok")
        const offered = toolNames(api.messageRequests()[0]!)
        expect(offered.filter((n) => n.startsWith("mcp__"))).toEqual([])
        expect(offered).toContain("Read")
        // The bridge server was not even mounted: no MCP config was written.
        expect(secrets.written).toEqual([])
      }),
    { timeout: 180_000 }
  )

  it.live(
    "mcp__* with an internal MCP tool: expanded, the user tools are blocked, the internal one stays",
    () =>
      Effect.gen(function*() {
        const registry = Registry.unsafeMake([
          ...ClaudeCodeCatalog.descriptors,
          Registry.mcpTool({ server: "gtb", wireName: "lookup", category: "context", exposure: "internal" }),
          Registry.mcpTool({ server: "gtb", wireName: "write_note", category: "context" })
        ])
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const secrets = recordingSecretFile(box)
        const chat = yield* clientIn(
          box,
          { toolPolicy: { registry, disabledTools: ["mcp__*", "mcp__gtb__*"] } },
          secrets.layer
        )
        yield* chat.setTools([tool("lookup"), tool("write_note"), tool("unlisted")])
        expect(yield* chat.chat("hi")).toBe("ok")
        const offered = toolNames(api.messageRequests()[0]!)
        expect(offered).toContain("mcp__gtb__lookup")
        expect(offered).not.toContain("mcp__gtb__write_note")
        // A tool the registry does not know is not covered by an expanded wildcard (reported as
        // partly-applied by resolveToolPolicy): it stays on.
        expect(offered).toContain("mcp__gtb__unlisted")
        expect(offered).toContain("Read")
      }),
    { timeout: 180_000 }
  )

  it.live(
    "a 100,000-entry disallow-list runs: a --settings file plus bounded argv, every list entry applied",
    () =>
      Effect.gen(function*() {
        const api = yield* Fake.make(() => ({ text: "ok" }))
        const box = yield* sandbox(api.url)
        const secrets = recordingSecretFile(box)
        // Opt-outs are bounded (1,000), so the long list comes from a registry: 99,998 disabled MCP
        // tools (about 2.6 MB, beyond the 2 MiB settings file limit, so argv carries the rest),
        // plus two opt-outs that matter: Write, which sorts first and lands in the settings file,
        // and a bridge tool of server `zz`, which sorts last and lands in argv.
        const many = Array.from({ length: 99_998 }, (_, i) => `tool_${String(i).padStart(6, "0")}`)
        const registry = Registry.unsafeMake([
          ...ClaudeCodeCatalog.descriptors,
          ...many.map((wireName) =>
            Registry.mcpTool({ server: "optout", wireName, category: "context", exposure: "disabled" })
          )
        ])
        const chat = yield* clientIn(
          box,
          { serverName: "zz", toolPolicy: { registry, disabledTools: ["Write", "mcp__zz__write_note"] } },
          secrets.layer
        )
        yield* chat.setTools([tool("lookup"), tool("write_note")])
        expect(yield* chat.chat("hi")).toBe("ok")
        const offered = toolNames(api.messageRequests()[0]!)
        expect(offered).toContain("mcp__zz__lookup")
        expect(offered).not.toContain("mcp__zz__write_note")
        expect(offered).not.toContain("Write")
        expect(offered).toContain("Read")
        const settings = secrets.written.map((c) => JSON.parse(c) as { permissions?: { deny: Array<string> } })
          .find((c) => c.permissions !== undefined)!
        expect(settings.permissions!.deny.length).toBeGreaterThan(50_000)
        expect(settings.permissions!.deny.length).toBeLessThan(100_000)
        expect(settings.permissions!.deny).toContain("Write")
        expect(settings.permissions!.deny).not.toContain("mcp__zz__write_note")
        expect(readdirSync(box.secrets)).toEqual([])
      }),
    { timeout: 300_000 }
  )
})
