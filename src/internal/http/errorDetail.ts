/**
 * What an HTTP provider's errors may say: the useful part of a transport failure, the vendor's
 * own error message, bounded in length, with the API key scrubbed out.
 */
import * as Redacted from "effect/Redacted"

/** Statuses meaning the credentials were refused: `ProviderError` reason `AuthenticationError`. */
export const isAuthStatus = (status: number): boolean => status === 401 || status === 403

/**
 * What the transport said, down its `cause` chain: undici's "fetch failed" hides the useful part
 * (`connect ECONNREFUSED 127.0.0.1:8080`, `getaddrinfo ENOTFOUND host`) one or two levels down.
 */
export const causeDetail = (error: unknown): string | undefined => {
  const parts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const { cause, code, errors, message } = current as {
      readonly cause?: unknown
      readonly code?: unknown
      readonly errors?: unknown
      readonly message?: unknown
    }
    if (typeof message === "string" && message !== "" && !parts.includes(message)) parts.push(message)
    else if (typeof code === "string" && !parts.some((p) => p.includes(code))) parts.push(code)
    // Happy-eyeballs connects fail with an AggregateError: one error per address tried.
    current = cause ?? (Array.isArray(errors) ? errors[0] : undefined)
  }
  const useful = parts.filter((p) => p !== "fetch failed" && !/^Transport error/.test(p))
  return useful.length === 0 ? undefined : useful.at(-1)
}

/** Longest vendor text quoted in an error message. */
export const MaxErrorDetail = 300

/** Replaces the secret (if it ever shows up, e.g. echoed by a server) with `[redacted]`. */
export const scrub = (text: string, secret: Redacted.Redacted<string> | undefined): string => {
  if (secret === undefined) return text
  const value = Redacted.value(secret)
  return value.length === 0 ? text : text.split(value).join("[redacted]")
}

/** The error message the vendors put in an error body: `{ error: { message } }` for all three; else the body. */
export const errorDetail = (body: string): string => {
  try {
    const parsed = JSON.parse(body) as unknown
    if (typeof parsed === "object" && parsed !== null && "error" in parsed) {
      const error = parsed.error
      if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
        return error.message
      }
      if (typeof error === "string") return error
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return body
}

/** `text`, cut at `MaxErrorDetail` characters. */
export const bounded = (text: string): string =>
  text.length > MaxErrorDetail ? `${text.slice(0, MaxErrorDetail)}…` : text
