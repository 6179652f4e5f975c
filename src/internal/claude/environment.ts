/**
 * The environment a Claude Code CLI runs with, for both Claude providers: an allow-list of this
 * process's environment (not the application's secrets), then the caller's changes. Kept apart
 * from the Agent SDK's loader so that `ClaudeLocal`, which never loads the SDK, does not reach it.
 */

/**
 * Variables passed on from this process to the CLI. The SDK's `env` replaces the environment, so
 * this is the whole of what the CLI sees (plus the caller's `env`): what it needs to run, find
 * its credentials and config, and reach the API through a proxy — not the application's secrets.
 */
const InheritedNames = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "TERM",
  "TZ",
  "LANG",
  "TMPDIR",
  "TMP",
  "TEMP",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "ALL_PROXY",
  "all_proxy",
  "NODE_EXTRA_CA_CERTS",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GOOGLE_CLOUD_PROJECT",
  "CLOUD_ML_REGION",
  "LANGUAGE"
])
const InheritedPrefixes = ["LC_", "XDG_", "ANTHROPIC_", "CLAUDE_", "AWS_", "VERTEX_", "DISABLE_", "MCP_"]
// Set inside a Claude Code session; a nested CLI must not think it runs inside one.
const Dropped = new Set(["CLAUDECODE"])

/**
 * The CLI's environment: the allowed part of `base` (all of it with `inheritAll`), then `changes`
 * (`undefined` removes).
 */
export const agentEnvironment = (
  base: Readonly<Record<string, string | undefined>>,
  changes: Readonly<Record<string, string | undefined>> | undefined,
  inheritAll = false
): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || Dropped.has(name)) continue
    if (inheritAll || InheritedNames.has(name) || InheritedPrefixes.some((p) => name.startsWith(p))) env[name] = value
  }
  for (const [name, value] of Object.entries(changes ?? {})) {
    if (value === undefined) delete env[name]
    else env[name] = value
  }
  return env
}
