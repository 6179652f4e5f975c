/**
 * Base-URL validation for the HTTP providers: which provider endpoints are accepted, and the one
 * part of them (the host) that is ever logged.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { ConfigurationError, ProviderError } from "../../services/ChatClient.ts"

/** Longest base URL accepted; real endpoints are far shorter, and a bound keeps logs and errors sane. */
export const MaxBaseUrlLength = 2048

const loopbackHost = (hostname: string): boolean => {
  const h = hostname.toLowerCase()
  if (h === "localhost" || h.endsWith(".localhost") || h === "[::1]") return true
  // The whole 127.0.0.0/8 block is loopback.
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/**
 * Validates a provider base URL. Accepted: `https`; `http` to a loopback host (a local
 * OpenAI-compatible server, a test fake); `http` anywhere only with `allowInsecureHttp`. Refused:
 * other schemes, userinfo (credentials belong in headers, and would end up in logs), control
 * characters or whitespace, a query or fragment, a missing host, more than `MaxBaseUrlLength`
 * characters. The reason never echoes the URL, which may hold a secret. Succeeds with the URL
 * without a trailing slash.
 */
export const validateBaseUrl = (
  raw: string,
  options: { readonly allowInsecureHttp?: boolean | undefined } = {}
): Result.Result<string, string> => {
  if (raw.length === 0) return Result.fail("it is empty")
  if (raw.length > MaxBaseUrlLength) return Result.fail(`it is longer than ${MaxBaseUrlLength} characters`)
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u0020\u007f-\u009f]/.test(raw)) return Result.fail("it contains whitespace or control characters")
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return Result.fail("it is not an absolute URL")
  }
  if (url.username !== "" || url.password !== "" || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(raw)) {
    return Result.fail("it contains userinfo (user:password@); pass credentials as the API key instead")
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return Result.fail(`the scheme ${url.protocol.replace(/:$/, "")} is not http(s)`)
  }
  // The WHATWG parser turns `https:///x` into host `x`; require the authority to be spelled out.
  if (url.hostname === "" || !/^https?:\/\/[^/?#]/i.test(raw)) return Result.fail("it has no host")
  if (url.search !== "" || url.hash !== "" || raw.includes("?") || raw.includes("#")) {
    return Result.fail("it has a query or fragment")
  }
  if (url.protocol === "http:" && !loopbackHost(url.hostname) && options.allowInsecureHttp !== true) {
    return Result.fail("plain http is only allowed to a loopback host unless allowInsecureHttp is set")
  }
  return Result.succeed(url.href.replace(/\/+$/, ""))
}

/** `validateBaseUrl` as an Effect failing with a `ConfigurationError` ProviderError. */
export const baseUrlOrFail = (
  provider: string,
  raw: string,
  allowInsecureHttp: boolean | undefined
): Effect.Effect<string, ProviderError> =>
  Result.match(validateBaseUrl(raw, { allowInsecureHttp }), {
    onFailure: (reason) =>
      Effect.fail(
        new ProviderError({
          provider,
          reason: new ConfigurationError({
            message: `Invalid ${provider} base URL: ${reason}`
          })
        })
      ),
    onSuccess: Effect.succeed
  })

/** Only the host (and port) of a validated base URL: the one part of it that is ever logged. */
export const hostOf = (baseUrl: string): string => new URL(baseUrl).host
