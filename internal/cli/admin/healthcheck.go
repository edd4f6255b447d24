package admin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/serveconfig"
	"github.com/spf13/cobra"
)

// healthcheckTimeout bounds the whole check: a server that cannot answer
// /healthz in this long is not healthy.
const healthcheckTimeout = 3 * time.Second

// HealthcheckCommand is planserver healthcheck: it asks the server at
// --addr for GET /healthz and exits 0 when it answers 200, 1 otherwise: a
// container HEALTHCHECK for an image that has no shell or curl
// (distroless).
func HealthcheckCommand() *cobra.Command {
	var addr string
	cmd := cli.Help(&cobra.Command{
		Use: "healthcheck", Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return healthcheck(cmd.Context(), addr, cmd.OutOrStdout()) },
	}, commandHelp["healthcheck"], cli.EnvFlags, "")
	cmd.Flags().StringVar(&addr, "addr", serveconfig.DefaultAddr, "the `host:port` serve listens on (0.0.0.0 and [::] are asked on loopback)")
	serveconfig.EnvFlags(cmd.Flags())
	return cmd
}

func healthcheck(ctx context.Context, addr string, stdout io.Writer) error {
	url := "http://" + dialAddr(addr) + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return cli.ExitError{Code: 1, Err: fmt.Errorf("unhealthy: %w", err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return cli.ExitError{Code: 1, Err: fmt.Errorf("unhealthy: GET %s answered %s: %s", url, resp.Status, body)}
	}
	fmt.Fprintf(stdout, "healthy: %s\n", bytes.TrimSpace(body))
	return nil
}

// dialAddr is where to reach a server listening on addr: an unspecified
// host (0.0.0.0, [::] or none) listens on loopback too.
func dialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if ip != nil && ip.To4() == nil {
			host = "::1"
		} else {
			host = "127.0.0.1"
		}
	}
	return net.JoinHostPort(host, port)
}
