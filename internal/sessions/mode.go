package sessions

import (
	"cmp"
	"slices"
	"strings"
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

// inherited is one descendant whose effective mode or mode source a mode
// change moves, and where its mode comes from afterwards.
type inherited struct {
	Link
	source *string
}

// changeMode decides a change of the own mode of chain's last session to
// mode, given its descendants (subtree, in any order). It returns the
// descendants whose effective mode or mode source changes — each gets a
// revision and an event of its own, so a client watching only them sees
// the change and their ETags never serve a stale effective mode — or
// unsupported_mode when plan mode would reach a harness session.
func changeMode(chain Chain, subtree []Link, mode Mode) ([]inherited, error) {
	self := chain[len(chain)-1]
	subtree = slices.Clone(subtree)
	sortByDepth(subtree)
	links := make(map[int64]Link, len(chain)+len(subtree))
	for _, l := range chain {
		links[l.PK] = l
	}
	for _, l := range subtree {
		links[l.PK] = l
	}
	sources := func() map[int64]*string {
		out := make(map[int64]*string, len(subtree))
		for _, d := range subtree {
			out[d.PK] = chainOf(d, links).ModeSource()
		}
		return out
	}
	before := sources()
	self.Mode = mode
	links[self.PK] = self
	after := sources()
	if mode == Plan {
		planned := append([]Link{self}, subtree...)
		if err := harnessInPlan(self.ID, planned, func(l Link) *string { return chainOf(l, links).ModeSource() }); err != nil {
			return nil, err
		}
	}
	var moved []inherited
	for _, d := range subtree {
		if !sameSource(before[d.PK], after[d.PK]) {
			moved = append(moved, inherited{Link: d, source: after[d.PK]})
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
