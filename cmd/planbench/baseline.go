package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	_ "modernc.org/sqlite"
)

// The baselines: what the same request costs without planserver's work.
//
// The chi baseline is planbench itself in its hidden "serve-baseline" mode,
// a process of its own on the server's CPUs, so its CPU time per request
// compares with planserver's and it never shares the load generator's
// cores: a bare chi router answering a fixed JSON document of the size the
// scenario's real answer has (GET, POST and PATCH /doc/{size}).

// fixedDoc returns a JSON document of exactly size bytes (at least 64).
func fixedDoc(size int) []byte {
	head, tail := `{"name":"bench","title":"baseline","revision":1,"content":"`, `"}`
	return []byte(head + strings.Repeat("x", max(0, size-len(head)-len(tail))) + tail)
}

// baselineMain serves the chi baseline on addr until it is killed.
func baselineMain(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: planbench serve-baseline ADDR")
	}
	var docs sync.Map // size → []byte
	doc := func(r *http.Request) ([]byte, bool) {
		size, err := strconv.Atoi(chi.URLParam(r, "size"))
		if err != nil || size < 0 || size > 1<<20 {
			return nil, false
		}
		if d, ok := docs.Load(size); ok {
			return d.([]byte), true
		}
		d, _ := docs.LoadOrStore(size, fixedDoc(size))
		return d.([]byte), true
	}
	answer := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			d, ok := doc(r)
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(d)
		}
	}
	r := chi.NewRouter()
	r.Get("/doc/{size}", answer(http.StatusOK))
	r.Post("/doc/{size}", answer(http.StatusCreated))
	r.Patch("/doc/{size}", answer(http.StatusOK))
	return http.ListenAndServe(args[0], r)
}

// startChiBaseline starts the chi baseline process.
func startChiBaseline(o options) (*process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return o.start("", "http://"+addr, "/doc/64", self, "serve-baseline", addr)
}

// chiSide is a request to the chi baseline answered with a document of
// size bytes.
func chiSide(c *http.Client, chiBase *process, method string, size int, body string) side {
	want := map[string]int{"GET": 200, "POST": 201, "PATCH": 200}[method]
	url := fmt.Sprintf("%s/doc/%d", chiBase.base, size)
	return side{
		name: fmt.Sprintf("chi %s, %d B answer", method, size),
		proc: chiBase,
		op: func(ctx context.Context, w, i int) error {
			var r io.Reader
			if body != "" {
				r = strings.NewReader(body)
			}
			return expect(c, method, url, r, jsonHeader, want)
		},
	}
}

// rawSQLite is the database baseline for writes: what a conditional plan
// write costs SQLite alone, with planserver's pragmas on one connection:
// in one immediate transaction read the revision, upsert the 2 KiB
// document, commit. Each worker writes its own row.
func rawSQLite(ctx context.Context, path, durability string) (side, func(), error) {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(5000)", "journal_mode(WAL)", "synchronous(" + strings.ToUpper(durability) + ")", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return side{}, nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE plans (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, content TEXT NOT NULL)`); err != nil {
		db.Close()
		return side{}, nil, err
	}
	content := string(fixedDoc(2048))
	return side{
		name: "raw SQLite upsert (" + durability + ")",
		op: func(ctx context.Context, w, i int) error {
			name := fmt.Sprintf("plan-%d", w)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback() //nolint:errcheck
			var rev int64
			err = tx.QueryRowContext(ctx, `SELECT revision FROM plans WHERE name = ?`, name).Scan(&rev)
			if err != nil && err != sql.ErrNoRows {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO plans (name, revision, content) VALUES (?, ?, ?)
				ON CONFLICT (name) DO UPDATE SET revision = excluded.revision, content = excluded.content`,
				name, rev+1, content); err != nil {
				return err
			}
			return tx.Commit()
		},
	}, func() { db.Close() }, nil
}
