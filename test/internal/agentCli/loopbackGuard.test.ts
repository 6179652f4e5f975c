import { describe, expect, it } from "@effect/vitest"
import { isAllowedHost, isAllowedOrigin, makeBearerCheck } from "../../../src/internal/agentCli/loopbackGuard.ts"

describe("loopbackGuard", () => {
  it("accepts only loopback hosts with the bound port", () => {
    for (const host of ["127.0.0.1:4321", "localhost:4321", "LOCALHOST:4321", "[::1]:4321"]) {
      expect(isAllowedHost(host, 4321), host).toBe(true)
    }
    for (
      const host of [
        undefined,
        "",
        "127.0.0.1",
        "localhost",
        "[::1]",
        "127.0.0.1:4322",
        "127.0.0.1:04321x",
        "evil.example:4321",
        "localhost.evil.example:4321",
        "127.0.0.2:4321",
        "0.0.0.0:4321",
        "[::1]:",
        "user@127.0.0.1:4321"
      ]
    ) {
      expect(isAllowedHost(host, 4321), String(host)).toBe(false)
    }
  })

  it("accepts no Origin or a loopback one, refuses the rest", () => {
    for (const origin of [undefined, "http://127.0.0.1:3000", "http://localhost", "https://[::1]:8443"]) {
      expect(isAllowedOrigin(origin), String(origin)).toBe(true)
    }
    for (
      const origin of [
        "null",
        "http://evil.example",
        "http://127.0.0.1.evil.example",
        "file://",
        "ftp://localhost",
        "garbage"
      ]
    ) {
      expect(isAllowedOrigin(origin), origin).toBe(false)
    }
  })

  it("checks the bearer token exactly", () => {
    const check = makeBearerCheck("s3cret-token")
    expect(check("Bearer s3cret-token")).toBe(true)
    expect(check("bearer s3cret-token")).toBe(true)
    for (
      const header of [
        undefined,
        "",
        "Bearer",
        "Bearer ",
        "Bearer s3cret-token2",
        "Bearer s3cret-toke",
        "Bearer S3CRET-TOKEN",
        "Basic s3cret-token",
        "s3cret-token",
        "Bearer s3cret-token extra"
      ]
    ) {
      expect(check(header), String(header)).toBe(false)
    }
  })
})
