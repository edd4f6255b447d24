// planserver's plan-mode hook for opencode (@planserver/opencode-plugin).
//
// opencode runs tool.execute.before before every tool call; this plugin
// asks planserver (POST /v1/hooks/opencode) whether the session is in plan
// mode and what the call gets: nothing ("none", build mode), "allow", args
// rewritten (a shell command run inside the read-only sandbox), or "deny",
// which throws so opencode does not run the tool and the model reads why.
// When planserver cannot be asked, reads keep working and everything else
// is refused. After every tool call (tool.execute.after) it reports the run
// to the same address, so that planserver sees a run it never judged; a
// report never blocks anything. Install: planserver hook install opencode
// (docs/hosts.md).
//
// Settings come from the environment: PLANSERVER_URL, PLANSERVER_SESSION
// or PLANSERVER_PARENT, PLANSERVER_TOKEN or PLANSERVER_TOKEN_FILE, and
// PLANSERVER_HOOK_TIMEOUT_MS (default 5000). planserver hook install
// writes its own below instead (the environment still wins).
import { readFileSync } from "node:fs"

const SERVER = ""
const SESSION = ""
const PARENT = ""
const TOKEN_FILE = ""
// MCP is the name planserver's MCP server has in this opencode's
// configuration ("none": not set up), so that denials name its tools.
const MCP = ""

// Tools that only read (or launch sub-agents, whose own calls come back
// here): allowed while planserver is unreachable.
const READS = new Set(["read", "glob", "grep", "list", "webfetch", "websearch", "codesearch", "todoread", "todowrite", "task", "lsp"])

function token() {
  if (process.env.PLANSERVER_TOKEN) return process.env.PLANSERVER_TOKEN.trim()
  const file = process.env.PLANSERVER_TOKEN_FILE || TOKEN_FILE
  if (!file) return ""
  return readFileSync(file, "utf8").trim()
}

// opencode hands a plugin its context; directory is the project, which a
// scoped build's paths are relative to.
export const PlanserverPlugin = async ({ directory } = {}) => {
  const server = (process.env.PLANSERVER_URL || SERVER || "http://127.0.0.1:8080").replace(/\/+$/, "")
  const session = process.env.PLANSERVER_SESSION || SESSION
  const parent = process.env.PLANSERVER_PARENT || PARENT
  const timeoutMs = Number(process.env.PLANSERVER_HOOK_TIMEOUT_MS || 5000)
  const ask = async (body) => {
    if (!session && !parent) throw new Error("no session is configured: set PLANSERVER_SESSION or PLANSERVER_PARENT")
    let query = session ? "session=" + encodeURIComponent(session) : "parent=" + encodeURIComponent(parent)
    if (MCP) query += "&mcp=" + encodeURIComponent(MCP)
    const headers = { "Content-Type": "application/json", "Planserver-Hook-Adapter": "plugin" }
    const t = token()
    if (t) headers.Authorization = "Bearer " + t
    const res = await fetch(`${server}/v1/hooks/opencode?${query}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    })
    if (res.status !== 200) throw new Error(`planserver answered ${res.status}`)
    return await res.json()
  }
  return {
    "tool.execute.before": async (input, output) => {
      let answer
      try {
        answer = await ask({ tool: input.tool, sessionID: input.sessionID, callID: input.callID, args: output.args ?? {}, directory })
      } catch (err) {
        if (READS.has(input.tool)) return
        throw new Error(`[planserver hook] planserver could not be asked whether this session is in plan mode (${err?.message ?? err}), ` +
          `and ${input.tool} may change something, so it is refused. Reads keep working.`)
      }
      if (answer?.decision === "none" || answer?.decision === "allow") {
        if (answer.args && typeof answer.args === "object" && output.args) {
          // The whole input comes back with only the command changed.
          for (const k of Object.keys(output.args)) if (!(k in answer.args)) delete output.args[k]
          Object.assign(output.args, answer.args)
        }
        return
      }
      throw new Error(answer?.reason || "planserver refused this tool call")
    },
    "tool.execute.after": async (input) => {
      try {
        await ask({ event: "tool.execute.after", tool: input.tool, sessionID: input.sessionID, callID: input.callID, args: input.args ?? {}, directory })
      } catch (err) {
        console.error(`[planserver hook] the report of ${input.tool} did not reach planserver: ${err?.message ?? err}`)
      }
    },
  }
}
