/**
 * The registry name a mistyped one most likely means (`Bsh`, `bash` → `Bash`), for the policy's
 * `unknown` reports. Cost per entry is bounded by the registry, not by the input: most names are
 * ruled out by a letter-count bound before any alignment runs, and an alignment stops as soon as
 * a whole row exceeds the allowed distance. Private: used by `registry/ToolPolicy.ts`.
 */

/** Letter counts of a lower-cased ASCII name (other characters share the last slot). */
const countsOf = (s: string): Int16Array => {
  const counts = new Int16Array(128)
  for (let i = 0; i < s.length; i++) counts[Math.min(s.charCodeAt(i), 127)]!++
  return counts
}

interface Candidate {
  readonly name: string
  readonly lower: string
  readonly counts: Int16Array
}

/** Finds the nearest of a fixed list of names. */
export interface NameIndex {
  /**
   * The same name in another case, else the closest by optimal string alignment distance
   * (adjacent swaps count as one edit), at most one edit per four characters (at least one);
   * ties go to the first in sorted order. None when nothing is that close.
   */
  readonly nearest: (entry: string) => string | undefined
}

/** An index over `names` (sorted here, so ties are deterministic). */
export const make = (names: ReadonlyArray<string>): NameIndex => {
  const candidates: ReadonlyArray<Candidate> = [...names].sort().map((name) => {
    const lower = name.toLowerCase()
    return { name, lower, counts: countsOf(lower) }
  })
  const byLower = new Map<string, string>()
  for (const c of candidates) if (!byLower.has(c.lower)) byLower.set(c.lower, c.name)
  return {
    nearest: (entry) => {
      const lower = entry.toLowerCase()
      const same = byLower.get(lower)
      if (same !== undefined) return same
      const counts = countsOf(lower)
      let best: string | undefined
      let bestDistance = Infinity
      for (const c of candidates) {
        const limit = Math.max(1, Math.floor(Math.max(c.lower.length, lower.length) / 4))
        if (Math.abs(c.lower.length - lower.length) > limit) continue
        if (letterBound(counts, c.counts) > limit) continue
        const d = editDistance(lower, c.lower, limit)
        if (d <= limit && d < bestDistance) {
          best = c.name
          bestDistance = d
        }
      }
      return best
    }
  }
}

/**
 * A lower bound of the edit distance: letters one name has more of than the other must each be
 * deleted, inserted or substituted (a swap moves none).
 */
const letterBound = (a: Int16Array, b: Int16Array): number => {
  let extraA = 0
  let extraB = 0
  for (let i = 0; i < 128; i++) {
    const d = a[i]! - b[i]!
    if (d > 0) extraA += d
    else extraB -= d
  }
  return Math.max(extraA, extraB)
}

/** Optimal string alignment distance, or `limit + 1` once every cell of a row exceeds `limit`. */
export const editDistance = (a: string, b: string, limit: number): number => {
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  const width = b.length + 1
  let prev2 = new Int32Array(width)
  let prev = new Int32Array(width)
  let row = new Int32Array(width)
  for (let j = 0; j < width; j++) prev[j] = j
  for (let i = 1; i <= a.length; i++) {
    row[0] = i
    let rowMin = i
    for (let j = 1; j < width; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost)
      if (
        i > 1 && j > 1 && a.charCodeAt(i - 1) === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === b.charCodeAt(j - 1)
      ) d = Math.min(d, prev2[j - 2]! + 1)
      row[j] = d
      if (d < rowMin) rowMin = d
    }
    if (rowMin > limit) return limit + 1
    const spare = prev2
    prev2 = prev
    prev = row
    row = spare
  }
  return prev[b.length]!
}
