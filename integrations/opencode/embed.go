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

// Configured is the plugin with session or parent written in as its
// default (the environment still wins).
func Configured(session, parent string) string {
	q := func(s string) string { raw, _ := json.Marshal(s); return string(raw) }
	out := strings.Replace(Plugin, `const SESSION = ""`, "const SESSION = "+q(session), 1)
	return strings.Replace(out, `const PARENT = ""`, "const PARENT = "+q(parent), 1)
}
