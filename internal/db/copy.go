package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Copying a whole database from one engine to another (planserver copy):
// a team that outgrows one machine moves its SQLite file to PostgreSQL, and
// back for a backup or a test. Every row keeps its keys: sessions their pk
// (their identity, which events and tokens name), events their seq (the
// cursors clients hold), plans and sessions their revisions (the ETags
// clients hold). The counters that make keys never reused (AUTOINCREMENT,
// identity sequences, the event seq counter) are carried over too, so a
// key freed by a delete before the copy is not handed out again after it.

// copyTable is one table to copy: its columns, in an order that inserts
// parents before children.
type copyTable struct {
	name    string
	columns string
	order   string
}

// copyTables lists every table of the schema but goose's own, in an order
// that satisfies the foreign keys (sessions by pk: a parent always has a
// lower pk than its children). TestCopyCoversTheSchema checks that it names
// every column of every table.
var copyTables = []copyTable{
	{"sessions", "pk, id, title, agent, parent_id, mode, harness, metadata, review_state, review_plan_revision, " +
		"review_rationale, review_feedback, review_requested_at, review_decided_at, review_decided_by, revision, " +
		"created_at, updated_at, ancestry, review_comments, external_id, enforcement, review_decided_by_person, " +
		"build_scope, review_scope", "pk"},
	{"session_plans", "session_id, content, author, revision, created_at, updated_at", "session_id"},
	{"session_plan_revisions", "session_id, revision, content, author, updated_at", "session_id, revision"},
	{"session_reviews", "id, session_id, plan_revision, state, rationale, requested_at, ended_at, ended_by, feedback, comments, ended_by_person, scope", "id"},
	{"session_todos", "session_id, todos, revision, updated_at", "session_id"},
	{"plans", "name, title, author, status, revision, created_at, updated_at, steps, content_rev, renewed", "name"},
	{"plan_contents", "name, content_rev, content", "name, content_rev"},
	{"plan_revisions", "name, revision, title, author, status, updated_at, steps, content_rev", "name, revision"},
	{"step_leases", "plan, step_id, claimed_by, claim_expires_at", "plan, step_id"},
	{"step_reports", "id, plan, step_id, outcome, details, artifacts, actor, worker, timestamp, plan_revision, created_at", "id"},
	{"events", "seq, type, time, actor, session_id, session_path, plan, revision, data, session_pk, actor_person", "seq"},
	{"tokens", "name, hash, role, session_id, created_at, expires_at, last_used_at, revoked_at, session_pk, created_by, created_by_person", "name"},
	{"revision_floors", "kind, key, revision", "kind, key"},
	{"gates", "name, url, read_only, created_at, updated_at", "name"},
	{"webhooks", "id, url, events, format, session_id, session_path, plan, secret, previous_secret, previous_expires_at, " +
		"state, state_reason, cursor, attempts, next_attempt_at, lease_owner, lease_until, created_at, updated_at", "id"},
	{"webhook_deliveries", "id, webhook_id, event_seq, message_id, type, attempt, manual, state, status_code, latency_ms, " +
		"response, error, next_retry_at, created_at", "id"},
	{"signin_attempts", "state_hash, nonce, verifier, return_to, expires_at, client", "state_hash"},
	{"signins", "hash, subject, email, name, role, session_id, session_pk, id_token, created_at, last_seen_at, expires_at, id, groups", "hash"},
	{"hook_decisions", "host, run_key, session_pk, tool, outcome, decided_at", "host, run_key"},
}

// counterKeys are the tables whose keys come from a counter that never
// goes back, and those keys: their high-water marks are copied
// (Engine.HighWater, Engine.SetHighWater).
var counterKeys = map[string]string{"sessions": "pk", "step_reports": "id", "session_reviews": "id", "events": "seq",
	"webhook_deliveries": "id"}

// CopyStats reports what Copy copied: rows per table, in copy order.
type CopyStats struct {
	Tables []string
	Rows   map[string]int64
}

// ErrTargetNotEmpty is Copy's refusal to write into a database that holds
// data.
var ErrTargetNotEmpty = errors.New("the target database is not empty")

// Copy copies every row of from into to, which must be empty: to is
// migrated to from's schema version first (both must be at the version
// this binary knows). It reads one snapshot of from, so from may be
// serving meanwhile (writes after the snapshot are not copied), and writes
// to in one transaction, so a failed copy leaves to empty. progress, when
// not nil, gets a line per table.
func Copy(ctx context.Context, from, to *DB, progress io.Writer) (CopyStats, error) {
	return CopyWith(ctx, from, to, progress, CopyOptions{})
}

