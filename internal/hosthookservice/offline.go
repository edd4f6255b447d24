package hosthookservice

import (
	"fmt"
	"time"

	"github.com/planserver/planserver/internal/hosthook"
)

// offlineBudget bounds the command form's own judgement of a call when
// planserver cannot be asked: a host that gets no answer within its hook
// timeout runs the tool as it is, so a command too costly to judge is
// refused instead.
const offlineBudget = 2 * time.Second

// Offline decides a call the command form could not ask planserver about
// (err says why): hosthook.Fallback, as plan mode would, within
// offlineBudget. It is the service's decision without planserver's state.
func Offline(call hosthook.Call, policy hosthook.Policy, err error) hosthook.Decision {
	done := make(chan hosthook.Decision, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- hosthook.Refusal(fmt.Sprintf("planserver hook failed judging the call (internal error: %v).", r))
			}
		}()
		done <- hosthook.Fallback(call, policy, err)
	}()
	select {
	case d := <-done:
		return d
	case <-time.After(offlineBudget):
		return hosthook.Refusal(fmt.Sprintf("planserver could not be asked (%v), and judging this call here took longer than %s.", err, offlineBudget))
	}
}
