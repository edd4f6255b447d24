package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/db"
	planhttp "github.com/planserver/planserver/internal/http"
)

// exampleServer starts planserver in-process on a fresh SQLite file, for
// the examples, and returns its URL and how to stop it.
func exampleServer() (string, func()) {
	dir, err := os.MkdirTemp("", "planserver-example")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(dir, "planserver.db"), db.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := d.MigrateUp(ctx, nil); err != nil {
		log.Fatal(err)
	}
	srv := app.New(app.Config{Config: planhttp.Config{DB: d, Logger: discard}}).HTTP
	ts := httptest.NewServer(srv)
	return ts.URL, func() {
		srv.Shutdown()
		ts.Close()
		d.Close()
		os.RemoveAll(dir)
	}
}

// The plan-mode loop: the user puts a session in plan mode, the agent
// writes a plan and asks for review, and a human approves the revision
// they read, which is what takes the session back to build mode.
func Example() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		log.Fatal(err)
	}

	if _, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr("billing"), Mode: "plan"}); err != nil {
		log.Fatal(err)
	}
	// The agent: write_session_plan, then exit_plan_mode.
	if _, err := c.PutSessionPlan(ctx, "billing", api.SessionPlanWrite{Content: "# Plan\n1. Move totals\n"}); err != nil {
		log.Fatal(err)
	}
	s, err := c.RequestReview(ctx, "billing", api.ReviewRequest{Rationale: client.Ptr("Callers found with grep.")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("review:", s.Review.State, "of revision", *s.Review.PlanRevision)

	// The human reads the plan and approves exactly that revision.
	plan, err := c.GetSessionPlan(ctx, "billing")
	if err != nil {
		log.Fatal(err)
	}
	approved, err := c.ApprovePlan(ctx, "billing", plan.Revision, api.ReviewApproval{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("mode:", approved.Mode, "review:", approved.Review.State)
	// Output:
	// review: pending of revision 1
	// mode: build review: approved
}

// The optimistic-locking loop: read, modify, write back with the revision
// read; when another writer got there first, read again and redo the
// change on what is there now.
func ExampleRetryOnConflict() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	if _, err := c.PutPlanContent(ctx, "release", "# Release 1.0\n"); err != nil {
		log.Fatal(err)
	}

	first := true
	err := client.RetryOnConflict(ctx, 3, func(ctx context.Context) error {
		cur, err := c.GetPlanContent(ctx, "release")
		if err != nil {
			return err
		}
		if first { // another agent writes in between, once
			first = false
			if _, err := c.SetPlanStatus(ctx, "release", "in-progress"); err != nil {
				return err
			}
		}
		_, err = c.PutPlanContent(ctx, "release", cur.Body+"- [ ] tag v1.0\n", client.IfMatch(cur.Revision))
		if errors.Is(err, client.ErrVersionConflict) {
			fmt.Println("conflict at revision", cur.Revision)
		}
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	st, _ := c.GetPlanStatus(ctx, "release")
	fmt.Println("revision", st.Revision, "status", st.Status)
	// Output:
	// conflict at revision 1
	// revision 3 status in-progress
}

// A refused request is an *Error: match its code with errors.Is, read
// what it carries with errors.As.
func ExampleError() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	if _, err := c.PutPlanContent(ctx, "release", "# Release\n"); err != nil {
		log.Fatal(err)
	}

	_, err := c.PutPlanContent(ctx, "release", "# Mine\n", client.IfMatch(7))
	var e *client.Error
	if errors.Is(err, client.ErrVersionConflict) && errors.As(err, &e) {
		fmt.Println(e.Status, e.Code, "current revision", *e.CurrentRevision)
	}
	_, err = c.GetPlan(ctx, "nothing-here")
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// Output:
	// 412 version_conflict current revision 1
	// true
}

// A worker takes ready steps until none is left, reporting each.
func ExampleClient_ClaimNextStep() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	steps := json.RawMessage(`[{"id":"1","description":"schema","owner":"db"},
		{"id":"2","description":"endpoint","owner":"api","deps":["1"]}]`)
	if _, err := c.PutPlan(ctx, "csv", api.PlanWrite{Content: client.Ptr("# CSV upload"), Steps: steps}); err != nil {
		log.Fatal(err)
	}

	for {
		claimed, err := c.ClaimNextStep(ctx, "csv", api.ClaimRequest{Worker: "w1", LeaseSeconds: client.Ptr(600)})
		if errors.Is(err, client.ErrNoStepReady) {
			fmt.Println("nothing ready")
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("working on step", claimed.Step.ID)
		if _, err := c.AddReport(ctx, "csv", claimed.Step.ID, api.ReportWrite{Outcome: api.OutcomeSuccess, Worker: client.Ptr("w1")}); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// working on step 1
	// working on step 2
	// nothing ready
}

// Follow the change log: list first, then subscribe after the list's
// EventSeq, so that no change is missed. The subscription reconnects by
// itself after a drop and ends only on a terminal error.
func ExampleClient_Subscribe() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	if _, err := c.CreateSession(ctx, api.SessionCreate{ID: client.Ptr("main")}); err != nil {
		log.Fatal(err)
	}

	var meta client.ResponseMeta
	if _, err := c.ListSessions(ctx, client.SessionQuery{}, client.Meta(&meta)); err != nil {
		log.Fatal(err)
	}
	sub := c.Subscribe(ctx, client.EventQuery{After: &meta.EventSeq, SessionID: "main"}, client.SubscribeOptions{})
	defer sub.Close()

	if _, err := c.SetMode(ctx, "main", api.ModePlan); err != nil {
		log.Fatal(err)
	}
	for {
		d, err := sub.Next(ctx)
		if errors.Is(err, client.ErrCursorExpired) {
			log.Fatal("pruned while away: list again, then subscribe after its EventSeq")
		}
		if err != nil {
			log.Fatal(err)
		}
		if d.Event == nil {
			continue // a heartbeat moved the cursor
		}
		fmt.Println(d.Event.Seq, d.Event.Type, d.Event.SessionID, "resume after", strconv.FormatInt(d.Cursor, 10))
		break
	}
	// Output:
	// 2 session.mode_changed main resume after 2
}
