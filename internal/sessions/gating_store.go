package sessions

import (
	"context"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
)

// toolDenial is the data of a tool_call.denied event.
type toolDenial struct {
	Tool          string  `json:"tool"`
	Reason        string  `json:"reason"`
	EffectiveMode Mode    `json:"effective_mode"`
	ModeSource    *string `json:"mode_source"`
	// Upstream names the tool server the call was for, when it came
	// through a gate.
	Upstream string `json:"upstream,omitempty"`
}

// CheckTool decides one tool call of session id with gate's policy and
// records a denial as a tool_call.denied event. Allowed calls write
// nothing, so the common case never waits for the writer. t.Upstream
// names the tool server the call is for ("" for a host's own tools).
// Errors: not_found.
func (st *Store) CheckTool(ctx context.Context, id string, gate Gate, t Tool) (CheckResult, error) {
	s, err := st.Get(ctx, id)
	if err != nil {
		return CheckResult{}, err
	}
	res := gate.Check(s, t)
	if res.Allowed {
		return res, nil
	}
	// Decide again inside the write transaction: the mode may have changed
	// since the read, and a recorded denial must match the mode it was
	// made under.
	err = st.db.Write(ctx, func(tx *db.Tx) error {
		r, err := get(tx, id)
		if err != nil {
			return err
		}
		if res = gate.Check(&r.Session, t); res.Allowed {
			return nil
		}
		err = events.Record(tx, events.New{Type: events.ToolCallDenied, Session: r.link().Ref(), Data: toolDenial{
			Tool: t.Name, Reason: res.Reason, EffectiveMode: r.EffectiveMode, ModeSource: r.ModeSource, Upstream: t.Upstream,
		}})
		return err
	})
	return res, err
}
