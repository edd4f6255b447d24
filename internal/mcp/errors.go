package mcp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/planserver/planserver/internal/apierr"
)

// rereadTool is the tool that reads what a tool writes, named in a version
// conflict so the model knows how to get the current revision.
var rereadTool = map[string]string{
	"write_plan": "read_plan", "edit_plan": "read_plan", "delete_plan": "get_plan_status",
	"set_plan_status": "get_plan_status",
}

// Describe is the text of a failed tool call: the error code the HTTP API
// would answer, the detail, every invalid field, and, for a version
// conflict, the current revision and what to do. It names what to fix; an
// internal failure says only that (its cause is logged by the caller).
func Describe(err error, tool string) string {
	e, ok := apierr.Of(err)
	if !ok || e.Code == apierr.Internal {
		return "internal error: the server failed; nothing you sent was wrong. Try again later."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Code, e.Detail)
	if len(e.Fields) > 1 || (len(e.Fields) == 1 && !strings.HasPrefix(e.Detail, e.Fields[0].Field+":")) {
		b.WriteString("\nfix these arguments:")
		for _, f := range e.Fields {
			fmt.Fprintf(&b, "\n- %s: %s", f.Field, f.Message)
		}
	}
	switch e.Code {
	case apierr.VersionConflict:
		if e.CurrentRevision != nil {
			read := rereadTool[tool]
			if read == "" {
				read = "the matching read tool"
			}
			fmt.Fprintf(&b, "\nThe current revision is %d. Nothing was written: re-read with %s and retry with last_known_revision: %d.",
				*e.CurrentRevision, read, *e.CurrentRevision)
		}
	case apierr.PreconditionRequired:
		b.WriteString("\nThis server requires last_known_revision on updates and deletes: read the plan and pass its revision.")
	case apierr.InvalidArgument:
		b.WriteString("\nNothing was written.")
	}
	return b.String()
}

// failure is the error a tool handler returns: the SDK makes it a tool
// result with isError set and this text, which the model reads.
type failure struct{ text string }

func (f failure) Error() string { return f.text }

// fail turns err into the tool's failure, logging the cause of an internal
// one.
func (e *Endpoint) fail(tool string, err error) error {
	var f failure
	if errors.As(err, &f) {
		return f
	}
	if ae, ok := apierr.Of(err); !ok || ae.Code == apierr.Internal {
		e.b.Logger.Error("mcp tool failed", "tool", tool, "error", err)
	}
	return failure{Describe(err, tool)}
}
