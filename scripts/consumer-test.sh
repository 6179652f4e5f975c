#!/usr/bin/env bash
# The package as a user gets it: `npm pack`, the tarball installed with the documented peers into
# a fresh project outside the repo, then plain node, a strict tsc (nodenext and bundler), an
# esbuild bundle, the drift-guard bin, and the optional peers' absence. Run by .ci/run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# The Effect 4 line needs Node >= 22.19; fetch one (outside the repo) when the machine's is older.
eval "$(bash "$root/scripts/ensure-node.sh")"
echo "node $(node --version)"
work=$(mktemp -d "${TMPDIR:-/tmp}/ecb-consumer-XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { printf '\n--- consumer: %s ---\n' "$*"; }
fail() { echo "consumer test FAILED: $*" >&2; exit 1; }
tsc="$root/node_modules/typescript/bin/tsc"
esbuild="$root/node_modules/.bin/esbuild"
# The one install line the README documents (keep the two in sync: test/package.test.ts checks it).
peers=(effect@^4.1.5 @effect/platform-node@^4.1.0)

step "pack"
cd "$root"
npm run -s build
npm pack --dry-run --json --ignore-scripts 2>/dev/null > "$work/files.json"
node -e '
  const files = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[0].files.map((f) => f.path)
  const bad = files.filter((f) => (/^(test|bench|examples|scripts|\.ci|src|coverage|docs)\//.test(f) && !/^docs\/[a-z0-9-]+\.md$/.test(f)) || /\.test\./.test(f))
  if (bad.length > 0) { console.error("tarball ships:", bad.join(", ")); process.exit(1) }
  for (const must of ["LICENSE", "README.md", "package.json", "dist/index.js", "dist/index.d.ts",
    "dist/claude-agent.d.ts", "dist/agent-settings-sqlite.d.ts", "dist/session-store-sql.d.ts", "dist/cluster.d.ts", "dist/drift-guard.d.ts",
    "dist/registry/bin/check-claude-tools.js", "docs/providers.md", "docs/claude-code.md", "docs/tool-policy.md"]) {
    if (!files.includes(must)) { console.error("tarball lacks", must); process.exit(1) }
  }
  console.log(`${files.length} files, ${files.filter((f) => f.endsWith(".d.ts")).length} of them .d.ts; no test, bench, example or CI file; the guides in docs/*.md`)
' "$work/files.json"
tarball=$(npm pack --ignore-scripts --pack-destination "$work" --silent | tail -n 1)
tarball="$work/$tarball"
echo "tarball: $(basename "$tarball"), $(du -k "$tarball" | cut -f1) KiB packed, $(tar -tzf "$tarball" | wc -l) files"

step "install the tarball with only the required peers"
app="$work/app"
mkdir -p "$app" && cd "$app"
printf '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }\n' > package.json
start=$(date +%s%N)
npm install --no-audit --no-fund --loglevel=error "$tarball" "${peers[@]}"
echo "install time without optional peers: $(( ($(date +%s%N) - start) / 1000000 )) ms"

step "(e, f) no optional peer, nothing compiled"
for absent in better-sqlite3 typescript @anthropic-ai/claude-agent-sdk @effect/sql-sqlite-node @effect/ai; do
  [ ! -e "node_modules/$absent" ] || fail "$absent was installed with only the required peers"
done
built=$(find node_modules -path '*/build/*' -name '*.node' -print -quit)
[ -z "$built" ] || fail "a native addon was compiled during install: $built"
echo "better-sqlite3, typescript and the Agent SDK are absent; no native addon was built (SQLite is node:sqlite)"

step "(a) plain node runs the README's first example"
node -e '
  const readme = require("fs").readFileSync(process.argv[1], "utf8")
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])
  const first = blocks.find((b) => b.includes("from \"effect-chat-bridge\""))
  require("fs").writeFileSync("main.mjs", first)
  // Every complete program of the README and its guides (marked `<!-- snippet: name -->`), for tsc below.
  for (const file of [process.argv[1], ...require("fs").readdirSync(process.argv[2]).map((f) => `${process.argv[2]}/${f}`)]) {
    if (!file.endsWith(".md")) continue
    const text = require("fs").readFileSync(file, "utf8")
    for (const m of text.matchAll(/<!-- snippet: ([a-z0-9-]+) -->\n```ts\n([\s\S]*?)```/g)) {
      require("fs").writeFileSync(`snippet-${m[1]}.ts`, m[2])
    }
  }
' "$root/README.md" "$root/docs"
echo "snippets: $(ls snippet-*.ts | tr '\n' ' ')"
# Offline whatever the shell exports: with ANTHROPIC_API_KEY set the snippet would ask the real API.
answer=$(env -u ANTHROPIC_API_KEY node main.mjs)
[ "$answer" = "5" ] || fail "README example printed '$answer', expected 5"
echo "node main.mjs → $answer"

step "(e) every entry point, and the optional ones name what to install"
cat > entries.mjs <<'JS'
import { Effect, Exit, Layer } from "effect"
import * as Main from "effect-chat-bridge"
import { ClaudeAgent } from "effect-chat-bridge/claude-agent"
import { AgentSettingsSqlite } from "effect-chat-bridge/agent-settings-sqlite"
import { ClaudeSessionStoreSql, SqliteClient } from "effect-chat-bridge/session-store-sql"
import { ClaudeCluster, ClaudeConversation, ClaudeConversationRunner } from "effect-chat-bridge/cluster"
import { DriftGuard } from "effect-chat-bridge/drift-guard"
import * as NodeServices from "@effect/platform-node/NodeServices"

const failure = async (effect) => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  return JSON.stringify(exit.cause)
}
const expect = (text, needle) => {
  if (!text.includes(needle)) throw new Error(`expected ${JSON.stringify(needle)} in ${text}`)
}
console.log(`main entry: ${Object.keys(Main).length} modules`)
// SQLite needs no peer on this line: node:sqlite, in memory.
await Effect.runPromise(Layer.launch(AgentSettingsSqlite.layerSqlite({ filename: ":memory:" })).pipe(
  Effect.timeout("1 second"), Effect.ignore))
