package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/sessions"
)

// config is every setting of planserver, filled from flags, then from
// PLANSERVER_* environment variables for flags not given, then defaults.
type config struct {
	Addr                 string
	DB                   string
	Durability           string
	LogFormat            string
	RequirePreconditions bool
	MaxBodyBytes         int64
	MaxPlanBytes         int64
	PlanModeAllow        string
	Auth                 string
	RateLimit            float64
	RateBurst            int
	CORSOrigins          string
	PlanHistory          int
	EventRetention       time.Duration
	EventMaxRows         int64
	SSEHeartbeat         time.Duration
	PprofAddr            string
}

// flagSet declares the flags of a subcommand. serveFlags adds those only
// serve needs.
func flagSet(name string, cfg *config, serveFlags bool, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("planserver "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.DB, "db", "planserver.db", "SQLite database file, or a postgres:// URL (PostgreSQL: any number of replicas on one database)")
	fs.StringVar(&cfg.Durability, "durability", "normal", "normal or full: SQLite synchronous setting (full fsyncs every commit); PostgreSQL's own settings decide there")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "text or json")
	if serveFlags {
		fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "address to listen on")
		fs.BoolVar(&cfg.RequirePreconditions, "require-preconditions", false,
			"answer 428 to updates and deletes that carry no If-Match or last_known_revision")
		fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 1<<20, "largest JSON request body accepted (413 above)")
		fs.Int64Var(&cfg.MaxPlanBytes, "max-plan-bytes", 1<<20, "largest plan content, shared or session plan, in bytes (413 above)")
		fs.StringVar(&cfg.PlanModeAllow, "plan-mode-allow", strings.Join(sessions.DefaultPlanModeAllow, ","),
			"comma-separated tools offered in plan mode whatever their annotations (empty: read-only tools only)")
		fs.StringVar(&cfg.Auth, "auth", "none",
			"none (every caller is an admin; loopback --addr only) or token (Authorization: Bearer on every /v1 request)")
		fs.Float64Var(&cfg.RateLimit, "rate-limit", 50, "requests a second per token with --auth token; 0 turns rate limiting off")
		fs.IntVar(&cfg.RateBurst, "rate-burst", 100, "requests a caller may make at once above --rate-limit")
		fs.StringVar(&cfg.CORSOrigins, "cors-origins", "",
			"comma-separated browser origins allowed to call the API, e.g. https://console.example.com (empty: CORS off)")
		fs.StringVar(&cfg.PprofAddr, "pprof-addr", "",
			"serve net/http/pprof on this separate address (loopback only; empty: off), for profiling")
		fs.IntVar(&cfg.PlanHistory, "plan-history", 100,
			"revisions of each shared plan kept readable, the current one included; older ones are pruned")
		fs.DurationVar(&cfg.EventRetention, "event-retention", events.DefaultMaxAge,
			"prune events older than this (0 keeps events of any age); older cursors get 410 cursor_expired")
		fs.Int64Var(&cfg.EventMaxRows, "event-max-rows", events.DefaultMaxRows,
			"keep at most this many of the newest events (0: no cap)")
		fs.DurationVar(&cfg.SSEHeartbeat, "sse-heartbeat", planhttp.DefaultSSEHeartbeat,
			"interval of the comment lines that keep idle event streams alive")
	}
	return fs
}

// envName is the environment variable of a flag: --max-plan-bytes is
// PLANSERVER_MAX_PLAN_BYTES.
func envName(flagName string) string {
	return "PLANSERVER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its environment variable.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || err != nil {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if setErr := fs.Set(f.Name, v); setErr != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, setErr)
			}
		}
	})
	return err
}

// validate checks values the flag package cannot.
func (c *config) validate() error {
	if _, err := db.ParseDurability(c.Durability); err != nil {
		return fmt.Errorf("--durability: %w", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
	}
	if c.MaxBodyBytes < 0 || c.MaxPlanBytes < 0 {
		return fmt.Errorf("--max-body-bytes and --max-plan-bytes must not be negative")
	}
	if c.EventRetention < 0 || c.EventMaxRows < 0 {
		return fmt.Errorf("--event-retention and --event-max-rows must not be negative (0 turns the limit off)")
	}
	if c.SSEHeartbeat < 0 {
		return fmt.Errorf("--sse-heartbeat must not be negative")
	}
	return nil
}

// validateServe checks the values only serve uses.
func (c *config) validateServe() error {
	if err := c.validate(); err != nil {
		return err
	}
	if c.PlanHistory < 1 {
		return fmt.Errorf("--plan-history %d: keep at least 1 revision (the current one)", c.PlanHistory)
	}
	return c.validateAccess()
}

// validateAccess checks access control, rate limit and CORS.
func (c *config) validateAccess() error {
	switch c.Auth {
	case planhttp.AuthToken:
	case planhttp.AuthNone:
		if !isLoopback(c.Addr) {
			return fmt.Errorf("refusing to serve %s without authentication: --auth none treats every caller as an admin, "+
				"so it is allowed only on a loopback address (127.0.0.1, ::1, localhost). Create an admin token with\n"+
				"  planserver token create --role admin --name NAME --db %s\n"+
				"and serve with --auth token (PLANSERVER_AUTH=token), or listen on 127.0.0.1", c.Addr, db.Redact(c.DB))
		}
	default:
		return fmt.Errorf("--auth %q: want none or token", c.Auth)
	}
	if c.RateLimit < 0 || c.RateBurst < 0 {
		return fmt.Errorf("--rate-limit and --rate-burst must not be negative")
	}
	if c.RateLimit > 0 && c.RateBurst < 1 {
		return fmt.Errorf("--rate-burst must be at least 1 when --rate-limit is on (set --rate-limit 0 to turn it off)")
	}
	_, err := origins(c.CORSOrigins)
	return err
}

// isLoopback reports whether addr (host:port) listens on loopback only.
// An empty host means every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// origins splits a --cors-origins value into origins, each a scheme and a
// host with an optional port and nothing else. The list is explicit: "*"
// and wildcards are refused.
func origins(v string) ([]string, error) {
	var out []string
	for _, o := range strings.Split(v, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Contains(o, "*") ||
			u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("--cors-origins: %q is not an origin such as https://console.example.com (no wildcards, no path)", o)
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	return out, nil
}

// newLogger returns the process logger for --log-format.
func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// allowlist splits a --plan-mode-allow value into tool names, dropping
// blanks; an empty value is an empty allowlist, not the default.
func allowlist(v string) []string {
	names := []string{}
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return names
}
