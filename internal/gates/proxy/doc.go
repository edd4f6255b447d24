// Package proxy is the gate proxy: it puts an agent's other MCP tool
// servers behind the session's plan mode, as /mcp/gate/{name} for the
// servers of the gate registry (Upstreams, over streamable HTTP) and as
// planserver gate for a stdio server (StdioGate, whose process the kernel
// holds to the session's mode: Hold). Both judge every tool with Policy,
// read every JSON-RPC message exactly before judging it (wire.go), and
// bind a request to its session as /mcp does (mcp.Bind).
//
// It is a transport above the registry (internal/gates), as webhooks'
// deliverer is above webhooks; the /mcp endpoint itself is internal/mcp.
package proxy
