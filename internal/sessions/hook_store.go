package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
)

// What host hooks need of sessions: the child of a parent that stands for
// one host conversation (external_id), the record of which adapters
// enforce a session's mode, the decisions about tool calls kept until the
// host reports their runs, tool_call.denied events naming the host, and
// tool_call.unjudged events for the runs nobody judged.

// externalIDFree returns already_exists when a child of the parent with
// that ancestry already carries external id ext.
func externalIDFree(q db.Querier, ancestry, parentID, ext string) error {
	var taken string
	err := q.QueryRow(`SELECT id FROM sessions WHERE ancestry = ? AND external_id = ?`, ancestry, ext).Scan(&taken)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("look up external_id %q: %w", ext, err)
	}
	where := "among root sessions"
	if parentID != "" {
		where = fmt.Sprintf("among the children of %q", parentID)
	}
	e := apierr.New(apierr.AlreadyExists, "external_id %q is taken %s by session %q", ext, where, taken)
	e.Extra = map[string]any{"session_id": taken}
	return e
}

// ChildFor returns the child of parent that stands for the host
// conversation ext, creating it (in build mode of its own, so that it
// follows the parent's mode) when there is none. created says which.
// Concurrent calls for the same conversation get the same child. Errors:
// invalid_argument (unknown parent, bad external id), unsupported_mode.
func (st *Store) ChildFor(ctx context.Context, parent, ext, host string) (s *Session, created bool, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		if s, err = st.findChild(ctx, parent, ext); err == nil || apierr.CodeOf(err) != apierr.NotFound {
			return s, false, err
		}
		e := ext
		s, err = st.Create(ctx, api.SessionCreate{
			ParentID: parent, ExternalID: &e, Agent: host,
			Title: fmt.Sprintf("%s conversation %s", host, ext),
		})
		if apierr.CodeOf(err) != apierr.AlreadyExists {
			return s, err == nil, err
		}
		// Another hook call created it first: find that one.
	}
	return nil, false, err
}

// findChild returns the child of parent with external id ext. Errors:
// invalid_argument (unknown parent), not_found (no such child).
func (st *Store) findChild(ctx context.Context, parent, ext string) (*Session, error) {
	var out *Session
	err := st.db.Read(ctx, func(tx *db.Tx) error {
		p, err := load(tx, parent)
		if apierr.CodeOf(err) == apierr.NotFound {
			return UnknownParent(parent)
		}
		if err != nil {
			return err
		}
		var id string
		err = tx.QueryRow(`SELECT id FROM sessions WHERE ancestry = ? AND external_id = ?`, p.link().Path(), ext).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return apierr.New(apierr.NotFound, "session %q has no child with external_id %q", parent, ext)
		}
		if err != nil {
			return fmt.Errorf("find child %q of %q: %w", ext, parent, err)
		}
		r, err := get(tx, id)
		if err == nil {
			out = &r.Session
		}
		return err
	})
	return out, err
}

// EnforcementResolution is how stale a session's record of an adapter may
// get before a hook call refreshes it: hook calls come many a second, and
// writing each would make every tool call wait for the writer.
const EnforcementResolution = time.Minute

// observation is what a hook call shows of an adapter: that it decided a
// call (asked before a tool ran), or reported a run, and the run nobody
// judged when there is one.
type observation struct {
	decided, reported bool
	unjudged          *api.UnjudgedRun
}

// noteEnforcement is the rule of the enforcement list: the entry of
// (host, adapter) says when it last decided and last reported, each to
// within EnforcementResolution, and counts its unjudged runs (each one
// is written). It returns the list to store and whether it differs from
// list enough to be written.
func noteEnforcement(list []api.Enforcement, host, adapter string, now time.Time, o observation) ([]api.Enforcement, bool) {
	stamp := now.UTC().Format(db.TimeFormat)
	refresh := func(at **string) bool {
		if *at != nil {
			last, err := time.Parse(db.TimeFormat, **at)
			if err == nil && now.Sub(last) < EnforcementResolution && !last.After(now) {
				return false
			}
		}
		*at = &stamp
		return true
	}
	out := make([]api.Enforcement, 0, len(list)+1)
	i := -1
	for j, e := range list {
		if e.Host == host && e.Adapter == adapter {
			i = j
		}
		out = append(out, e)
	}
	changed := false
	if i < 0 {
		out = append(out, api.Enforcement{Host: host, Adapter: adapter})
		i, changed = len(out)-1, true
	}
	e := &out[i]
	if o.decided && refresh(&e.LastDecisionAt) {
		changed = true
	}
	if o.reported && refresh(&e.LastReportAt) {
		changed = true
	}
	if o.unjudged != nil {
		e.UnjudgedRuns++
		e.LastUnjudged = o.unjudged
		changed = true
	}
	return out, changed
}

