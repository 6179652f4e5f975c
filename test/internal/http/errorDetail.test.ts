import { describe, expect, it } from "@effect/vitest"
import * as Redacted from "effect/Redacted"
import {
  bounded,
  causeDetail,
  errorDetail,
  isAuthStatus,
  MaxErrorDetail,
  scrub
} from "../../../src/internal/http/errorDetail.ts"

describe("errorDetail.errorDetail", () => {
  it("the vendors' { error: { message } } gives the message", () => {
    expect(errorDetail(JSON.stringify({ error: { message: "bad key", type: "auth" } }))).toBe("bad key")
  })

  it("a string error is taken as it is", () => {
    expect(errorDetail(JSON.stringify({ error: "quota used up" }))).toBe("quota used up")
  })

  it("any other body is quoted whole", () => {
    for (
      const body of [
        "<html>502 Bad Gateway</html>",
        JSON.stringify({ error: { code: 5 } }),
        JSON.stringify({ error: { message: 42 } }),
        JSON.stringify({ error: null }),
        JSON.stringify({ detail: "no error field" }),
        JSON.stringify("just a string"),
        "null",
        ""
      ]
    ) {
      expect(errorDetail(body)).toBe(body)
    }
  })
})

describe("errorDetail.causeDetail", () => {
  it("digs the useful part out of undici's fetch failed", () => {
    const error = new TypeError("fetch failed", {
      cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })
    })
    expect(causeDetail(error)).toBe("connect ECONNREFUSED 127.0.0.1:1")
  })

  it("follows an AggregateError's first error; a code stands in for an empty message", () => {
    const inner = Object.assign(new Error(""), { code: "ENETUNREACH" })
    const aggregate = new AggregateError([inner, new Error("second address")], "")
    const error = new TypeError("fetch failed", { cause: aggregate })
    expect(causeDetail(error)).toBe("ENETUNREACH")
  })

  it("a code already named by a message is not repeated", () => {
    const error = new Error("fetch failed", {
      cause: Object.assign(new Error("getaddrinfo ENOTFOUND example.invalid"), {
        cause: { code: "ENOTFOUND" }
      })
    })
    expect(causeDetail(error)).toBe("getaddrinfo ENOTFOUND example.invalid")
  })

  it("nothing useful: undefined (transport wrappers and non-objects say nothing)", () => {
    expect(causeDetail(new Error("fetch failed"))).toBeUndefined()
    expect(causeDetail({ message: "Transport error (POST https://x)" })).toBeUndefined()
    expect(causeDetail("a string")).toBeUndefined()
    expect(causeDetail(undefined)).toBeUndefined()
    expect(causeDetail({ code: 12, message: "" })).toBeUndefined()
  })

  it("stops after five levels of causes", () => {
    let error: { message: string; cause?: unknown } = { message: "level 6" }
    for (let level = 5; level >= 1; level--) error = { message: `level ${level}`, cause: error }
    expect(causeDetail(error)).toBe("level 5")
  })
})

describe("errorDetail helpers", () => {
  it("401 and 403 are auth statuses, others are not", () => {
    expect([401, 403, 400, 429, 500].map(isAuthStatus)).toEqual([true, true, false, false, false])
  })

  it("scrub replaces every occurrence of the key, and leaves text alone without a key", () => {
    const key = Redacted.make("sk-secret")
    expect(scrub("key sk-secret and sk-secret again", key)).toBe("key [redacted] and [redacted] again")
    expect(scrub("key sk-secret", undefined)).toBe("key sk-secret")
    expect(scrub("nothing to hide", Redacted.make(""))).toBe("nothing to hide")
  })

  it("bounded cuts at MaxErrorDetail characters with an ellipsis", () => {
    expect(bounded("short")).toBe("short")
    expect(bounded("x".repeat(MaxErrorDetail))).toBe("x".repeat(MaxErrorDetail))
    expect(bounded("x".repeat(MaxErrorDetail + 1))).toBe(`${"x".repeat(MaxErrorDetail)}…`)
  })
})
