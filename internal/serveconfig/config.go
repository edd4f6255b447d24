// Package serveconfig owns the settings of planserver serve and of the
// admin commands beside it (internal/cli/admin: migrate, token, backup,
// gate add|list|remove, healthcheck): the Config they are read into, the
// flags that declare them with their PLANSERVER_* environment variables,
// defaults and help text, the checks that refuse a wrong value before
// anything is opened, and what the settings make: the database (OpenDB)
// and serve's app (App, Hooks, OIDCSettings, ConnectionLimits). It also
// owns the settings serve makes to the process itself: the
// file-descriptor limit and the garbage collector's target. cmd/planserver
// wires them: it parses the command line into a Config, builds the app
// from it and runs it.
package serveconfig

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/gates/proxy"
	planhttp "github.com/planserver/planserver/internal/http"
	"github.com/planserver/planserver/internal/http/signin"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/planserver/planserver/internal/shellclass"
	"github.com/planserver/planserver/internal/webhooks/deliver"
	"github.com/spf13/pflag"
)

// Config is every setting of planserver, filled from flags, then from
// PLANSERVER_* environment variables for flags not given, then defaults.
type Config struct {
	Addr                 string
	DB                   string
	Durability           string
	PGWriters            int
	LogFormat            string
	RequirePreconditions bool
	MaxBodyBytes         int64
	MaxPlanBytes         int64
	PlanModeAllow        string
	Auth                 string
	RateLimit            float64
	RateBurst            int
	CORSOrigins          string
	AllowedHosts         string
	PlanHistory          int
	EventRetention       time.Duration
	EventMaxRows         int64
	SSEHeartbeat         time.Duration
	PprofAddr            string
	MaxConnections       int
	MaxEventStreams      int
	SkipIntegrityCheck   bool
	ShellReadOnly        string
	// Host hooks.
	HookSandboxAllowConnect string
	HookSandbox             string
	HookMCPServers          string
	PublicURL               string
	WebhookAllowHosts       string
	WebhookLease            time.Duration
	// Sign-in through an OIDC provider (docs/sign-in.md).
	OIDCIssuer           string
	OIDCClientID         string
	OIDCClientSecretFile string
	OIDCRedirectURL      string
	OIDCRoles            string
	OIDCScopes           string
	OIDCSessionIdle      time.Duration
	OIDCSessionMax       time.Duration
	UpstreamTimeout      time.Duration
}

// DefaultAddr is where serve listens and healthcheck asks.
const DefaultAddr = "127.0.0.1:8080"

// New is the configuration of a command before its flags are read: the
// settings it does not read keep the defaults Validate expects.
func New() *Config {
	return &Config{Durability: string(db.DurabilityNormal), LogFormat: "text"}
}

// A `name` in backquotes in a flag's usage is its value's placeholder in
// --help. Every command that opens the database has --db; serve has the
// rest; healthcheck has --addr. Each flag has its PLANSERVER_* variable
// (EnvFlags), but for perCallFlags.

// DBFlag declares --db.
func DBFlag(fs *pflag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.DB, "db", "planserver.db", "SQLite database `file`, or a postgres:// URL (PostgreSQL: any number of replicas on one database)")
}

