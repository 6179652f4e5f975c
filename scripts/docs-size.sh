#!/usr/bin/env bash
# Prints the API docs' size and page count (run by `npm run docs`, so by CI), and fails when they
# outgrow what a newcomer can browse or a site can ship: inherited members of Effect's Schema
# classes once made single error pages over 1 MB and the whole site 45 MB (typedoc's
# `excludeExternals` keeps them out).
set -euo pipefail
dir="${1:-docs/api}"
limit_kib=$((10 * 1024))
largest_limit_kib=512
kib=$(du -sk "$dir" | cut -f1)
pages=$(find "$dir" -name '*.html' | wc -l)
largest=$(find "$dir" -name '*.html' -printf '%s %p\n' | sort -n | tail -n 1)
largest_kib=$(( ${largest%% *} / 1024 ))
echo "api docs: $((kib / 1024)) MiB ($kib KiB), $pages pages; largest page ${largest_kib} KiB (${largest#* })"
[ "$kib" -le "$limit_kib" ] || { echo "api docs are over $((limit_kib / 1024)) MiB" >&2; exit 1; }
[ "$largest_kib" -le "$largest_limit_kib" ] || { echo "a docs page is over $largest_limit_kib KiB" >&2; exit 1; }