// CopyOptions tune CopyWith.
type CopyOptions struct {
	// ReplaceNUL replaces every NUL (U+0000) in the text copied to
	// PostgreSQL, which cannot store it, with U+FFFD (the replacement
	// character). Without it, a source holding NULs (written by a SQLite
	// server before they were refused) is refused before anything is
	// written, with the list of its rows that would not fit.
	ReplaceNUL bool
}

// ErrNUL is CopyWith's refusal of a source holding text PostgreSQL cannot
// store.
var ErrNUL = errors.New("the source holds NUL characters (U+0000), which PostgreSQL cannot store")

// maxNULRows bounds the rows an ErrNUL names; the count is always whole.
const maxNULRows = 50

// CopyWith is Copy with options. When to cannot store NUL (PostgreSQL:
// Engine.StoresNUL) it first reads every row of the snapshot for NULs,
// before it writes any: a copy that cannot finish must not fail half way.
func CopyWith(ctx context.Context, from, to *DB, progress io.Writer, opt CopyOptions) (CopyStats, error) {
	stats := CopyStats{Rows: map[string]int64{}}
	noNUL := !to.eng.StoresNUL()
	known := KnownVersion()
	current, err := from.AppliedVersion(ctx)
	if err != nil {
		return stats, fmt.Errorf("copy from %s: %w (is it a planserver database?)", from.Path, err)
	}
	if current != known {
		return stats, fmt.Errorf("copy from %s: its schema is at version %d and this planserver's at %d; "+
			"migrate it first (planserver migrate up --db %s) with the planserver that matches the newer one", from.Path, current, known, from.Path)
	}
	if _, _, err := to.MigrateUp(ctx, nil); err != nil {
		return stats, fmt.Errorf("copy to %s: %w", to.Path, err)
	}
	if err := to.Read(ctx, func(tx *Tx) error { return checkEmpty(tx, to.Path) }); err != nil {
		return stats, err
	}
	err = to.Write(ctx, func(w *Tx) error {
		// Another copy may have started since the check above; this one is
		// under the write lock.
		if err := checkEmpty(w, to.Path); err != nil {
			return err
		}
		return from.Read(ctx, func(r *Tx) error {
			if noNUL && !opt.ReplaceNUL {
				if err := findNUL(r); err != nil {
					return err
				}
			}
			replaced := 0
			for _, t := range copyTables {
				n, err := copyRows(r, w, t, noNUL, &replaced)
				if err != nil {
					return fmt.Errorf("copy %s: %w", t.name, err)
				}
				stats.Tables = append(stats.Tables, t.name)
				stats.Rows[t.name] = n
				if progress != nil {
					fmt.Fprintf(progress, "%-16s %d rows\n", t.name, n)
				}
			}
			if replaced > 0 && progress != nil {
				fmt.Fprintf(progress, "replaced NUL (U+0000) with U+FFFD in %d values (--replace-nul)\n", replaced)
			}
			var pruned int64
			if err := r.QueryRow(`SELECT pruned_through FROM event_retention WHERE id = 1`).Scan(&pruned); err != nil {
				return fmt.Errorf("copy event retention: %w", err)
			}
			if _, err := w.Exec(`UPDATE event_retention SET pruned_through = ? WHERE id = 1`, pruned); err != nil {
				return fmt.Errorf("copy event retention: %w", err)
			}
			marks, err := from.eng.HighWater(r, counterKeys)
			if err != nil {
				return fmt.Errorf("read counters: %w", err)
			}
			// A counter is at least its table's highest key, and the
			// events counter at least the pruned prefix: the next key
			// follows every key ever handed out.
			for table, key := range counterKeys {
				var top int64
				if err := w.QueryRow(`SELECT coalesce(max(` + key + `), 0) FROM ` + table).Scan(&top); err != nil {
					return fmt.Errorf("read counters: %w", err)
				}
				marks[table] = max(marks[table], top)
			}
			marks["events"] = max(marks["events"], pruned)
			if err := to.eng.SetHighWater(w, counterKeys, marks); err != nil {
				return fmt.Errorf("set counters: %w", err)
			}
			return nil
		})
	})
	if err != nil {
		return stats, err
	}
	// Nothing was woken by the copy's commit on to's side that matters:
	// to was empty, so nobody streams from it.
	return stats, nil
}