// Flags declares serve's flags.
func Flags(fs *pflag.FlagSet, cfg *Config) {
	DBFlag(fs, cfg)
	fs.StringVar(&cfg.Addr, "addr", DefaultAddr, "`host:port` to listen on")
	fs.StringVar(&cfg.Durability, "durability", "normal", "SQLite synchronous `level`: normal or full (full fsyncs every commit); on PostgreSQL the server's settings decide")
	fs.IntVar(&cfg.PGWriters, "pg-writers", db.DefaultKeyedWriters,
		"PostgreSQL `connections` each replica runs plan writes on at once (writes of different plans overlap); other writes take one more")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log `format`: text or json")
	fs.BoolVar(&cfg.RequirePreconditions, "require-preconditions", false,
		"answer 428 to updates and deletes that carry no If-Match or last_known_revision")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 1<<20, "largest JSON request body accepted, in `bytes` (413 above)")
	fs.Int64Var(&cfg.MaxPlanBytes, "max-plan-bytes", 1<<20, "largest plan content, shared or session plan, in `bytes` (413 above)")
	fs.StringVar(&cfg.PlanModeAllow, "plan-mode-allow", strings.Join(sessions.DefaultPlanModeAllow, ","),
		"comma-separated `tools` offered in plan mode whatever their annotations (empty: read-only tools only)")
	fs.StringVar(&cfg.Auth, "auth", "none",
		"access `mode`: none (every caller is an admin; loopback --addr only) or token (Authorization: Bearer on every /v1 request)")
	fs.Float64Var(&cfg.RateLimit, "rate-limit", 50, "`requests` a second per token with --auth token; 0 turns rate limiting off")
	fs.IntVar(&cfg.RateBurst, "rate-burst", 100, "`requests` a caller may make at once above --rate-limit")
	fs.StringVar(&cfg.CORSOrigins, "cors-origins", "",
		"comma-separated browser `origins` allowed to call the API, e.g. https://console.example.com (empty: CORS off)")
	fs.StringVar(&cfg.AllowedHosts, "allowed-hosts", "",
		"comma-separated Host `names` (name or name:port) served besides loopback ones, for a proxy in front; "+
			"with --auth token, setting it turns the Host check on (empty: loopback only with --auth none, no check with --auth token)")
	fs.BoolVar(&cfg.SkipIntegrityCheck, "skip-integrity-check", false,
		"serve without SQLite's quick_check at start (for very large databases; a damaged one is then found by requests)")
	fs.StringVar(&cfg.PprofAddr, "pprof-addr", "",
		"serve net/http/pprof on this separate `host:port` (loopback only; empty: off), for profiling")
	fs.IntVar(&cfg.PlanHistory, "plan-history", 100,
		"`revisions` of each shared plan kept readable, the current one included; older ones are pruned")
	cli.DurationVar(fs, &cfg.EventRetention, "event-retention", events.DefaultMaxAge,
		"prune events older than this `duration` (0 keeps events of any age); older cursors get 410 cursor_expired")
	fs.Int64Var(&cfg.EventMaxRows, "event-max-rows", events.DefaultMaxRows,
		"keep at most this many of the newest `events` (0: no cap)")
	cli.DurationVar(fs, &cfg.SSEHeartbeat, "sse-heartbeat", planhttp.DefaultSSEHeartbeat,
		"`interval` of the comment lines that keep idle event streams alive")
	fs.IntVar(&cfg.MaxConnections, "max-connections", 0,
		"client `connections` open at once; above it a new one is answered 503 and closed "+
			"(0: the file-descriptor limit less 64 and 3 per database connection)")
	fs.IntVar(&cfg.MaxEventStreams, "max-event-streams", 0,
		"event `streams` open at once; above it GET /v1/events as SSE is 503 (0: 3/4 of --max-connections)")
	addShellReadOnlyFlag(fs, cfg)
	// Host hooks (POST /v1/hooks/{host}; docs/hosts.md).
	fs.StringVar(&cfg.HookSandbox, "hook-sandbox", "on",
		"`on` runs plan-mode shell commands in the read-only sandbox where the host can rewrite them; off never does, "+
			"and the classifier's allowlist alone decides (for a host on another machine than planserver)")
	fs.StringVar(&cfg.HookSandboxAllowConnect, "hook-sandbox-allow-connect", "",
		"`host:port` list a plan-mode command run in the read-only sandbox may still connect to (empty: none; planserver's own port is refused)")
	fs.StringVar(&cfg.HookMCPServers, "hook-mcp-servers", "planserver",
		"comma-separated `names` hosts give planserver's own MCP server (mcp__NAME__tool): its tools are judged by the mode as on /mcp")
	fs.StringVar(&cfg.PublicURL, "public-url", "",
		"the `URL` people reach this server at, e.g. https://planserver.example.com, for the console links in "+
			"webhook messages (empty: http:// and the listening address)")
	fs.StringVar(&cfg.WebhookAllowHosts, "webhook-allow-hosts", "",
		"comma-separated private webhook `targets` allowed: host names, IP addresses or CIDR ranges "+
			"(private, loopback, link-local and metadata addresses are refused otherwise)")
	fs.DurationVar(&cfg.WebhookLease, "webhook-lease", deliver.DefaultLeaseTTL,
		"how long a replica's hold on a webhook subscription lasts unrenewed (`duration`): how soon another "+
			"replica takes over the deliveries of one that died")
	// Sign-in (OIDC, with --auth token): one block, see docs/sign-in.md.
	fs.StringVar(&cfg.OIDCIssuer, "oidc-issuer", "",
		"OIDC provider's issuer `URL`; turns sign-in on for the console (needs --auth token; empty: tokens only)")
	fs.StringVar(&cfg.OIDCClientID, "oidc-client-id", "", "the `client` id registered at the OIDC provider")
	fs.StringVar(&cfg.OIDCClientSecretFile, "oidc-client-secret-file", "",
		"`file` holding the OIDC client secret (or set the secret itself in PLANSERVER_OIDC_CLIENT_SECRET)")
	fs.StringVar(&cfg.OIDCRedirectURL, "oidc-redirect-url", "",
		"this server's callback as browsers reach it, registered at the provider; its path is /auth/callback (e.g. https://planserver.example.com/auth/callback)")
	fs.StringVar(&cfg.OIDCRoles, "oidc-roles", "",
		"comma-separated `rules` ROLE[SUBTREE]=email:a@b.c|domain:b.c|group:name, roles admin, reviewer, viewer; first match wins, no match: no entry")
	fs.StringVar(&cfg.OIDCScopes, "oidc-scopes", "openid,email,profile",
		"comma-separated OIDC `scopes` to ask for (add groups when rules match groups and the provider needs the scope)")
	fs.DurationVar(&cfg.OIDCSessionIdle, "oidc-session-idle", signin.DefaultIdle,
		"a sign-in without a request for this `duration` ends")
	fs.DurationVar(&cfg.OIDCSessionMax, "oidc-session-max", signin.DefaultMaxAge,
		"a sign-in ends this `duration` after login whatever the activity")
	// Issue 29: a gate's upstream that never answers must not hold a
	// caller (or anything else) forever.
	fs.DurationVar(&cfg.UpstreamTimeout, "upstream-timeout", proxy.DefaultUpstreamTimeout,
		"the longest a call to a registered gate's tool server (/mcp/gate/{name}) may take, connecting included; "+
			"past it the caller gets an error")
}

