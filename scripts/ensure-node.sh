#!/usr/bin/env bash
# Prints nothing when the `node` on PATH is >= 22.19 (what the Effect 4 line needs). Otherwise
# fetches an official Node 22 build from the npm registry (node-linux-<arch>@22, a plain build
# with no install script) into a cache outside the repo, saying so in one line on stderr, and
# prints the lines to eval:
#   eval "$(bash scripts/ensure-node.sh)"
# Node is never a dependency: a package.json dependency would shadow the user's own Node.
set -euo pipefail

MIN_MAJOR=22
MIN_MINOR=19

# "v22.23.5" -> success when >= MIN_MAJOR.MIN_MINOR; anything unparsable counts as too old.
version_ok() {
  local v="${1#v}" major minor
  major="${v%%.*}"; minor="${v#*.}"; minor="${minor%%.*}"
  [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] || return 1
  (( major > MIN_MAJOR || (major == MIN_MAJOR && minor >= MIN_MINOR) ))
}

node_version() { "$1" --version 2>/dev/null || true; }

if command -v node >/dev/null 2>&1 && version_ok "$(node_version node)"; then
  exit 0
fi

case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "ensure-node: no node-linux build for $(uname -m); install Node >= 22.19" >&2; exit 1 ;;
esac

cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/effect-chat-bridge"
mkdir -p "$cache"

emit() {
  printf 'export PATH=%q/bin:"$PATH"\n' "$1"
  # node-gyp finds headers here, so a native addon builds against this Node, not the system one.
  printf 'export npm_config_nodedir=%q\n' "$1"
}

# Any cached build that is good enough: later runs need no network.
cached=""
for dir in "$cache"/node-"$arch"-*; do
  if [[ -x "$dir/bin/node" ]] && version_ok "$(node_version "$dir/bin/node")"; then cached="$dir"; fi
done
if [[ -n "$cached" ]]; then
  emit "$cached"
  exit 0
fi

# The one line a user sees: a download of this size never happens without a word.
have="$(command -v node >/dev/null 2>&1 && node_version node || true)"
echo "ensure-node: ${have:-no node} on PATH is older than $MIN_MAJOR.$MIN_MINOR: fetching Node $MIN_MAJOR" \
  "(node-linux-$arch from the npm registry, about 185 MB unpacked) into $cache, once" >&2

# Unpack into a private temp dir inside the cache, then rename: a concurrent run either wins the
# rename or finds the finished directory; nobody ever sees a half-unpacked Node.
work="$(mktemp -d "$cache/.fetch.XXXXXX")"
trap 'rm -rf "$work"' EXIT
spec="node-linux-$arch@^$MIN_MAJOR.$MIN_MINOR.0"
(cd "$work" && npm pack --silent --prefer-offline "$spec" >pack.out 2>pack.err) || {
  cat "$work/pack.err" >&2
  echo "ensure-node: npm pack $spec failed" >&2
  exit 1
}
tarball="$work/$(tail -n 1 "$work/pack.out")"
version="$(basename "$tarball" .tgz)"; version="${version##*-}"
mkdir "$work/unpacked"
tar -xzf "$tarball" -C "$work/unpacked" --strip-components=1 package
final="$cache/node-$arch-$version"
version_ok "$(node_version "$work/unpacked/bin/node")" || {
  echo "ensure-node: fetched node $version is older than $MIN_MAJOR.$MIN_MINOR" >&2
  exit 1
}
mv -T "$work/unpacked" "$final" 2>/dev/null || [[ -x "$final/bin/node" ]]
emit "$final"