expect(
  await failure(Effect.flatMap(Effect.service(Main.ChatClient.ChatClient), (chat) => chat.chat("hi")).pipe(
    Effect.provide(ClaudeAgent.layer())
  )),
  "npm install @anthropic-ai/claude-agent-sdk"
)
expect(
  await failure(DriftGuard.check(Main.ClaudeCodeCatalog.registry).pipe(Effect.provide(NodeServices.layer))),
  "npm install -D @anthropic-ai/claude-agent-sdk"
)
// The session store on SQLite needs no peer either: a transcript goes in and comes back.
const loaded = await Effect.runPromise(Effect.gen(function*() {
  const store = yield* Main.ClaudeSessionStore.ClaudeSessionStore
  const key = { projectKey: "p", sessionId: "s" }
  yield* store.append(key, [{ type: "user", uuid: "u1" }, { type: "user", uuid: "u1" }])
  return yield* store.load(key)
}).pipe(Effect.provide(ClaudeSessionStoreSql.layerSqlite({ filename: ":memory:" }))))
if (loaded._tag !== "Some" || loaded.value.length !== 1) throw new Error(`session store gave ${JSON.stringify(loaded)}`)
console.log("the SQLite stores open without a peer; missing optional peers fail with the package to install")
// The cluster entry: its settings check records the shard layout and refuses a member that differs.
const mismatch = await failure(Effect.gen(function*() {
  yield* ClaudeCluster.checkSettings({ shardsPerGroup: 300, availableShardGroups: ["default"] })
  yield* ClaudeCluster.checkSettings({ shardsPerGroup: 7, availableShardGroups: ["default"] })
}).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))))
expect(mismatch, "ClusterConfigError")
expect(mismatch, "shardsPerGroup=7")
console.log(`cluster entry: ${typeof ClaudeConversation.client}, ${typeof ClaudeConversationRunner.layer}; a differing shardsPerGroup is refused`)
JS
node entries.mjs

