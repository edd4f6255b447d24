package serveconfig

import (
	"fmt"
	"net"
	"strings"

	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/hosthook"
	"github.com/planserver/planserver/internal/hosthookcmd"
	"github.com/planserver/planserver/internal/sandbox"
)

// Hooks is how serve's host hooks judge shell commands: the shell
// table (--shell-read-only), and the read-only sandbox where this kernel
// runs it. The sandbox's network rule is always on, and never lets a
// command reach planserver itself: under --auth none any local caller is
// an admin, so a sandboxed curl to planserver could lift plan mode.
func (c *Config) Hooks() (app.HookConfig, error) {
	table, err := c.shellTable()
	if err != nil {
		return app.HookConfig{}, err
	}
	hc := app.HookConfig{Shell: hosthookcmd.ShellPolicy(table, hosthook.Sandbox{})}
	for _, n := range strings.Split(c.HookMCPServers, ",") {
		if n = strings.TrimSpace(n); n != "" {
			hc.OwnServers = append(hc.OwnServers, n)
		}
	}
	allow, err := sandboxAllowList(c.HookSandboxAllowConnect, c.Addr)
	if err != nil {
		return hc, err
	}
	switch c.HookSandbox {
	case "on":
		_, own, _ := net.SplitHostPort(c.Addr)
		hc.Shell.Sandbox = hosthookcmd.SandboxHere(allow, own)
	case "off":
		hc.Shell.Sandbox = hosthook.Sandbox{Why: "the operator turned it off (--hook-sandbox off)"}
	default:
		return hc, fmt.Errorf("--hook-sandbox %q: want on or off", c.HookSandbox)
	}
	return hc, nil
}

// sandboxAllowList checks --hook-sandbox-allow-connect: host:port entries,
// none on planserver's own port, whatever the host: the sandbox allows
// exact pairs, but planserver may listen on every address (0.0.0.0) and a
// name may resolve to its own, so its port is refused on any host.
func sandboxAllowList(list, addr string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	ports, err := sandbox.ParseAllowConnect(out)
	if err != nil {
		return nil, fmt.Errorf("--hook-sandbox-allow-connect: %w", err)
	}
	_, own, err := net.SplitHostPort(addr)
	if err != nil {
		return out, nil
	}
	for _, p := range ports {
		if fmt.Sprint(p) == own {
			return nil, fmt.Errorf("--hook-sandbox-allow-connect names port %d, planserver's own (--addr %s): "+
				"a sandboxed command could then reach planserver and lift plan mode", p, addr)
		}
	}
	return out, nil
}
