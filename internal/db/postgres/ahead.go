package postgres

import (
	"database/sql"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/planserver/planserver/internal/db"
)

// Reads sent ahead, on PostgreSQL. In a batch of keyed writes each write
// used to cost a round trip of its own: its first read (a plan's head,
// say) went with what the write before it had queued, and the next write
// could not begin before that row came back. But a keyed write reads
// nothing outside its key (DB.WriteKeyed), so no earlier write of the
// batch can change what the first write of each key reads first: the
// batch sends every such read, declared by DB.WriteKeyedFirst, in the
// round trip of its BEGIN and locks, and each write is handed its row
// when it starts (Write.RunOn). The writes' changes then travel together
// with the commit, and a batch of any size costs about two round trips
// instead of one per write.
//
// A write of a key that an earlier write of the batch has reads for
// itself: that write may have changed what it reads.

// aheadRead is a read sent ahead for one write, and its row once back.
type aheadRead struct {
	owner int
	sql   string
	args  []any
	// got is set when the row came back; values is nil when the
	// statement answered no row.
	got     bool
	typeMap *pgtype.Map
	fields  []pgconn.FieldDescription
	values  [][]byte
}

// prefetch sends, with what is queued (BEGIN and the locks), the first
// read of every write of batch that declared one and is its key's first
// write in the batch, rebound. A failure is the batch's, since it aborts
// the transaction; the caller begins again without reads sent ahead.
func (p *pipeline) prefetch(batch []*db.Write, rebind func(string) string) error {
	var (
		ahead []*aheadRead
		keys  = map[int32]bool{}
	)
	for i, w := range batch {
		if w.Err != nil {
			continue
		}
		first := !keys[w.Key()]
		keys[w.Key()] = true
		if q := w.First(); q != nil && first {
			ahead = append(ahead, &aheadRead{owner: i, sql: rebind(q.SQL), args: q.Args})
		}
	}
	if len(ahead) == 0 {
		return nil
	}
	if _, err := p.roundTrip(ahead, "", nil); err != nil {
		return err
	}
	p.ahead = make(map[int]*aheadRead, len(ahead))
	for _, a := range ahead {
		p.ahead[a.owner] = a
	}
	return nil
}

// receive reads the row of a, which br answers next, and keeps a copy.
func (a *aheadRead) receive(br pgx.BatchResults) error {
	rows, _ := br.Query() // an error is also the rows' Err
	defer rows.Close()
	if rows.Next() {
		a.typeMap = rows.Conn().TypeMap()
		a.fields = slices.Clone(rows.FieldDescriptions())
		raw := rows.RawValues()
		a.values = make([][]byte, len(raw))
		for i, v := range raw {
			if v != nil {
				a.values[i] = slices.Clone(v)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	a.got = true
	return nil
}

// Scan copies the row's columns into dest, converted as a row read in
// the pipeline is (pgx).
func (a *aheadRead) Scan(dest ...any) error {
	if a.values == nil {
		return sql.ErrNoRows
	}
	return pgx.ScanRow(a.typeMap, a.fields, a.values, dest...)
}

// takeAhead returns the row sent ahead for the write about to run, or
// nil when none was (then the write reads its first row itself).
func (p *pipeline) takeAhead() *db.Row {
	a := p.ahead[p.owner]
	if a == nil {
		return nil
	}
	delete(p.ahead, p.owner)
	if !a.got {
		return nil
	}
	return db.RowOf(a)
}
