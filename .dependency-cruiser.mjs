// The layout's rules, checked by `npm run lint` (so by CI) with dependency-cruiser: the folders of
// `src` only depend on each other in the directions the design allows, and nothing loops.
// See README "Layout" for what lives where. Run: `npm run lint:deps` (part of `npm run lint`).
//
// Type-only imports (`import type`, `import { type X }`) count for cycles and layers alike: a type
// cycle still makes two modules one unit to read and to move.
const optionalPeers = "^node_modules/(@anthropic-ai/claude-agent-sdk|@effect/sql-pg|typescript)/"

export default {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "An import cycle: two modules that can only be understood (and moved) together.",
      from: { path: "^src/" },
      to: { circular: true }
    },
    {
      name: "internal-not-to-layers",
      severity: "error",
      comment: "internal/ is the layers' machinery; a type it needs lives beside it or in services/.",
      from: { path: "^src/internal/" },
      to: { path: "^src/layers/" }
    },
    {
      name: "services-not-to-internal",
      severity: "error",
      comment: "services/ declares contracts (tags, data, errors); behaviour lives in internal/ and layers/. The one "
        + "exception is internal/core/, the machinery of the few functions the design puts in services/ "
        + "(Tool.make and executeTool, ClaudeConversation's ask), which depends on services/ alone.",
      from: { path: "^src/services/" },
      to: { path: "^src/internal/", pathNot: "^src/internal/core/" }
    },
    {
      name: "core-depends-on-services-only",
      severity: "error",
      comment: "internal/core/ is the services' own machinery: it uses services/ and itself, nothing else of src/.",
      from: { path: "^src/internal/core/" },
      to: { path: "^src/", pathNot: "^src/(services|internal/core)/" }
    },
    {
      name: "services-not-to-layers",
      severity: "error",
      comment: "A service's contract never depends on one of its implementations.",
      from: { path: "^src/services/" },
      to: { path: "^src/layers/" }
    },
    {
      name: "registry-is-self-contained",
      severity: "error",
      comment: "The tool policy is pure data and functions: it depends on no service, layer or internal code "
        + "except its own private helpers in internal/policy/ and the permission modes it shares with the "
        + "services (internal/core/permissionMode.ts, which imports nothing of src/).",
      from: { path: "^src/registry/" },
      to: { path: "^src/(services|layers|internal|ai)/", pathNot: "^src/internal/(policy/|core/permissionMode\\.ts$)" }
    },
    {
      name: "policy-helpers-stand-alone",
      severity: "error",
      comment:
        "internal/policy/ holds registry/ToolPolicy's private helpers: they use nothing else of src/ but the registry.",
      from: { path: "^src/internal/policy/" },
      to: { path: "^src/", pathNot: "^src/(registry|internal/policy)/" }
    },
    {
      name: "entries-not-to-optional-peers",
      severity: "error",
      comment: "An entry point loads only what every user has installed; the Agent SDK, @effect/sql-pg and the "
        + "TypeScript compiler are reached only from the entries made for them.",
      from: { path: "^src/(index|agent-settings-sqlite|session-store-sql|cluster|effect-ai|ag-ui)\\.ts$" },
      to: { path: optionalPeers, reachable: true }
    },
    {
      name: "claude-agent-entry-not-to-other-optional-peers",
      severity: "error",
      comment: "The Agent SDK entry needs the SDK, not @effect/sql-pg or the TypeScript compiler.",
      from: { path: "^src/claude-agent\\.ts$" },
      to: { path: "^node_modules/(@effect/sql-pg|typescript)/", reachable: true }
    },
    {
      name: "drift-guard-entry-not-to-other-optional-peers",
      severity: "error",
      comment: "The drift guard entry needs the TypeScript compiler, not the Agent SDK's code or @effect/sql-pg.",
      from: { path: "^src/drift-guard\\.ts$" },
      to: { path: "^node_modules/(@anthropic-ai/claude-agent-sdk|@effect/sql-pg)/", reachable: true }
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "An import that names no file (a typo, or a module moved without its importers).",
      from: { path: "^src/" },
      to: { couldNotResolve: true }
    }
  ],
  options: {
    includeOnly: { path: ["^src/", "^node_modules/"] },
    doNotFollow: { path: "^node_modules/" },
    // A node_modules that is a symlink (a shared install) still counts as node_modules/.
    preserveSymlinks: true,
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.src.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "types", "node", "default"],
      extensions: [".ts", ".js", ".d.ts"],
      mainFields: ["module", "main", "types"]
    }
  }
}
