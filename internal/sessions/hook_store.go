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
// enforce a session's mode, and tool_call.denied events naming the host.

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

// noteEnforcement is the rule of the enforcement list: the entry of
// (host, adapter) says when it last decided, to within
// EnforcementResolution. It returns the list to store and whether it
// differs from list enough to be written.
func noteEnforcement(list []api.Enforcement, host, adapter string, now time.Time) ([]api.Enforcement, bool) {
	stamp := now.UTC().Format(db.TimeFormat)
	out := make([]api.Enforcement, 0, len(list)+1)
	found, changed := false, false
	for _, e := range list {
		if e.Host == host && e.Adapter == adapter {
			found = true
			last, err := time.Parse(db.TimeFormat, e.LastDecisionAt)
			if err != nil || now.Sub(last) >= EnforcementResolution || last.After(now) {
				e.LastDecisionAt = stamp
				changed = true
			}
		}
		out = append(out, e)
	}
	if !found {
		out = append(out, api.Enforcement{Host: host, Adapter: adapter, LastDecisionAt: stamp})
		changed = true
	}
	return out, changed
}

// NoteEnforcement records that adapter of host decided a tool call of
// session s (as the caller read it). Within EnforcementResolution of the
// last record it writes nothing, so most hook calls cost no write.
func (st *Store) NoteEnforcement(ctx context.Context, s *Session, host, adapter string) error {
	if _, changed := noteEnforcement(s.Enforcement, host, adapter, st.db.Now()); !changed {
		return nil
	}
	return st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := load(tx, s.ID)
		if err != nil {
			return err
		}
		list, changed := noteEnforcement(r.Enforcement, host, adapter, tx.Now())
		if !changed {
			return nil
		}
		raw, err := json.Marshal(list)
		if err != nil {
			return err
		}
		// No revision bump and no event: enforcement is an observation of
		// the hosts, not a change anyone made to the session.
		if _, err := tx.Exec(`UPDATE sessions SET enforcement = ? WHERE pk = ?`, string(raw), r.pk); err != nil {
			return fmt.Errorf("record enforcement of session %q: %w", s.ID, err)
		}
		return nil
	})
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

// DenyToolCall decides a host's tool call again inside a write transaction
// and, when decide still denies it, appends the tool_call.denied event (or
// tool_call.out_of_scope, for a denial against the scope):
// the mode may have changed since the caller's read, and a recorded denial
// must match the mode it was made under. decide returns nil to allow.
// It returns the session as the transaction saw it. Errors: not_found.
func (st *Store) DenyToolCall(ctx context.Context, id string, decide func(*Session) *HookDenial) (*Session, *HookDenial, error) {
	var (
		out    *Session
		denial *HookDenial
	)
	err := st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := get(tx, id)
		if err != nil {
			return err
		}
		out = &r.Session
		if denial = decide(out); denial == nil {
			return nil
		}
		denial.EffectiveMode, denial.ModeSource = r.EffectiveMode, r.ModeSource
		if o := denial.OutOfScope; o != nil {
			return events.Record(tx, events.New{Type: events.ToolCallOutOfScope, Session: r.link().Ref(), Data: outOfScopeData{
				Tool: denial.Tool, Reason: denial.Reason, Host: denial.Host, Adapter: denial.Adapter, AgentID: denial.AgentID,
				AgentType: o.AgentType, Path: o.Path, Command: o.Command, ScopeRevision: o.ScopeRevision, ScopeSession: o.ScopeSession}})
		}
		err = events.Record(tx, events.New{Type: events.ToolCallDenied, Session: r.link().Ref(), Data: denial})
		return err
	})
	return out, denial, err
}
