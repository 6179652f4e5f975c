import { describe, expect, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Headers from "effect/http/Headers"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import { validateBaseUrl } from "../../../src/internal/http/baseUrl.ts"
import { causeDetail, isAuthStatus, scrub } from "../../../src/internal/http/errorDetail.ts"
import { parseRetryAfter } from "../../../src/internal/http/retry.ts"

describe("validateBaseUrl (shared by every HTTP provider)", () => {
  const table: ReadonlyArray<readonly [string, boolean, string | boolean]> = [
    // [url, allowInsecureHttp, expected: normalized URL or `false` for refused]
    ["https://api.anthropic.com", false, "https://api.anthropic.com"],
    ["https://api.openai.com/v1/", false, "https://api.openai.com/v1"],
    ["https://proxy.example.com:8443/openai/v1", false, "https://proxy.example.com:8443/openai/v1"],
    ["http://127.0.0.1:11434/v1", false, "http://127.0.0.1:11434/v1"],
    ["http://127.8.9.10:8080", false, "http://127.8.9.10:8080"],
    ["http://localhost:1234/v1", false, "http://localhost:1234/v1"],
    ["http://[::1]:8000", false, "http://[::1]:8000"],
    ["http://llm.internal:8000/v1", false, false],
    ["http://llm.internal:8000/v1", true, "http://llm.internal:8000/v1"],
    ["http://localhost.evil.com", false, false],
    ["http://127.0.0.1.nip.io", false, false],
    ["https://user:pass@api.openai.com", false, false],
    ["https://user@api.openai.com", false, false],
    ["https://@api.openai.com", false, false],
    ["ftp://api.openai.com", false, false],
    ["file:///etc/passwd", false, false],
    ["api.openai.com/v1", false, false],
    ["", false, false],
    ["https://api.openai.com/v1\n", false, false],
    ["https://api.openai.com/v1\r\nX-Injected: 1", false, false],
    [" https://api.openai.com", false, false],
    ["https://api.openai.com/\u0000", false, false],
    ["https://api.openai.com/v1?key=secret", false, false],
    ["https://api.openai.com/v1#frag", false, false],
    [`https://example.com/${"a".repeat(2100)}`, false, false],
    ["https:///path-only", false, false]
  ]
  for (const [url, insecure, expected] of table) {
    it(`${JSON.stringify(url.length > 60 ? `${url.slice(0, 60)}…` : url)} insecure=${insecure} → ${expected === false ? "refused" : "accepted"}`, () => {
      const result = validateBaseUrl(url, { allowInsecureHttp: insecure })
      if (expected === false) {
        expect(Result.isFailure(result)).toBe(true)
        // The reason never echoes the URL (it may carry a secret).
        if (Result.isFailure(result) && url.length > 0) expect(result.failure).not.toContain(url)
      } else {
        expect(result).toEqual(Result.succeed(expected))
      }
    })
  }
})

describe("parseRetryAfter", () => {
  const h = (record: Record<string, string>) => Headers.fromInput(record)
  it("reads seconds (also fractional), milliseconds and HTTP dates; ignores junk and huge values", () => {
    expect(parseRetryAfter(h({ "retry-after": "2" }))).toEqual(Option.some(Duration.millis(2000)))
    expect(parseRetryAfter(h({ "retry-after": "0.25" }))).toEqual(Option.some(Duration.millis(250)))
    expect(parseRetryAfter(h({ "retry-after-ms": "40", "retry-after": "9" }))).toEqual(Option.some(Duration.millis(40)))
    const now = Date.parse("2025-01-01T00:00:00Z")
    expect(parseRetryAfter(h({ "retry-after": "Wed, 01 Jan 2025 00:00:03 GMT" }), now)).toEqual(
      Option.some(Duration.millis(3000))
    )
    expect(parseRetryAfter(h({ "retry-after": "soon" }))).toEqual(Option.none())
    expect(parseRetryAfter(h({ "retry-after": "3600" }))).toEqual(Option.none())
    expect(parseRetryAfter(h({}))).toEqual(Option.none())
  })
})

describe("scrub", () => {
  it("removes every occurrence of the secret", () => {
    expect(scrub("key sk-1 and sk-1 again", Redacted.make("sk-1"))).toBe("key [redacted] and [redacted] again")
    expect(scrub("nothing", undefined)).toBe("nothing")
  })
})

describe("causeDetail", () => {
  it("digs the useful part out of undici's \"fetch failed\"", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })
    expect(causeDetail(new TypeError("fetch failed", { cause: refused }))).toBe("connect ECONNREFUSED 127.0.0.1:1")
    // Happy eyeballs: an AggregateError with no message of its own, one error per address.
    const aggregate = Object.assign(new AggregateError([refused], ""), { code: "ECONNREFUSED" })
    expect(causeDetail(new TypeError("fetch failed", { cause: aggregate }))).toBe("connect ECONNREFUSED 127.0.0.1:1")
    // Only a code.
    expect(causeDetail({ code: "ENOTFOUND" })).toBe("ENOTFOUND")
    expect(causeDetail(new TypeError("fetch failed"))).toBeUndefined()
    expect(causeDetail(undefined)).toBeUndefined()
  })

  it("401 and 403 are authentication statuses; others are not", () => {
    expect([401, 403, 400, 404, 429].map(isAuthStatus)).toEqual([true, true, false, false, false])
  })
})
