// Package opencode ships planserver's opencode plugin (planserver.js),
// which planserver hook install opencode copies into opencode's plugin
// directory.
package opencode

import (
	_ "embed"
	"encoding/json"
	"strings"
)

// Plugin is planserver.js as shipped.
//
//go:embed planserver.js
var Plugin string

// Marker is a line only planserver's plugin has: install and uninstall
// touch no other file.
const Marker = "planserver's plan-mode hook for opencode"

// Config is what planserver hook install writes into the plugin as its
// defaults (the environment still wins): the server, the session or
// parent, the token's file, and the name of planserver's MCP server.
type Config struct {
	Server, Session, Parent, TokenFile, MCP string
}

// Configured is the plugin with cfg written in.
func Configured(cfg Config) string {
	q := func(s string) string { raw, _ := json.Marshal(s); return string(raw) }
	out := Plugin
	for name, v := range map[string]string{"SERVER": cfg.Server, "SESSION": cfg.Session, "PARENT": cfg.Parent,
		"TOKEN_FILE": cfg.TokenFile, "MCP": cfg.MCP} {
		out = strings.Replace(out, "const "+name+` = ""`, "const "+name+" = "+q(v), 1)
	}
	return out
}
