import * as ClaudeSessionStore from "../../src/services/ClaudeSessionStore.ts"
import { sessionStoreSuite } from "../support/sessionStoreSuite.ts"

sessionStoreSuite("memory", ClaudeSessionStore.layerMemory)