step "(c) esbuild bundle of the README example, typescript absent"
"$esbuild" main.mjs --bundle --platform=node --format=esm --log-level=warning --outfile=bundle.mjs \
  --banner:js="import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
[ "$(env -u ANTHROPIC_API_KEY node bundle.mjs)" = "5" ] || fail "the bundle did not print 5"
echo "bundle: $(du -k bundle.mjs | cut -f1) KiB ($(stat -c %s bundle.mjs) bytes), runs and prints 5"

typecheck() { # <label> <files...>: tsc --noEmit with the strictest flags, nodenext and bundler
  local label=$1 resolution module started; shift
  for resolution in nodenext bundler; do
    module=$([ "$resolution" = nodenext ] && echo nodenext || echo preserve)
    node -e '
      const [resolution, module, ...files] = process.argv.slice(1)
      require("fs").writeFileSync("tsconfig.json", JSON.stringify({ compilerOptions: {
        target: "ES2022", module, moduleResolution: resolution, types: ["node"], strict: true,
        exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, noPropertyAccessFromIndexSignature: true,
        verbatimModuleSyntax: true, skipLibCheck: false, noEmit: true }, files }))
    ' "$resolution" "$module" "$@"
    started=$(date +%s%N)
    node "$tsc" -p tsconfig.json || fail "tsc ($label, $resolution) failed"
    echo "tsc $label, moduleResolution $resolution, skipLibCheck false: ok in $(( ($(date +%s%N) - started) / 1000000 )) ms"
  done
}

step "(b) the README's and guides' snippets type-check with only the required peers (and @types/node)"
npm install --no-audit --no-fund --loglevel=error @types/node@^22
typecheck "README and docs snippets" snippet-*.ts

step "(b) an app importing only the main entry type-checks without the optional peers"
# skipLibCheck is false: every .d.ts the main entry reaches is checked, so one naming the Agent SDK
# (or typescript, or @effect/sql-pg) would fail here with TS2307.
cat > main-only.ts <<'TS'
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import { FetchHttpClient } from "effect/http"
import * as Layer from "effect/Layer"
import { ChatClient, ClaudeApi, ClaudeLocal, Fallback, NodeMcpBridge, OpenAi, Scripted, Tool, ToolPolicy } from "effect-chat-bridge"

const add = Tool.make("add", {
  description: "Adds two numbers",
  parameters: {},
  handler: () => Effect.succeed(5)
})
export const program = Effect.gen(function*() {
  const chat = yield* ChatClient.ChatClient
  yield* chat.setTools([add])
  return yield* chat.chat("What is 2 + 3?")
}).pipe(
  // Errors speak effect's reason pattern: catchReason selects on ProviderError's and FallbackError's reasons.
  Effect.catchReason("ProviderError", "RateLimitError", (reason) => Effect.succeed(`later: ${reason.message}`)),
  Effect.catchReason("FallbackError", "Exhausted", (reason) => Effect.succeed(`${reason.errors.length} failed`))
)
export const entries = [Fallback.layer, NodeMcpBridge.layer, Scripted.layer, ToolPolicy.resolveToolPolicy] as const
// 2.0.0: layerFromEnv reads the library's variables; layerConfig takes the app's own Config values.
export const fromEnv: Layer.Layer<ChatClient.ChatClient, ChatClient.ProviderError | Config.ConfigError> = ClaudeApi
  .layerFromEnv({ maxTokens: 1024 }).pipe(Layer.provide(FetchHttpClient.layer))
