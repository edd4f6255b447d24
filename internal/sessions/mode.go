package sessions

import (
	"cmp"
	"slices"
	"strings"

	"github.com/planserver/planserver/api"
)

// modeChange is the data of a session.mode_changed event. ChangedBy names
// the ancestor whose mode change this descendant inherited.
type modeChange struct {
	Mode          Mode    `json:"mode"`
	PreviousMode  Mode    `json:"previous_mode"`
	EffectiveMode Mode    `json:"effective_mode"`
	ModeSource    *string `json:"mode_source"`
	ChangedBy     string  `json:"changed_by,omitempty"`
	// ReviewCancelled is the pending review this change cancelled.
	ReviewCancelled *closedReview `json:"review_cancelled,omitempty"`
}

// inherited is one descendant whose effective mode, mode source or build
// scope a change moves, and what it shows afterwards.
type inherited struct {
	Link
	source     *string
	scope      *api.BuildScope
	modeMoved  bool
	scopeMoved bool
}

// changeMode decides a change of the own mode of chain's last session to
// mode, given its descendants (subtree, in any order): changeSelf with
// the mode alone changed.
func changeMode(chain Chain, subtree []Link, mode Mode) ([]inherited, error) {
	self := chain[len(chain)-1]
	self.Mode = mode
	return changeSelf(chain, subtree, self)
}

// changeSelf decides a change of chain's last session to self (its own
// mode and its own scope grant), given its descendants (subtree, in any
// order). It returns the descendants whose effective mode, mode source or
// build scope changes — each gets a revision and an event of its own, so
// a client watching only them sees the change and their ETags never serve
// a stale answer — or unsupported_mode when plan mode would reach a
// harness session.
func changeSelf(chain Chain, subtree []Link, self Link) ([]inherited, error) {
	subtree = slices.Clone(subtree)
	sortByDepth(subtree)
	links := make(map[int64]Link, len(chain)+len(subtree))
	for _, l := range chain {
		links[l.PK] = l
	}
	for _, l := range subtree {
		links[l.PK] = l
	}
	type view struct {
		source *string
		scope  *api.BuildScope
	}
	views := func() map[int64]view {
		out := make(map[int64]view, len(subtree))
		for _, d := range subtree {
			c := chainOf(d, links)
			out[d.PK] = view{c.ModeSource(), c.BuildScope()}
		}
		return out
	}
	before := views()
	links[self.PK] = self
	after := views()
	if self.Mode == Plan {
		planned := append([]Link{self}, subtree...)
		if err := harnessInPlan(self.ID, planned, func(l Link) *string { return chainOf(l, links).ModeSource() }); err != nil {
			return nil, err
		}
	}
	var moved []inherited
	for _, d := range subtree {
		b, a := before[d.PK], after[d.PK]
		m := inherited{Link: d, source: a.source, scope: a.scope,
			modeMoved: !sameSource(b.source, a.source), scopeMoved: !sameScope(b.scope, a.scope)}
		if m.modeMoved || m.scopeMoved {
			moved = append(moved, m)
		}
	}
	return moved, nil
}

// chainOf assembles l's chain from links, which holds every session on it.
func chainOf(l Link, links map[int64]Link) Chain {
	pks, _ := ancestryPKs(l.Ancestry) // loaded from the database, checked there
	c := make(Chain, 0, len(pks)+1)
	for _, pk := range pks {
		c = append(c, links[pk])
	}
	return append(c, l)
}

func sameSource(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// sortByDepth sorts sessions parents before children: by depth, then id.
func sortByDepth(links []Link) {
	slices.SortFunc(links, func(a, b Link) int {
		if d := cmp.Compare(strings.Count(a.Ancestry, "/"), strings.Count(b.Ancestry, "/")); d != 0 {
			return d
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
