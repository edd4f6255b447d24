// Command planbench measures planserver against baselines taken in the same
// run, so the numbers mean something on any machine: it starts the real
// server binary on a fresh database in a temp dir, drives it over loopback
// HTTP with keep-alive connections at a fixed concurrency, measures each
// scenario's baseline with the same client and concurrency, and prints one
// table with the ratio of each scenario to its baseline.
//
//	go run ./cmd/planbench -bin bin/planserver
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "planbench:", err)
		os.Exit(1)
	}
}

type options struct {
	bin         string
	concurrency int
	duration    time.Duration
	largeList   int
	smallList   int
	// pprofDir, when set, receives a CPU profile of the server per scenario.
	pprofDir string
	// postgres, when set, is a PostgreSQL server to run the PostgreSQL
	// scenarios on (postgres.go); postgresOnly skips the SQLite ones.
	postgres     string
	postgresOnly bool
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("planbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin/planserver", "planserver binary to measure")
	fs.IntVar(&o.concurrency, "c", 64, "concurrent keep-alive connections")
	fs.DurationVar(&o.duration, "d", 3*time.Second, "measuring time per scenario")
	fs.IntVar(&o.smallList, "list-small", 1000, "plans stored for the small list scenario")
	fs.IntVar(&o.largeList, "list-large", 100000, "plans stored for the large list scenario")
	fs.StringVar(&o.pprofDir, "pprof", "", "write a CPU profile of the server for each scenario to this directory")
	fs.StringVar(&o.postgres, "postgres", os.Getenv("PLANSERVER_BENCH_POSTGRES"),
		"also run the PostgreSQL scenarios on this server (a URL of a user that may create databases; default $PLANSERVER_BENCH_POSTGRES)")
	fs.BoolVar(&o.postgresOnly, "postgres-only", false, "run only the baselines the PostgreSQL scenarios need and those scenarios")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.postgresOnly && o.postgres == "" {
		return fmt.Errorf("-postgres-only needs -postgres or PLANSERVER_BENCH_POSTGRES")
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	o.bin = bin
	if _, err := os.Stat(o.bin); err != nil {
		return fmt.Errorf("server binary: %w (run make build first)", err)
	}
	if o.pprofDir != "" {
		if err := os.MkdirAll(o.pprofDir, 0o755); err != nil {
			return err
		}
	}
	dir, err := os.MkdirTemp("", "planbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	client := newClient(o.concurrency)
	var rows []row
	note := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }

	// Baselines first: they share nothing with the server but the client.
	note("baseline: chi handler returning a fixed document")
	chiBase, stopChi := startChiBaseline()
	defer stopChi()
	chiGet := drive(ctx, o, func(ctx context.Context, w, i int) error {
		return expect(client, "GET", chiBase+"/doc", nil, nil, 200)
	})
	if !o.postgresOnly {
		chiPost := drive(ctx, o, func(ctx context.Context, w, i int) error {
			return expect(client, "POST", chiBase+"/doc", strings.NewReader(`{"title":"bench"}`), jsonHeader, 201)
		})
		chiPatch := drive(ctx, o, func(ctx context.Context, w, i int) error {
			return expect(client, "PATCH", chiBase+"/doc", strings.NewReader(`{"mode":"plan"}`), jsonHeader, 200)
		})
		if rows, err = benchSQLite(ctx, o, client, dir, chiGet, chiPost, chiPatch, note); err != nil {
			return err
		}
	}
	var pgNotes []string
	if o.postgres != "" {
		pg, err := benchPostgres(ctx, o, client, o.postgres, chiGet, stderr)
		if err != nil {
			return fmt.Errorf("PostgreSQL scenarios: %w", err)
		}
		rows = append(rows, pg.rows...)
		pgNotes = pg.notes
	}

	fmt.Fprintf(stdout, "planbench: %d connections, %s per scenario, %s, GOMAXPROCS %d\n\n",
		o.concurrency, o.duration, runtime.GOOS+"/"+runtime.GOARCH, runtime.GOMAXPROCS(0))
	printTable(stdout, rows)
	for _, n := range pgNotes {
		fmt.Fprintln(stdout, n)
	}
	fmt.Fprintf(stdout, "\npeak RSS of the server: %s\n", peakRSSSummary())
	return nil
}

// benchSQLite runs the SQLite scenarios: the conditional PUT at both
// durabilities against raw SQLite, reads, sessions and list pages.
func benchSQLite(ctx context.Context, o options, client *http.Client, dir string, chiGet, chiPost, chiPatch result, note func(string, ...any)) ([]row, error) {
	var rows []row
	for _, durability := range []string{"normal", "full"} {
		note("baseline: raw SQLite read revision + upsert + commit (synchronous=%s)", durability)
		raw, err := rawSQLiteBaseline(ctx, o, filepath.Join(dir, "raw-"+durability+".db"), durability)
		if err != nil {
			return nil, err
		}
		note("server: conditional PUT, --durability %s", durability)
		srv, err := startServer(o.bin, filepath.Join(dir, "put-"+durability+".db"), durability, o.pprofDir != "")
		if err != nil {
			return nil, err
		}
		put, err := benchConditionalPut(ctx, o, client, srv, "put-"+durability)
		if err != nil {
			srv.stop()
			return nil, err
		}
		rows = append(rows, row{name: "PUT /v1/plans/{name} If-Match 2 KiB (" + durability + ")", res: put,
			baseline: "raw SQLite upsert (" + durability + ")", base: raw})
		srv.stop()
	}

	note("server: reads and sessions, --durability normal")
	srv, err := startServer(o.bin, filepath.Join(dir, "main.db"), "normal", o.pprofDir != "")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	getPlan, err := benchGetPlan(ctx, o, client, srv)
	if err != nil {
		return nil, err
	}
	rows = append(rows, row{name: "GET /v1/plans/{name} 2 KiB", res: getPlan, baseline: "chi fixed 2 KiB", base: chiGet})
	create, ids := benchCreateSession(ctx, o, client, srv)
	rows = append(rows, row{name: "POST /v1/sessions", res: create, baseline: "chi fixed document", base: chiPost})
	getSession := srv.profileWhile(o.pprofDir, "get-session", o.duration, func() result {
		return drive(ctx, o, func(ctx context.Context, w, i int) error {
			return expect(client, "GET", srv.base+"/v1/sessions/"+ids[i%len(ids)], nil, nil, 200)
		})
	})
	rows = append(rows, row{name: "GET /v1/sessions/{id}", res: getSession, baseline: "chi fixed 2 KiB", base: chiGet})
	patchMode := srv.profileWhile(o.pprofDir, "patch-mode", o.duration, func() result {
		return drive(ctx, o, func(ctx context.Context, w, i int) error {
			mode := []string{"plan", "build"}[i%2]
			return expect(client, "PATCH", srv.base+"/v1/sessions/"+ids[w%len(ids)]+"/mode",
				strings.NewReader(`{"mode":"`+mode+`"}`), jsonHeader, 200)
		})
	})
	rows = append(rows, row{name: "PATCH /v1/sessions/{id}/mode", res: patchMode, baseline: "chi fixed document", base: chiPatch})
	srv.stop()

	note("server: list one page of 100 with %d and with %d plans", o.smallList, o.largeList)
	small, large, err := benchListPages(ctx, o, client, dir)
	if err != nil {
		return nil, err
	}
	rows = append(rows,
		row{name: fmt.Sprintf("GET /v1/plans?limit=100 (%d plans)", o.smallList), res: small},
		row{name: fmt.Sprintf("GET /v1/plans?limit=100 (%d plans)", o.largeList), res: large,
			baseline: fmt.Sprintf("the same page with %d plans", o.smallList), base: small},
	)
	return rows, nil
}
