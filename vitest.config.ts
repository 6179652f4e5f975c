import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    coverage: {
      provider: "v8",
      include: ["src/**/*.ts"],
      // The bin is a thin process wrapper (its logic is DriftGuard, covered); SdkCoverage is types only.
      exclude: ["src/registry/bin/**", "src/registry/SdkCoverage.ts"],
      reporter: ["text", "json-summary"],
      thresholds: { lines: 90, branches: 90 }
    }
  }
})
