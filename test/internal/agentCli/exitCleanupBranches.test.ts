/**
 * The registry's in-process behaviour (the child-process tests cover the real process ends): what is
 * tracked and untracked, a signal the app handles, and a lone signal's cleanup and re-raise, with
 * `process.kill` of this process intercepted so the test worker stays.
 */
import { afterEach, describe, expect, it, vi } from "@effect/vitest"
import { spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { shuttingDown, trackDirectory, trackGroup } from "../../../src/internal/agentCli/exitCleanup.ts"

interface Registry {
  readonly groups: Set<number>
  readonly directories: Set<string>
  readonly handlers: Map<NodeJS.Signals, () => void>
  shuttingDown: boolean
}

const registry = () =>
  (globalThis as Record<symbol, Registry | undefined>)[Symbol.for("effect-chat-bridge/exitCleanup")]!

const exited = (pid: number) =>
  new Promise<boolean>((resolve) => {
    const deadline = Date.now() + 10_000
    const poll = () => {
      try {
        process.kill(pid, 0)
        if (Date.now() > deadline) resolve(false)
        else setTimeout(poll, 20)
      } catch {
        resolve(true)
      }
    }
    poll()
  })

describe("exitCleanup in process", () => {
  const bases: Array<string> = []
  afterEach(() => {
    vi.restoreAllMocks()
    for (const base of bases.splice(0)) rmSync(base, { recursive: true, force: true })
  })

  it("tracks groups and directories until released, once", () => {
    const release = trackGroup(999_991)
    const dir = "/nonexistent/ecb dir"
    const odd = "/nonexistent/line\nbreak"
    const releaseDir = trackDirectory(dir)
    const releaseOdd = trackDirectory(odd)
    const s = registry()
    expect(s.groups.has(999_991)).toBe(true)
    expect([...s.directories]).toEqual(expect.arrayContaining([dir, odd]))
    release()
    release()
    releaseDir()
    releaseOdd()
    expect(s.groups.has(999_991)).toBe(false)
    expect(s.directories.has(dir) || s.directories.has(odd)).toBe(false)
    expect([...s.handlers.keys()].sort()).toEqual(["SIGHUP", "SIGINT", "SIGTERM"])
  })

  it("a signal the app also listens for is the app's: nothing is cleaned up, but shutdown is noted", () => {
    const release = trackGroup(999_992)
    const appListener = () => {}
    process.on("SIGHUP", appListener)
    const kill = vi.spyOn(process, "kill")
    try {
      registry().handlers.get("SIGHUP")!()
    } finally {
      process.off("SIGHUP", appListener)
    }
    expect(shuttingDown()).toBe(true)
    expect(registry().groups.has(999_992)).toBe(true)
    expect(kill).not.toHaveBeenCalled()
    release()
  })

  it("a lone signal kills the tracked groups, removes the tracked directories and raises the signal again", async () => {
    const base = mkdtempSync(join(tmpdir(), "ecb-exit-in-"))
    bases.push(base)
    const dir = join(base, "tracked [*]")
    const odd = join(base, "with\nbreak")
    mkdirSync(dir)
    mkdirSync(odd)
    const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" })
    const pid = child.pid!
    trackGroup(pid)
    trackDirectory(dir)
    trackDirectory(odd)
    // A group already gone is skipped quietly.
    trackGroup(999_993)

    const s = registry()
    const handler = s.handlers.get("SIGTERM")!
    // Other SIGTERM listeners of the test runner are set aside, so the library's is alone.
    const others = process.listeners("SIGTERM").filter((l) => l !== handler)
    for (const l of others) process.off("SIGTERM", l)
    const realKill = process.kill.bind(process)
    const raised: Array<string | number | undefined> = []
    vi.spyOn(process, "kill").mockImplementation((target: number, signal?: string | number) => {
      if (target === process.pid) {
        raised.push(signal)
        return true
      }
      return realKill(target, signal)
    })
    try {
      handler()
    } finally {
      for (const l of others) process.on("SIGTERM", l)
    }
    expect(raised).toEqual(["SIGTERM"])
    expect(await exited(pid)).toBe(true)
    expect(existsSync(dir)).toBe(false)
    expect(existsSync(odd)).toBe(false)
    expect(s.groups.size).toBe(0)
    expect(s.directories.size).toBe(0)
    // Its listeners are gone, so the re-raised signal takes its default action.
    expect(s.handlers.size).toBe(0)
    expect(process.listeners("SIGTERM")).not.toContain(handler)
    expect(shuttingDown()).toBe(true)
  })
})