// addShellReadOnlyFlag declares serve's --shell-read-only, the file that
// extends the read-only shell table of plan mode's hooks (docs/sandbox.md)
// for the HTTP form; the hook command reads its own.
func addShellReadOnlyFlag(fs *pflag.FlagSet, cfg *Config) {
	fs.StringVar(&cfg.ShellReadOnly, "shell-read-only", "",
		"YAML `file` whose shell_read_only section adds commands to the read-only shell table (empty: the built-in table)")
}

// shellTable is the read-only shell table: the built-in one extended by
// --shell-read-only. A file that is missing or wrong is an error, never a
// silently smaller or larger table.
func (c *Config) shellTable() (*shellclass.Table, error) {
	t, err := shellclass.LoadFile(c.ShellReadOnly)
	if err != nil {
		return nil, fmt.Errorf("--shell-read-only: %w", err)
	}
	return t, nil
}

// envName is the environment variable of a flag: --max-plan-bytes is
// PLANSERVER_MAX_PLAN_BYTES.
func envName(flagName string) string {
	return "PLANSERVER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// perCallFlags describe one invocation (the token being made), not the
// installation, so no environment variable sets them: a stray
// PLANSERVER_NAME must not name every token.
var perCallFlags = map[string]bool{"role": true, "session": true, "name": true, "ttl": true}

// EnvFlags gives every flag of fs but the per-call ones its environment
// variable.
func EnvFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if !perCallFlags[f.Name] {
			cli.BindEnv(fs, f.Name, envName(f.Name))
		}
	})
}

// ServeHelp is the synopsis serve's --help prints above its flags.
const ServeHelp = `Usage: planserver serve [flags]

Apply pending migrations to the database, then serve the API until SIGINT
or SIGTERM (a second signal exits at once). Refuses to start while another
planserver serve or migrate holds the database.
`