export const fromConfig = OpenAi.layerConfig({
  baseUrl: Config.String("LLM_URL"),
  model: Config.String("LLM_MODEL").pipe(Config.withDefault(OpenAi.DefaultModel))
}).pipe(Layer.provide(FetchHttpClient.layer))
export const claude = ClaudeLocal.layerConfig({
  permissionMode: Config.schema(ToolPolicy.PermissionMode, "AGENT_MODE").pipe(Config.withDefault("default"))
})
export const agentConfig: Config.Config<ClaudeLocal.Options> = ClaudeLocal.configFromEnv({ model: "sonnet" })
TS
for absent in @anthropic-ai/claude-agent-sdk typescript @effect/sql-pg; do
  [ ! -e "node_modules/$absent" ] || fail "$absent is installed: the check below would not be one"
done
typecheck "main entry only" main-only.ts

step "(g) effect at the newest 4.1.x the registry serves"
newest=$(npm view "effect@~4.1" version --json | node -e '
  const v = JSON.parse(require("fs").readFileSync(0, "utf8")); console.log(Array.isArray(v) ? v.at(-1) : v)')
resolved=$(node -p 'require("effect/package.json").version')
if [ "$resolved" = "$newest" ]; then
  # The peer range already gave the newest 4.1.x: every step above ran on it.
  echo "effect $resolved is the newest 4.1.x: the steps above ran on it"
else
  npm install --no-audit --no-fund --loglevel=error "effect@$newest"
  resolved=$(node -p 'require("effect/package.json").version')
  [ "$resolved" = "$newest" ] || fail "effect resolved to $resolved, not the newest 4.1.x ($newest)"
  typecheck "snippets and main entry on effect $resolved" snippet-*.ts main-only.ts
  [ "$(env -u ANTHROPIC_API_KEY node main.mjs)" = "5" ] || fail "the README example on effect $resolved did not print 5"
  echo "node main.mjs on effect $resolved → 5"
fi
echo "effect $resolved (newest 4.1.x), @effect/platform-node $(node -p 'require("@effect/platform-node/package.json").version')"

step "(b) every entry point type-checks once its optional peer is installed"
# Types only: no install scripts (no better-sqlite3 build), no platform binary of the Agent SDK.
npm install --no-audit --no-fund --loglevel=error --ignore-scripts --omit=optional \
  @anthropic-ai/claude-agent-sdk@0.3.335 typescript@~5.9.3
cp entries.mjs entries.ts
cat > ai.ts <<'TS'
import { AiToolkit, ChatLanguageModel } from "effect-chat-bridge/effect-ai"
console.log(`effect-ai entry: ${typeof AiToolkit.fromToolkit}, ${typeof ChatLanguageModel.layer}`)
import { ClaudeAgUi } from "effect-chat-bridge/ag-ui"
console.log(`ag-ui entry: ${typeof ClaudeAgUi.layer}, ${typeof ClaudeAgUi.make}`)
TS
cp ai.ts ai.mjs && node ai.mjs
sed -i 's/const failure = async (effect) =>/const failure = async (effect: Effect.Effect<unknown, unknown>) =>/; s/const expect = (text, needle) =>/const expect = (text: string, needle: string) =>/' entries.ts
typecheck "all entry points" entries.ts ai.ts

step "(d) the check-claude-tools bin under plain node"
mv node_modules/typescript "$work/typescript-aside"
set +e
out=$(node_modules/.bin/check-claude-tools "$root/node_modules/@anthropic-ai/claude-agent-sdk/sdk-tools.d.ts" 2>&1)
code=$?
set -e
[ "$code" = 2 ] && [[ "$out" == *"npm install -D typescript"* ]] || fail "without typescript the bin said ($code): $out"
echo "without typescript: exit 2, '$out'"
mv "$work/typescript-aside" node_modules/typescript
node_modules/.bin/check-claude-tools "$root/node_modules/@anthropic-ai/claude-agent-sdk/sdk-tools.d.ts"

echo
echo "consumer test passed"
