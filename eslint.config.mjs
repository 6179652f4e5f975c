// Lint rules (typescript-eslint) and formatting (dprint through @effect/eslint-plugin, configured
// as in the Effect monorepo). `FORMAT_ONLY=1` runs just the formatter rule: that is `format:check`.
import * as effectPlugin from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

const dprint = {
  plugins: { "@effect": effectPlugin },
  rules: {
    "@effect/dprint": ["error", {
      config: {
        indentWidth: 2,
        lineWidth: 120,
        semiColons: "asi",
        quoteStyle: "alwaysDouble",
        trailingCommas: "never",
        operatorPosition: "maintain",
        "arrowFunction.useParentheses": "force"
      }
    }]
  }
}

const files = ["src/**/*.ts", "test/**/*.ts", "scripts/**/*.ts", "examples/**/*.ts", "bench/**/*.ts", "*.ts", "*.mjs"]
const ignores = [
  "node_modules/**",
  "dist/**",
  "artifacts/**",
  "docs/**",
  "coverage/**",
  ".tmp/**",
  "test/registry/fixtures/**"
]

export default process.env.FORMAT_ONLY === "1"
  ? tseslint.config({ ignores }, { files, languageOptions: { parser: tseslint.parser } }, dprint)
  : tseslint.config(
    { ignores },
    ...tseslint.configs.recommended,
    {
      files,
      rules: {
        "@typescript-eslint/no-explicit-any": "error",
        "@typescript-eslint/no-unused-vars": ["error", {
          argsIgnorePattern: "^_",
          varsIgnorePattern: "^_",
          caughtErrors: "none"
        }],
        "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
        "@typescript-eslint/no-namespace": "off",
        "@typescript-eslint/no-empty-object-type": "off",
        "no-console": "error"
      }
    },
    // Examples, benchmarks and tests talk to the terminal; the library never does.
    { files: ["examples/**", "bench/**", "test/**", "src/registry/bin/**"], rules: { "no-console": "off" } }
  )
