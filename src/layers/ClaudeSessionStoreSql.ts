/**
 * `ClaudeSessionStore` on `effect/sql` (placeholder until the SQL store lands).
 *
 * @since 1.0.0
 * @module
 */
export {}