// writeEnforcement stores r's enforcement list after observation o, when
// it changes enough. No revision bump and no event: enforcement is an
// observation of the hosts, not a change anyone made to the session.
func writeEnforcement(tx *db.Tx, r *record, host, adapter string, o observation) error {
	list, changed := noteEnforcement(r.Enforcement, host, adapter, tx.Now(), o)
	if !changed {
		return nil
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(`UPDATE sessions SET enforcement = ? WHERE pk = ?`, string(raw), r.pk); err != nil {
		return fmt.Errorf("record enforcement of session %q: %w", r.ID, err)
	}
	r.Enforcement = list
	return nil
}

// NoteEnforcement records that adapter of host decided a tool call of
// session s (as the caller read it) whose run no report will follow, so
// nothing is recorded of the decision itself. Within
// EnforcementResolution of the last record it writes nothing.
func (st *Store) NoteEnforcement(ctx context.Context, s *Session, host, adapter string) error {
	o := observation{decided: true}
	if _, changed := noteEnforcement(s.Enforcement, host, adapter, st.db.Now(), o); !changed {
		return nil
	}
	return st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := load(tx, s.ID)
		if err != nil {
			return err
		}
		return writeEnforcement(tx, r, host, adapter, o)
	})
}

// HookDecisionLifetime is how long the decision about a host's tool call
// waits for the host's report of the run: a report that comes later finds
// none and is a run nobody judged. Generous, since a sub-agent launched
// by one call reports when it ends; the pruner deletes older decisions.
const HookDecisionLifetime = 24 * time.Hour

// HookCall is one tool call a host's hook asked or told planserver about.
type HookCall struct {
	Host, Adapter string
	// Keys are hosthook.RunKeys of the call: where its decision is recorded,
	// and how its report finds it. None: nothing is recorded (no report
	// follows).
	Keys []string
	Tool string
	// ToolUseID is the host's id of the call, "" when it sends none.
	ToolUseID string
	// AgentID and AgentType name the sub-agent that made the call.
	AgentID, AgentType string
}

// HookVerdict is what the hook decided about a call: its outcome (none,
// allow, deny, rewrite), and, for a denial, the tool_call.denied event's
// data.
type HookVerdict struct {
	Outcome string
	Denial  *HookDenial
}

// DecideToolCall records the decision about a host's tool call of session
// id in one write: decide runs inside the transaction on the session as
// it stands (the mode may have changed since the caller's read, and what
// is recorded must match the mode it was made under), its outcome is kept
// under call.Keys for the report of the run, a denial appends
// tool_call.denied (tool_call.out_of_scope for a denial against the
// approved scope), and the adapter's enforcement record notes the
// decision. It returns the session as the transaction saw it and the
// verdict. Errors: not_found.
func (st *Store) DecideToolCall(ctx context.Context, id string, call HookCall, decide func(*Session) HookVerdict) (*Session, HookVerdict, error) {
	var (
		out *Session
		v   HookVerdict
	)
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := get(tx, id)
		if err != nil {
			return err
		}
		out = &r.Session
		v = decide(out)
		if v.Outcome == "deny" && v.Denial != nil {
			d := v.Denial
			d.EffectiveMode, d.ModeSource = r.EffectiveMode, r.ModeSource
			ev := events.New{Type: events.ToolCallDenied, Session: r.link().Ref(), Data: d}
			if o := d.OutOfScope; o != nil {
				// A denial against the approved scope: its own event.
				ev = events.New{Type: events.ToolCallOutOfScope, Session: r.link().Ref(), Data: outOfScopeData{
					Tool: d.Tool, Reason: d.Reason, Host: d.Host, Adapter: d.Adapter, AgentID: d.AgentID,
					AgentType: o.AgentType, Path: o.Path, Command: o.Command, ScopeRevision: o.ScopeRevision, ScopeSession: o.ScopeSession}}
			}
			if err := events.Record(tx, ev); err != nil {
				return err
			}
		}
		stamp := tx.Now().UTC().Format(db.TimeFormat)
		for _, k := range call.Keys {
			if _, err := tx.Exec(`INSERT INTO hook_decisions (host, run_key, session_pk, tool, outcome, decided_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (host, run_key) DO UPDATE SET session_pk = excluded.session_pk, tool = excluded.tool,
				outcome = excluded.outcome, decided_at = excluded.decided_at`,
				call.Host, k, r.pk, call.Tool, v.Outcome, stamp); err != nil {
				return fmt.Errorf("record the decision about %s of session %q: %w", call.Tool, id, err)
			}
		}
		return writeEnforcement(tx, r, call.Host, call.Adapter, observation{decided: true})
	})
	return out, v, err
}

