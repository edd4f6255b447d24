package proxy

import (
	"context"
	"fmt"
	"strings"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/sessions"
)

// HoldOf is the rule of how the kernel holds a gate's upstream for session
// s, the one place it is decided: read-only in plan mode, the scope's
// files and network in scoped build, unconfined in full build. A tool's
// readOnlyHint is then no longer the only thing between plan mode and a
// write: an upstream that lies about a tool still cannot write.
func HoldOf(s *api.Session) Hold {
	if s.EffectiveMode == api.ModePlan {
		src := s.ID
		if s.ModeSource != nil {
			src = *s.ModeSource
		}
		return Hold{Key: "plan", Mode: "plan", Describe: fmt.Sprintf("plan mode (session %q): read-only", src)}
	}
	if b := s.BuildScope; b != nil {
		chain := sessions.ScopeChain(b)
		files, connect := chain.Files(), chain.Connect()
		return Hold{Key: "scoped\x00" + strings.Join(files, "\x00") + "\x00\x00" + strings.Join(connect, "\x00"), Mode: "scoped",
			Files: files, Connect: connect,
			Describe: fmt.Sprintf("scoped build (revision %d of session %q's plan): writes only to %s", b.PlanRevision, b.SessionID,
				listOr(files, "nothing"))}
	}
	return Hold{Key: "full", Mode: "full", Describe: "full build: unconfined"}
}

// UnreachableHold is the hold while planserver cannot say the session's
// mode: read-only, as plan mode, so that nothing a lying tool does depends
// on planserver being up.
func UnreachableHold(err error) Hold {
	return Hold{Key: "plan", Mode: "plan", Describe: fmt.Sprintf("planserver unreachable (%v): read-only", err)}
}

func listOr(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}

// Get returns the session as planserver shows it now.
func (c RemoteChecker) Get(ctx context.Context) (*api.Session, error) {
	return remote(ctx, c, "", func(ctx context.Context, pc *client.Client) (*api.Session, error) {
		return pc.GetSession(ctx, c.Session)
	})
}
