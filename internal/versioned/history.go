package versioned

import (
	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/diff"
)

// DefaultHistory is how many revisions of a plan, shared or of a session,
// stay readable when --plan-history does not say: the current one
// included. Both kinds of plan keep the same number, so one flag tunes
// both.
const DefaultHistory = 100

// Compared is two revisions of a document with a kept history (a shared
// plan, a session plan), as a diff reads them.
type Compared struct {
	// From and To are the revisions compared; From 0 is the empty
	// document before the first revision.
	From, To int64
	// A and B are the contents of From and To.
	A, B string
}

// Compare is the one path a diff of two revisions of a document takes,
// whatever kind of plan it is: it settles the revisions from the client's
// from and to (nil when left out), then reads their contents. Its store
// calls it inside one read transaction, so the two revisions come from
// one snapshot.
//
// To defaults to the newest readable revision, from to the newest
// readable one below to (0, the empty document, when there is none).
// revisions lists the readable revisions, newest first; it is asked only
// for what the client left out. content reads one revision's content, or
// answers the error that says it is not kept; to is read first, so a diff
// of two missing revisions names to. A store's revisions answers not_found
// rather than an empty list.
func Compare(from, to *int64, revisions func() ([]int64, error), content func(rev int64) (string, error)) (Compared, error) {
	var c Compared
	if from != nil && to != nil {
		c.From, c.To = *from, *to
	} else {
		revs, err := revisions()
		if err != nil {
			return Compared{}, err
		}
		if to != nil {
			c.To = *to
		} else {
			c.To = revs[0]
		}
		if from != nil {
			c.From = *from
		} else {
			for _, rv := range revs {
				if rv < c.To {
					c.From = rv
					break
				}
			}
		}
	}
	var err error
	if c.B, err = content(c.To); err != nil {
		return Compared{}, err
	}
	if c.From != 0 {
		if c.A, err = content(c.From); err != nil {
			return Compared{}, err
		}
	}
	return c, nil
}

// Diff is how B differs from A, as the JSON answer of GET …/diff carries
// it: hunks of changed lines with their context, an empty list when the
// two are the same.
func (c Compared) Diff() *api.Diff {
	hunks := diff.Hunks(diff.Lines(c.A), diff.Lines(c.B))
	if hunks == nil {
		hunks = []api.DiffHunk{}
	}
	return &api.Diff{From: c.From, To: c.To, Hunks: hunks}
}