// ReportToolRun matches a host's report of a tool run of session id to
// the decision recorded about it (DecideToolCall), in one write: the
// decision is used up, and a run that has none, or whose call was denied,
// is a run nobody judged: a tool_call.unjudged event, counted on the
// adapter's enforcement record. It returns that run, nil when the run was
// judged. Errors: not_found.
func (st *Store) ReportToolRun(ctx context.Context, id string, call HookCall) (*api.UnjudgedRun, error) {
	var unjudged *api.UnjudgedRun
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		unjudged = nil
		r, err := get(tx, id)
		if err != nil {
			return err
		}
		outcome := ""
		for _, k := range call.Keys {
			var o string
			err := tx.QueryRow(`SELECT outcome FROM hook_decisions WHERE host = ? AND run_key = ?`, call.Host, k).Scan(&o)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("look up the decision about %s of session %q: %w", call.Tool, id, err)
			}
			if outcome == "" || o == "deny" {
				outcome = o
			}
			if _, err := tx.Exec(`DELETE FROM hook_decisions WHERE host = ? AND run_key = ?`, call.Host, k); err != nil {
				return fmt.Errorf("use up the decision about %s of session %q: %w", call.Tool, id, err)
			}
		}
		o := observation{reported: true}
		if outcome == "" || outcome == "deny" {
			run := &api.UnjudgedRun{Host: call.Host, Adapter: call.Adapter, Tool: call.Tool, Agent: call.AgentID,
				AgentType: call.AgentType, Session: r.ID, Reason: api.UnjudgedNoDecision, EffectiveMode: r.EffectiveMode,
				At: tx.Now().UTC().Format(db.TimeFormat)}
			if outcome == "deny" {
				run.Reason = api.UnjudgedDenied
			}
			if call.ToolUseID != "" {
				use := call.ToolUseID
				run.ToolUseID = &use
			}
			if err := events.Record(tx, events.New{Type: events.ToolCallUnjudged, Session: r.link().Ref(), Data: run}); err != nil {
				return err
			}
			o.unjudged, unjudged = run, run
		}
		return writeEnforcement(tx, r, call.Host, call.Adapter, o)
	})
	return unjudged, err
}

// PruneHookDecisions deletes the decisions older than
// HookDecisionLifetime as of now, and returns how many.
func (st *Store) PruneHookDecisions(ctx context.Context, now time.Time) (int64, error) {
	cutoff := now.Add(-HookDecisionLifetime).UTC().Format(db.TimeFormat)
	var n int64
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		res, err := tx.Exec(`DELETE FROM hook_decisions WHERE decided_at < ?`, cutoff)
		if err != nil {
			return fmt.Errorf("prune hook decisions: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// HookDenial is the data of a tool_call.denied event a host hook made.
type HookDenial struct {
	Tool          string  `json:"tool"`
	Reason        string  `json:"reason"`
	EffectiveMode Mode    `json:"effective_mode"`
	ModeSource    *string `json:"mode_source"`
	// Host is the agent host whose hook asked; Adapter how it asked.
	Host    string `json:"host"`
	Adapter string `json:"adapter"`
	// AgentID names the host's sub-agent that made the call, when one did.
	AgentID string `json:"agent_id,omitempty"`
	// OutOfScope, when set, makes the denial one against the session's
	// approved scope: a tool_call.out_of_scope event, not tool_call.denied.
	OutOfScope *OutOfScope `json:"-"`
}

// OutOfScope is what a denial against the scope records besides the call.
type OutOfScope struct {
	AgentType     string
	Path, Command string
	ScopeRevision int64
	ScopeSession  string
}

// outOfScopeData is the data of a tool_call.out_of_scope event.
type outOfScopeData struct {
	Tool          string `json:"tool"`
	Reason        string `json:"reason"`
	Host          string `json:"host"`
	Adapter       string `json:"adapter"`
	AgentID       string `json:"agent_id,omitempty"`
	AgentType     string `json:"agent_type,omitempty"`
	Path          string `json:"path,omitempty"`
	Command       string `json:"command,omitempty"`
	ScopeRevision int64  `json:"scope_revision"`
	ScopeSession  string `json:"scope_session"`
}
