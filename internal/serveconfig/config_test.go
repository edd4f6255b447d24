package serveconfig

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/cli"
	"github.com/planserver/planserver/internal/sessions"
	"github.com/spf13/pflag"
)

// parseServe reads serve's flags from args into cfg, then the
// environment, as serve does.
func parseServe(cfg *Config, args []string, getenv func(string) string) error {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	Flags(fs, cfg)
	EnvFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return cli.ApplyEnv(fs, getenv)
}

func TestFlagsFallBackToEnvironment(t *testing.T) {
	env := map[string]string{
		"PLANSERVER_ADDR":                  "127.0.0.1:9999",
		"PLANSERVER_DB":                    "from-env.db",
		"PLANSERVER_DURABILITY":            "full",
		"PLANSERVER_REQUIRE_PRECONDITIONS": "true",
		"PLANSERVER_EVENT_RETENTION":       "24h",
		"PLANSERVER_EVENT_MAX_ROWS":        "500",
	}
	var cfg Config
	if err := parseServe(&cfg, []string{"--db", "from-flag.db"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:9999" || cfg.DB != "from-flag.db" || cfg.Durability != "full" || !cfg.RequirePreconditions {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.LogFormat != "text" {
		t.Errorf("default log format = %q", cfg.LogFormat)
	}
	if cfg.EventRetention != 24*time.Hour || cfg.EventMaxRows != 500 || cfg.SSEHeartbeat != 15*time.Second {
		t.Errorf("event settings = %v, %d, %v", cfg.EventRetention, cfg.EventMaxRows, cfg.SSEHeartbeat)
	}
	if err := (&Config{Durability: "normal", LogFormat: "text", EventRetention: -time.Hour}).Validate(); err == nil {
		t.Error("negative retention accepted")
	}
	bad := Config{Durability: "sometimes", LogFormat: "text"}
	if err := bad.Validate(); err == nil {
		t.Error("durability sometimes accepted")
	}
	bad = Config{Durability: "normal", LogFormat: "xml"}
	if err := bad.Validate(); err == nil {
		t.Error("log format xml accepted")
	}
	if err := parseServe(&cfg, nil, func(k string) string {
		if k == "PLANSERVER_REQUIRE_PRECONDITIONS" {
			return "maybe"
		}
		return ""
	}); err == nil || !strings.Contains(err.Error(), "PLANSERVER_REQUIRE_PRECONDITIONS") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestPlanModeAllowFlag(t *testing.T) {
	parse := func(args []string, env map[string]string) []string {
		t.Helper()
		var cfg Config
		if err := parseServe(&cfg, args, func(k string) string { return env[k] }); err != nil {
			t.Fatal(err)
		}
		return allowlist(cfg.PlanModeAllow)
	}
	if got := strings.Join(parse(nil, nil), ","); got != strings.Join(sessions.DefaultPlanModeAllow, ",") {
		t.Errorf("default allowlist = %s", got)
	}
	if got := parse(nil, map[string]string{"PLANSERVER_PLAN_MODE_ALLOW": " plan_write, ,plan_exit,"}); strings.Join(got, ",") != "plan_write,plan_exit" {
		t.Errorf("allowlist from the environment = %q", got)
	}
	if got := parse([]string{"--plan-mode-allow", ""}, nil); got == nil || len(got) != 0 {
		t.Errorf("explicitly empty allowlist = %#v, want empty and non-nil", got)
	}
}

func TestPlanHistoryFlag(t *testing.T) {
	var cfg Config
	if err := parseServe(&cfg, nil, func(string) string { return "" }); err != nil || cfg.PlanHistory != 100 {
		t.Fatalf("default --plan-history = %d, %v", cfg.PlanHistory, err)
	}
	if err := parseServe(&cfg, nil, func(k string) string {
		return map[string]string{"PLANSERVER_PLAN_HISTORY": "7"}[k]
	}); err != nil || cfg.PlanHistory != 7 {
		t.Fatalf("PLANSERVER_PLAN_HISTORY=7 gave %d, %v", cfg.PlanHistory, err)
	}
	for _, n := range []int{0, -1} {
		bad := Config{Durability: "normal", LogFormat: "text", PlanHistory: n}
		if err := bad.ValidateServe(); err == nil || !strings.Contains(err.Error(), "--plan-history") {
			t.Errorf("--plan-history %d: %v", n, err)
		}
	}
	// migrate has no --plan-history and does not check it.
	if err := (&Config{Durability: "normal", LogFormat: "text"}).Validate(); err != nil {
		t.Errorf("migrate config: %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.1.2.3:80": true, "[::1]:8080": true, "localhost:8080": true,
		"LocalHost:1": true, "0.0.0.0:8080": false, ":8080": false, "[::]:8080": false,
		"10.0.0.1:8080": false, "example.com:80": false, "127.0.0.1": false, "": false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v", addr, got)
		}
	}
}

func TestServeAccessFlags(t *testing.T) {
	base := Config{Addr: "127.0.0.1:8080", Auth: "none", RateLimit: 50, RateBurst: 100}
	for name, tc := range map[string]struct {
		mod  func(*Config)
		fail string
	}{
		"defaults":              {func(*Config) {}, ""},
		"token anywhere":        {func(c *Config) { c.Auth, c.Addr = "token", "0.0.0.0:8080" }, ""},
		"unknown auth":          {func(c *Config) { c.Auth = "basic" }, "--auth"},
		"rate off":              {func(c *Config) { c.RateLimit, c.RateBurst = 0, 0 }, ""},
		"no burst":              {func(c *Config) { c.RateBurst = 0 }, "--rate-burst"},
		"negative rate":         {func(c *Config) { c.RateLimit = -1 }, "--rate-limit"},
		"origins":               {func(c *Config) { c.CORSOrigins = "https://a.example.com, http://localhost:5173" }, ""},
		"wildcard origin":       {func(c *Config) { c.CORSOrigins = "*" }, "--cors-origins"},
		"wildcard subdomain":    {func(c *Config) { c.CORSOrigins = "https://*.example.com" }, "--cors-origins"},
		"origin with a path":    {func(c *Config) { c.CORSOrigins = "https://a.example.com/app" }, "--cors-origins"},
		"origin without scheme": {func(c *Config) { c.CORSOrigins = "a.example.com" }, "--cors-origins"},
	} {
		c := base
		tc.mod(&c)
		err := c.validateAccess()
		if tc.fail == "" && err != nil || tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	got, _ := origins(" https://a.example.com/ ,,http://localhost:5173")
	if strings.Join(got, " ") != "https://a.example.com http://localhost:5173" {
		t.Errorf("origins = %q", got)
	}
	var cfg Config
	env := map[string]string{"PLANSERVER_AUTH": "token", "PLANSERVER_RATE_LIMIT": "5", "PLANSERVER_CORS_ORIGINS": "https://x.example"}
	if err := parseServe(&cfg, nil, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Auth != "token" || cfg.RateLimit != 5 || cfg.RateBurst != 100 || cfg.CORSOrigins != "https://x.example" {
		t.Errorf("from the environment: %+v", cfg)
	}
}

func TestAllowedHostsFlag(t *testing.T) {
	base := Config{Addr: "127.0.0.1:8080", Auth: "none", RateLimit: 50, RateBurst: 100}
	for value, ok := range map[string]bool{
		"":                    true,
		"planserver.internal": true,
		" planserver.internal , plans.example.com:8443,[fd00::1],10.0.0.5": true,
		"https://plans.example.com":                                        false,
		"plans.example.com/ui":                                             false,
		"*.example.com":                                                    false,
		"user@plans.example.com":                                           false,
		"plans.example.com:port":                                           false,
	} {
		c := base
		c.AllowedHosts = value
		err := c.validateAccess()
		if ok && err != nil || !ok && (err == nil || !strings.Contains(err.Error(), "--allowed-hosts")) {
			t.Errorf("--allowed-hosts %q: %v", value, err)
		}
	}
	got, _ := hostList(" planserver.internal , plans.example.com:8443,,[fd00::1]")
	if strings.Join(got, " ") != "planserver.internal plans.example.com:8443 [fd00::1]" {
		t.Errorf("hostList = %q", got)
	}
	var cfg Config
	env := map[string]string{"PLANSERVER_ALLOWED_HOSTS": "planserver.internal"}
	if err := parseServe(&cfg, nil, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.AllowedHosts != "planserver.internal" {
		t.Errorf("from the environment: %q", cfg.AllowedHosts)
	}
}

// TestAuthNoneChecksTheBoundAddress: --auth none is refused on a listener
// that is not bound to loopback, whatever --addr's name said.
func TestAuthNoneChecksTheBoundAddress(t *testing.T) {
	cfg := Config{Auth: "none", Addr: "localhost:0"}
	loop, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer loop.Close()
	if err := cfg.CheckBound(loop.Addr()); err != nil {
		t.Errorf("loopback listener refused: %v", err)
	}
	all, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if err := cfg.CheckBound(all.Addr()); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("a listener on every interface: %v", err)
	}
	cfg.Auth = "token"
	if err := cfg.CheckBound(all.Addr()); err != nil {
		t.Errorf("--auth token on every interface: %v", err)
	}
}

// TestConnectionLimitsFormula: the caps derived from the descriptor limit,
// and the settings refused.
func TestConnectionLimitsFormula(t *testing.T) {
	for _, c := range []struct {
		fd                  uint64
		dbConns             int
		conns, streams      int
		setConns, setStream int
	}{
		{256, 5, 177, 132, 0, 0},               // 256 - 64 - 3*5
		{1024, 33, 861, 645, 0, 0},             // 16 cores: 32 readers
		{20, 5, 16, 12, 0, 0},                  // never below 16
		{1 << 40, 5, 1<<20 - 79, 786372, 0, 0}, // an unlimited RLIMIT counts as 2^20
		{256, 5, 100, 75, 100, 0},              // streams follow an explicit --max-connections
		{256, 5, 177, 10, 0, 10},
	} {
		cfg := Config{MaxConnections: c.setConns, MaxEventStreams: c.setStream}
		conns, streams, err := cfg.ConnectionLimits(c.fd, c.dbConns)
		if err != nil || conns != c.conns || streams != c.streams {
			t.Errorf("fd %d, %d db conns, set %d/%d: %d/%d %v, want %d/%d", c.fd, c.dbConns, c.setConns, c.setStream,
				conns, streams, err, c.conns, c.streams)
		}
	}
	if _, _, err := (&Config{MaxConnections: 10, MaxEventStreams: 20}).ConnectionLimits(256, 5); err == nil {
		t.Error("more streams than connections accepted")
	}
}