// checkEmpty refuses a database that holds any row of planserver's, or a
// pruned event log.
func checkEmpty(q Querier, name string) error {
	for _, t := range copyTables {
		var n int
		if err := q.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM ` + t.name + ` LIMIT 1) AS any_row`).Scan(&n); err != nil {
			return fmt.Errorf("check that %s is empty: %w", name, err)
		}
		if n > 0 {
			return fmt.Errorf("%w: %s has rows in %s; copy into a new, empty database", ErrTargetNotEmpty, name, t.name)
		}
	}
	var pruned int64
	if err := q.QueryRow(`SELECT pruned_through FROM event_retention WHERE id = 1`).Scan(&pruned); err != nil {
		return fmt.Errorf("check that %s is empty: %w", name, err)
	}
	if pruned > 0 {
		return fmt.Errorf("%w: %s has pruned events; copy into a new, empty database", ErrTargetNotEmpty, name)
	}
	return nil
}

// copyBatchParams bounds the placeholders of one multi-row INSERT, below
// both engines' limits (SQLite 32766, PostgreSQL 65535).
const copyBatchParams = 30000

// copyRows copies every row of t from r to w, in t's order, many rows per
// INSERT, and returns how many it copied.
func copyRows(r, w *Tx, t copyTable, replaceNUL bool, replaced *int) (int64, error) {
	ncol := len(strings.Split(t.columns, ","))
	perInsert := min(500, copyBatchParams/ncol)
	rows, err := r.Query(`SELECT ` + t.columns + ` FROM ` + t.name + ` ORDER BY ` + t.order)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	rowMarks := "(?" + strings.Repeat(", ?", ncol-1) + ")"
	var (
		batch []any
		n     int64
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		k := len(batch) / ncol
		_, err := w.Exec(`INSERT INTO `+t.name+` (`+t.columns+`) VALUES `+rowMarks+strings.Repeat(", "+rowMarks, k-1), batch...)
		batch = batch[:0]
		return err
	}
	vals := make([]any, ncol)
	ptrs := make([]any, ncol)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for _, v := range vals {
			// Text comes back as string from both drivers; anything as
			// bytes is text too (the schema has no blobs).
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			if str, ok := v.(string); ok && replaceNUL && strings.IndexByte(str, 0) >= 0 {
				v = strings.ReplaceAll(str, "\x00", "\uFFFD")
				*replaced++
			}
			batch = append(batch, v)
		}
		n++
		if len(batch) >= perInsert*ncol {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, flush()
}

// findNUL reads every row of the snapshot r and returns ErrNUL naming the
// rows (table, key, columns) whose text holds a NUL, or nil.
func findNUL(r *Tx) error {
	var found []string
	total := 0
	for _, t := range copyTables {
		cols := strings.Split(t.columns, ",")
		keys := strings.Split(t.order, ",")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		for i := range keys {
			keys[i] = strings.TrimSpace(keys[i])
		}
		rows, err := r.Query(`SELECT ` + t.order + `, ` + t.columns + ` FROM ` + t.name + ` ORDER BY ` + t.order)
		if err != nil {
			return fmt.Errorf("look for NUL in %s: %w", t.name, err)
		}
		vals := make([]any, len(keys)+len(cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return fmt.Errorf("look for NUL in %s: %w", t.name, err)
			}
			var bad []string
			for i, v := range vals[len(keys):] {
				var s string
				switch x := v.(type) {
				case string:
					s = x
				case []byte:
					s = string(x)
				}
				if strings.IndexByte(s, 0) >= 0 {
					bad = append(bad, cols[i])
				}
			}
			if len(bad) == 0 {
				continue
			}
			total++
			if len(found) < maxNULRows {
				key := make([]string, len(keys))
				for i, k := range keys {
					key[i] = fmt.Sprintf("%s=%q", k, fmt.Sprint(textOf(vals[i])))
				}
				found = append(found, fmt.Sprintf("%s %s: %s", t.name, strings.Join(key, " "), strings.Join(bad, ", ")))
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("look for NUL in %s: %w", t.name, err)
		}
	}
	if total == 0 {
		return nil
	}
	more := ""
	if total > len(found) {
		more = fmt.Sprintf("\n  … and %d more", total-len(found))
	}
	return fmt.Errorf("%w: %d rows would not fit, and nothing was written:\n  %s%s\n"+
		"copy again with --replace-nul to replace each NUL with U+FFFD (the replacement character)",
		ErrNUL, total, strings.Join(found, "\n  "), more)
}

// textOf is a scanned key value as text.
func textOf(v any) any {
	if b, ok := v.([]byte); ok {
		return string(b)
	}
	return v
}
