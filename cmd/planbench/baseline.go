package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	_ "modernc.org/sqlite"
)

// fixedDoc is a 2 KiB JSON document, the size of the plans the read
// scenarios fetch.
var fixedDoc = func() []byte {
	s := `{"name":"bench","title":"baseline","content":"` + strings.Repeat("x", 2048-64) + `","revision":1}`
	return []byte(s)
}()

// startChiBaseline serves fixed documents with a bare chi router: the cost
// of HTTP, routing and the client, with no planserver work.
func startChiBaseline() (string, func()) {
	r := chi.NewRouter()
	r.Get("/doc", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(fixedDoc)
	})
	answer := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(fixedDoc)
		}
	}
	r.Post("/doc", answer(http.StatusCreated))
	r.Patch("/doc", answer(http.StatusOK))
	ts := httptest.NewServer(r)
	return ts.URL, ts.Close
}

// rawSQLiteBaseline measures what a conditional plan write costs SQLite
// alone: in one immediate transaction on one connection with planserver's
// pragmas, read the revision, upsert the 2 KiB document, commit.
func rawSQLiteBaseline(ctx context.Context, o options, path, durability string) (result, error) {
	q := url.Values{}
	for _, p := range []string{"busy_timeout(5000)", "journal_mode(WAL)", "synchronous(" + strings.ToUpper(durability) + ")", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE plans (name TEXT PRIMARY KEY, revision INTEGER NOT NULL, content TEXT NOT NULL)`); err != nil {
		return result{}, err
	}
	content := string(fixedDoc)
	res := drive(ctx, o, func(ctx context.Context, w, i int) error {
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
	})
	return res, nil
}
