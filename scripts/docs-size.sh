#!/usr/bin/env bash
# Prints the API docs' size and page count (run by `npm run docs`, so by CI), and fails when they
# outgrow what a newcomer can browse or a site can ship: inherited members of Effect's Schema
# classes once made single error pages over 1 MB and the whole site 45 MB (typedoc's
# `excludeExternals` keeps them out). The size is in bytes as shipped (`--apparent-size`), not in
# the disk blocks the files happen to fill: ~600 small pages round up by ~1.2 MiB of 4 KiB blocks.
#
# It also fails when the docs stop being navigable in ways typedoc's own validation does not see:
# - an entry point (a page of modules.html) or one of its modules shows no one-line summary in the
#   index (typedoc only requires *a* comment; the index shows its `@summary`, else its first
#   paragraph, which for most modules is several lines);
# - a module of an entry point is in no group (it lands in typedoc's catch-all "Namespaces"), or a
#   test double (Scripted, Test*, *Memory) is outside the "Testing" group;
# - an export of a module is in no `@category` of the vocabulary (typedoc lists it under
#   `defaultCategory`, "Uncategorized"); test/scripts/docTags.test.ts checks the same in `npm test`;
# - a heading or an "On This Page" link lost its code: typedoc drops inline code from the page
#   navigation, so a markdown heading like "The `claude` CLI (`ClaudeLocal`)" showed as "The CLI ()".
set -euo pipefail
dir="${1:-docs/api}"
limit_kib=$((10 * 1024))
largest_limit_kib=512
kib=$(du -sk --apparent-size "$dir" | cut -f1)
pages=$(find "$dir" -name '*.html' | wc -l)
largest=$(find "$dir" -name '*.html' -printf '%s %p\n' | sort -n | tail -n 1)
largest_kib=$(( ${largest%% *} / 1024 ))
echo "api docs: $((kib / 1024)) MiB ($kib KiB), $pages pages; largest page ${largest_kib} KiB (${largest#* })"
[ "$kib" -le "$limit_kib" ] || { echo "api docs are over $((limit_kib / 1024)) MiB" >&2; exit 1; }
[ "$largest_kib" -le "$largest_limit_kib" ] || { echo "a docs page is over $largest_limit_kib KiB" >&2; exit 1; }

eval "$(bash "$(dirname "${BASH_SOURCE[0]}")/ensure-node.sh")"
node --input-type=module - "$dir" <<'JS'
import { readFileSync, readdirSync } from "node:fs"
import { dirname, join } from "node:path"

const dir = process.argv[2]
const problems = []
const maxSummary = 120
const read = (file) => readFileSync(join(dir, file), "utf8")
const text = (html) =>
  html.replace(/<wbr\/>/g, "").replace(/<[^>]*>/g, "").replace(/&amp;/g, "&").replace(/\s+/g, " ").trim()

// Each member of an index page: its name, link, summary and the group it is listed under.
const members = (html) => {
  const found = []
  for (const section of html.split('<details class="tsd-panel-group tsd-member-group').slice(1)) {
    const group = text(section.match(/<h2[^>]*>(.*?)<a /s)?.[1] ?? "")
    const items = section.matchAll(
      /<dt class="tsd-member-summary[^"]*"[^>]*>(.*?<a href="([^"#]+)"[^>]*>(.*?)<\/a>.*?)<\/dt><dd class="tsd-member-summary[^"]*">(.*?)<\/dd>/gs
    )
    for (const [, dt, href, name, summary] of items) {
      // "Name → Module.Name": a re-export, documented (and categorised) where it points.
      const reference = /<span>\s*→\s*<\/span>/.test(dt)
      found.push({ group, href, name: text(name), summary: text(summary), reference })
    }
  }
  return found
}

const entries = members(read("modules.html"))
if (entries.length === 0) problems.push("modules.html lists no entry point")
// The `@category` vocabulary (scripts/doc-tags.ts `Categories`).
const categories = new Set(["models", "constructors", "layers", "services", "errors", "schemas", "accessors", "guards", "utils", "config", "testing"])
let modules = 0
let exports = 0
for (const entry of entries) {
  if (entry.summary === "") problems.push(`entry point ${entry.name} has no @summary in modules.html`)
  const page = read(entry.href)
  if (!/<div class="tsd-comment tsd-typography"><p>/.test(page)) {
    problems.push(`entry point ${entry.name} (${entry.href}) has no module comment`)
  }
  for (const module of members(page)) {
    modules++
    const where = `${entry.name} › ${module.name}`
    if (module.summary === "") problems.push(`${where} has no summary in its entry's index`)
    // Without `@summary` the index shows the comment's first paragraph: fine when it is one line.
    else if (module.summary.length > maxSummary) problems.push(`${where} needs a one-line @summary`)
    const isDouble = /^(Test[A-Z]|Scripted$)|Memory$/.test(module.name)
    if (module.group === "Namespaces") problems.push(`${where} is in no @group`)
    else if (isDouble !== (module.group === "Testing")) {
      problems.push(`${where} is in group "${module.group}": test doubles go in "Testing", nothing else does`)
    }
    for (const member of members(read(join(dirname(entry.href), module.href)))) {
      if (member.reference) continue
      exports++
      if (!categories.has(member.group)) problems.push(`${where}.${member.name} is in category "${member.group}", not one of the @category vocabulary`)
    }
  }
}

// A heading or in-page link whose text lost its inline code ("The CLI ()", "Many conversations: ").
const broken = (label) => label === "" || /\(\s*\)|[:,]$/.test(label)
const pages = (sub) =>
  readdirSync(join(dir, sub), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === "assets" ? [] : pages(join(sub, e.name))) : e.name.endsWith(".html") ? [join(sub, e.name)] : []
  )
for (const file of pages(".")) {
  const html = read(file)
  for (const [, label] of html.matchAll(/<a href="#[^"]+"><span>(.*?)<\/span><\/a>/gs)) {
    if (broken(text(label))) problems.push(`${file}: page navigation entry "${text(label)}" lost its inline code`)
  }
  for (const [, , inner] of html.matchAll(/<(h[1-6])\b[^>]*>(.*?)<\/\1>/gs)) {
    if (/\(\s*\)/.test(text(inner))) problems.push(`${file}: heading "${text(inner)}" has an empty "()"`)
  }
}

if (problems.length > 0) {
  console.error(problems.join("\n"))
  process.exit(1)
}
console.log(`api docs: ${entries.length} entry points, ${modules} modules, each with a one-line summary and a group; ${exports} exports, each in a @category`)
JS