// Validate checks values the flag package cannot.
func (c *Config) Validate() error {
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

// ValidateServe checks the values only serve uses.
func (c *Config) ValidateServe() error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.UpstreamTimeout < 0 {
		return fmt.Errorf("--upstream-timeout must not be negative")
	}
	if c.MaxConnections < 0 || c.MaxEventStreams < 0 {
		return fmt.Errorf("--max-connections and --max-event-streams must not be negative (0 derives them from the file-descriptor limit)")
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("--public-url %q: want an absolute http:// or https:// URL such as https://planserver.example.com", c.PublicURL)
		}
	}
	if c.WebhookLease != 0 && c.WebhookLease < time.Second {
		return fmt.Errorf("--webhook-lease %v: at least 1s (0: the default, %v)", c.WebhookLease, deliver.DefaultLeaseTTL)
	}
	if _, err := deliver.NewGuard(strings.Split(c.WebhookAllowHosts, ",")); err != nil {
		return err
	}
	if c.PlanHistory < 1 {
		return fmt.Errorf("--plan-history %d: keep at least 1 revision (the current one)", c.PlanHistory)
	}
	if c.PGWriters < 1 {
		return fmt.Errorf("--pg-writers %d: at least 1", c.PGWriters)
	}
	if _, err := c.shellTable(); err != nil {
		return err
	}
	// Before the access rules, which judge the address's host.
	if err := checkListenAddr(c.Addr); err != nil {
		return err
	}
	return c.validateAccess()
}

