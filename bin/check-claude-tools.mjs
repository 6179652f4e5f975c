#!/usr/bin/env -S node --import tsx
// The drift guard: compares the installed Claude Agent SDK tool list with the registry.
import "../src/registry/bin/check-claude-tools.ts"
