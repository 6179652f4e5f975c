import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** Runs the example offline (no provider variables) with `env` added. */
const runExample = (env: Record<string, string>) =>
  Effect.callback<{ code: number | null; stdout: string; stderr: string }>((resume) => {
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(AI_PROVIDER|ANTHROPIC_|OPENAI_|GEMINI_|OTEL_|CLAUDE_)/.test(k))
    )
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "examples/telemetry.ts"],
      { env: { ...clean, ...env }, timeout: 90_000 },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : (child.exitCode ?? 1), stdout, stderr }))
    )
  })

/** A loopback OTLP/HTTP receiver keeping each request's path and JSON body. */
const receiver = Effect.acquireRelease(
  Effect.callback<{ url: string; received: Array<{ path: string; body: string; key: unknown }>; close: () => void }>(
    (resume) => {
      const received: Array<{ path: string; body: string; key: unknown }> = []
      const server = createServer((req, res) => {
        let body = ""
        req.on("data", (chunk) => (body += String(chunk)))
        req.on("end", () => {
          received.push({ path: req.url ?? "", body, key: req.headers["x-collector-key"] })
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, received, close: () => server.close() }))
      })
    }
  ),
  (r) => Effect.sync(r.close)
)

describe("examples/telemetry.ts", () => {
  it.live("prints the trace (chat > turn > tool spans) and the metrics to the console", () =>
    Effect.gen(function*() {
      const out = yield* runExample({})
      expect(out.code, out.stderr).toBe(0)
      expect(out.stdout).toContain("model: Paris:")
      expect(out.stdout).toContain("name: 'ChatClient.chat'")
      expect(out.stdout).toContain("name: 'Tool.executeTool'")
      expect(out.stdout).toContain("'gen_ai.usage.input_tokens': 412")
      expect(out.stdout).toContain("'gen_ai.tool.call.id': 'call_atlantis'")
      expect(out.stdout).toContain("gen_ai.client.token.usage")
      expect(out.stdout).toContain("chat.tool.errors")
    }), { timeout: 120_000 })

  it.live(
    "exports to the OTLP endpoint of OTEL_EXPORTER_OTLP_ENDPOINT, with its headers",
    () =>
      Effect.gen(function*() {
        const otlp = yield* receiver
        const out = yield* runExample({
          OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
          OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=abc"
        })
        expect(out.code, out.stderr).toBe(0)
        const traces = otlp.received.filter((r) => r.path === "/v1/traces").map((r) => r.body).join("\n")
        const metrics = otlp.received.filter((r) => r.path === "/v1/metrics").map((r) => r.body).join("\n")
        expect(traces).toContain("\"ChatClient.chat\"")
        expect(traces).toContain("\"Tool.executeTool\"")
        expect(traces).toContain("gen_ai.usage.output_tokens")
        expect(metrics).toContain("gen_ai.client.token.usage")
        expect(metrics).toContain("chat.tool.duration")
        expect(otlp.received.every((r) => r.key === "abc")).toBe(true)
      }),
    { timeout: 120_000 }
  )
})