// checkListenAddr says what is wrong with an --addr that is not host:port
// before anything else judges it: "8080" alone would otherwise be read as
// a host name, and refused as a non-loopback address for --auth none.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		if _, numErr := strconv.Atoi(addr); numErr == nil {
			return fmt.Errorf("--addr %q: want host:port, such as 127.0.0.1:%s (a port alone is not an address)", addr, addr)
		}
		return fmt.Errorf("--addr %q: want host:port, such as 127.0.0.1:8080", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil && port != "" {
		return fmt.Errorf("--addr %q: the port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// validateAccess checks access control, rate limit and CORS.
func (c *Config) validateAccess() error {
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
	if _, err := origins(c.CORSOrigins); err != nil {
		return err
	}
	_, err := hostList(c.AllowedHosts)
	return err
}

// hostList splits an --allowed-hosts value into Host names, each a name or
// address with an optional port, as a browser sends it in the Host header.
func hostList(v string) ([]string, error) {
	var out []string
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		u, err := url.Parse("http://" + h)
		if err != nil || u.Host != h || u.User != nil || strings.ContainsAny(h, "*/?#@") {
			return nil, fmt.Errorf("--allowed-hosts: %q is not a host name such as planserver.example.com or "+
				"planserver.example.com:8443 (no scheme, no path, no wildcards)", h)
		}
		out = append(out, h)
	}
	return out, nil
}

// CheckBound refuses --auth none on a listener that is not bound to a
// loopback address: the name in --addr was checked before, but a name such
// as localhost may resolve elsewhere, and what counts is where the server
// actually listens.
func (c *Config) CheckBound(addr net.Addr) error {
	if c.Auth != planhttp.AuthNone {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to serve without authentication: --addr %s is bound to %s, which is not a loopback address; "+
		"--auth none treats every caller as an admin. Serve with --auth token (PLANSERVER_AUTH=token), or listen on 127.0.0.1",
		c.Addr, addr)
}

// isLoopback reports whether addr (host:port) names a loopback address,
// a first check before listening (CheckBound checks where it is bound).
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

// NewLogger returns the process logger for --log-format.
func NewLogger(format string, w io.Writer) *slog.Logger {
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

// OIDCSettings reads the sign-in flags, and the client secret from its
// file or PLANSERVER_OIDC_CLIENT_SECRET. ok is false when sign-in is off
// (no --oidc-issuer and no other --oidc-* flag). Every mistake is an error
// naming the flag, so serve stops before it listens.
func (c *Config) OIDCSettings(getenv func(string) string) (s signin.Settings, ok bool, err error) {
	if c.OIDCIssuer == "" {
		if c.OIDCClientID != "" || c.OIDCRedirectURL != "" || c.OIDCRoles != "" || c.OIDCClientSecretFile != "" {
			return s, false, fmt.Errorf("--oidc-client-id, --oidc-redirect-url, --oidc-roles and --oidc-client-secret-file " +
				"need --oidc-issuer (the provider's issuer URL) to turn sign-in on")
		}
		return s, false, nil
	}
	if c.Auth != planhttp.AuthToken {
		return s, false, fmt.Errorf("--oidc-issuer needs --auth token: sign-in is for a shared server, where agents keep their bearer tokens " +
			"(with --auth none every caller is already an admin)")
	}
	if c.OIDCRedirectURL == "" {
		return s, false, fmt.Errorf("--oidc-redirect-url is required with --oidc-issuer: this server's callback as browsers reach it, "+
			"e.g. https://planserver.example.com%s", signin.CallbackPath)
	}
	secret := getenv("PLANSERVER_OIDC_CLIENT_SECRET")
	if c.OIDCClientSecretFile != "" {
		if secret != "" {
			return s, false, fmt.Errorf("the OIDC client secret is given twice: in --oidc-client-secret-file and in PLANSERVER_OIDC_CLIENT_SECRET; keep one")
		}
		b, err := os.ReadFile(c.OIDCClientSecretFile)
		if err != nil {
			return s, false, fmt.Errorf("--oidc-client-secret-file: %w", err)
		}
		if secret = strings.TrimSpace(string(b)); secret == "" {
			return s, false, fmt.Errorf("--oidc-client-secret-file %s is empty", c.OIDCClientSecretFile)
		}
	}
	rules, err := auth.ParseRoleRules(c.OIDCRoles)
	if err != nil {
		return s, false, err
	}
	if c.OIDCSessionIdle <= 0 || c.OIDCSessionMax <= 0 {
		return s, false, fmt.Errorf("--oidc-session-idle and --oidc-session-max must be positive")
	}
	return signin.Settings{Issuer: c.OIDCIssuer, ClientID: c.OIDCClientID, ClientSecret: secret,
		RedirectURL: c.OIDCRedirectURL, Scopes: allowlist(c.OIDCScopes), Roles: rules,
		Idle: c.OIDCSessionIdle, MaxAge: c.OIDCSessionMax}, true, nil
}

// App is the app's configuration from serve's settings, once serve has
// opened the database (d), made its logger, settled the host hooks
// (Hooks), the cap on event streams (ConnectionLimits) and the sign-in
// provider (nil when sign-in is off, see OIDCSettings). c must have
// passed ValidateServe.
func (c *Config) App(d *db.DB, log *slog.Logger, hooks app.HookConfig, maxEventStreams int, oidc *signin.OIDC, version string) app.Config {
	corsOrigins, _ := origins(c.CORSOrigins) // validated
	allowedHosts, _ := hostList(c.AllowedHosts)
	publicURL := strings.TrimRight(c.PublicURL, "/")
	if publicURL == "" {
		publicURL = defaultPublicURL(c.Addr)
	}
	return app.Config{
		Config: planhttp.Config{
			DB:                   d,
			Logger:               log,
			MaxBodyBytes:         c.MaxBodyBytes,
			MaxPlanBytes:         c.MaxPlanBytes,
			RequirePreconditions: c.RequirePreconditions,
			Version:              version,
			Auth:                 c.Auth,
			RateLimit:            c.RateLimit,
			RateBurst:            c.RateBurst,
			CORSOrigins:          corsOrigins,
			AllowedHosts:         allowedHosts,
			SSEHeartbeat:         c.SSEHeartbeat,
			MaxEventStreams:      maxEventStreams,
			OIDC:                 oidc,
		},
		Hooks:           hooks,
		PlanModeAllow:   allowlist(c.PlanModeAllow),
		PlanHistory:     c.PlanHistory,
		UpstreamTimeout: c.UpstreamTimeout,
		EventRetention:  events.Retention{MaxAge: c.EventRetention, MaxRows: c.EventMaxRows},
		Webhooks: deliver.Options{AllowHosts: strings.Split(c.WebhookAllowHosts, ","), PublicURL: publicURL,
			LeaseTTL: c.WebhookLease},
	}
}

// defaultPublicURL is the base of the console links in webhook messages
// without --public-url: http:// and --addr, an unspecified host named
// localhost.
func defaultPublicURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// OpenDB opens the database (--db, --durability, --pg-writers), saying
// why when SQLite cannot.
func (c *Config) OpenDB(ctx context.Context) (*db.DB, error) {
	durability, _ := db.ParseDurability(c.Durability) // validated
	store, err := db.Open(ctx, c.DB, db.Options{Durability: durability, KeyedWriters: c.PGWriters})
	if err != nil {
		return nil, db.ExplainOpenError(c.DB, err)
	}
	return store, nil
}
