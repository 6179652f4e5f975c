import { describe, expect, it } from "@effect/vitest"
import { argumentsObject, uniqueName } from "../../../src/internal/http/wireTools.ts"

describe("wireTools.argumentsObject", () => {
  it("an object passes; JSON text of an object is parsed", () => {
    expect(argumentsObject({ a: 1 })).toEqual({ a: 1 })
    expect(argumentsObject("{\"q\":[1,2]}")).toEqual({ q: [1, 2] })
  })

  it("anything the APIs would refuse as arguments becomes {}", () => {
    expect(argumentsObject("{not json")).toEqual({})
    expect(argumentsObject("[1,2]")).toEqual({})
    expect(argumentsObject("\"text\"")).toEqual({})
    expect(argumentsObject("null")).toEqual({})
    expect(argumentsObject([1])).toEqual({})
    expect(argumentsObject(null)).toEqual({})
    expect(argumentsObject(undefined)).toEqual({})
    expect(argumentsObject(7)).toEqual({})
  })
})

describe("wireTools.uniqueName", () => {
  it("keeps the base when free, else the first free numbered name", () => {
    expect(uniqueName("answer", ["search"])).toBe("answer")
    expect(uniqueName("answer", ["answer"])).toBe("answer_2")
    expect(uniqueName("answer", ["answer", "answer_2", "answer_4"])).toBe("answer_3")
  })
})
