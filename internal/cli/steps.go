package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/client"
	"github.com/spf13/pflag"
)

var stepsReadyCmd = &cliCommand{
	name: "steps ready", args: "PLAN", minArgs: 1, maxArgs: 1,
	summary: "list the steps a worker may take now",
	help: `List the steps of a shared plan that are ready: pending (or under an
expired lease) with every dependency complete, in plan order.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var owner string
		fs.StringVar(&owner, "owner", "", "only the steps of this `owner` role")
		return func(x *cli, args []string) error {
			list, err := x.c.ListSteps(x.ctx, args[0], client.StepQuery{Ready: client.Ptr(true), Owner: owner})
			if err != nil {
				return err
			}
			if len(list.Steps) == 0 && !x.json {
				why, err := whyNoneReady(x, args[0], owner)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(x.stdout, why)
				return err
			}
			return x.out(list, func(w io.Writer) {
				rows := make([][]string, len(list.Steps))
				for i, s := range list.Steps {
					id := s.ID
					if s.ClaimExpired {
						id += " (lease expired)"
					}
					deps := strings.Join(s.Deps, ",")
					if deps == "" {
						deps = "-"
					}
					rows[i] = []string{id, s.Owner, deps, oneLine(s.Description, 60)}
				}
				table(w, "STEP\tOWNER\tDEPS\tDESCRIPTION", rows)
			})
		}
	},
}

var stepsClaimCmd = &cliCommand{
	name: "steps claim", args: "PLAN [STEP]", minArgs: 1, maxArgs: 2,
	summary: "take the next ready step (or STEP) under a lease",
	help: `Claim the first ready step of a shared plan (of --owner, when given), or the
step STEP, for --worker under a lease: concurrent claimers never get the
same step. Claiming a step the worker holds renews its lease. When no step
is ready, nothing is written and the exit status is 3.
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var worker, owner string
		var lease time.Duration
		fs.StringVar(&worker, "worker", "", "who takes the step (`name`, required)")
		fs.StringVar(&owner, "owner", "", "only a step of this `owner` role")
		DurationVar(fs, &lease, "lease", 0, "how long the claim holds without renewal, e.g. 10m (`duration`; default the server's, 5m)")
		return func(x *cli, args []string) error {
			if worker == "" {
				return x.usage("--worker is required: name who takes the step")
			}
			if len(args) == 2 && owner != "" {
				return x.usage("--owner chooses among ready steps; a named STEP needs none")
			}
			var secs *int
			if lease > 0 {
				secs = client.Ptr(int((lease + time.Second - 1) / time.Second))
			}
			var res *api.StepResult
			var err error
			if len(args) == 2 {
				res, err = x.c.ClaimStep(x.ctx, args[0], args[1], api.StepClaimRequest{Worker: worker, LeaseSeconds: secs})
			} else {
				res, err = x.c.ClaimNextStep(x.ctx, args[0], api.ClaimRequest{Worker: worker, Owner: owner, LeaseSeconds: secs})
			}
			if errors.Is(err, client.ErrNoStepReady) {
				of := ""
				if owner != "" {
					of = " of " + owner
				}
				return cliFail(err, "no step%s of plan %s is ready", of, args[0])
			}
			if err != nil {
				return err
			}
			return x.out(res, func(w io.Writer) {
				fmt.Fprintf(w, "claimed step %s of plan %s for %s until %s (revision %d): %s\n", res.Step.ID, args[0],
					worker, OrDash(res.Step.ClaimExpiresAt), res.Revision, oneLine(res.Step.Description, 60))
			})
		}
	},
}

var stepsReportCmd = &cliCommand{
	name: "steps report", args: "PLAN STEP", minArgs: 2, maxArgs: 2,
	summary: "report a step's outcome",
	help: `Post an execution report: success completes the step, failure and blocked
block it. A report naming --worker counts only while that worker holds the
step; without one it is the coordinator's. --file posts a report file in the
seeds' JSON format (flags given too override its members).
`,
	flags: func(fs *pflag.FlagSet) func(*cli, []string) error {
		var outcome, details, worker, file optString
		var artifacts repeated
		fs.Var(&outcome, "outcome", "`outcome`: success, failure or blocked")
		fs.Var(&details, "details", "what was done (`text`)")
		fs.Var(&worker, "worker", "the worker whose claim this report settles (`name`)")
		fs.Var(&artifacts, "artifact", "a file and what happened to it, as `FILE[:STATUS]` (repeatable)")
		fs.Var(&file, "file", "a report `file` in JSON (- for standard input)")
		return func(x *cli, args []string) error {
			var in api.ReportWrite
			if file.v != nil {
				body, err := readInput(x, *file.v)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(body, &in); err != nil {
					return x.usage("--file %s is not a JSON report: %v", *file.v, err)
				}
			}
			if outcome.v != nil {
				in.Outcome = *outcome.v
			}
			if details.v != nil {
				in.Details = *details.v
			}
			if worker.v != nil {
				in.Worker = worker.v
			}
			for _, a := range artifacts {
				f, status, _ := strings.Cut(a, ":")
				in.Artifacts = append(in.Artifacts, api.Artifact{File: f, Status: status})
			}
			if in.Outcome == "" {
				return x.usage("--outcome is required: success, failure or blocked")
			}
			rep, err := x.c.AddReport(x.ctx, args[0], args[1], in)
			if err != nil {
				return err
			}
			return x.out(rep, func(w io.Writer) {
				fmt.Fprintf(w, "reported %s on step %s of plan %s (report %d, revision %d)\n",
					rep.Outcome, rep.StepID, rep.Plan, rep.ID, rep.PlanRevision)
			})
		}
	},
}

// whyNoneReady says why no step of plan (of owner, when given) is ready:
// "no step is ready: 2 wait on deps, 1 claimed".
func whyNoneReady(x *cli, plan, owner string) (string, error) {
	all, err := x.c.ListSteps(x.ctx, plan, client.StepQuery{Owner: owner})
	if err != nil {
		return "", err
	}
	what := "no step is ready"
	if owner != "" {
		what = "no step of owner " + owner + " is ready"
	}
	if len(all.Steps) == 0 {
		if owner != "" {
			return fmt.Sprintf("%s: plan %s has no step of that owner", what, plan), nil
		}
		return fmt.Sprintf("%s: plan %s has no steps", what, plan), nil
	}
	var waiting, claimed, blocked, complete int
	for _, s := range all.Steps {
		switch s.Status {
		case "pending":
			waiting++
		case "in_progress":
			claimed++
		case "blocked":
			blocked++
		case "complete":
			complete++
		}
	}
	if complete == len(all.Steps) {
		return fmt.Sprintf("%s: all %d are complete", what, complete), nil
	}
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{waiting, "wait on deps"}, {claimed, "claimed"}, {blocked, "blocked"}, {complete, "complete"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return what + ": " + strings.Join(parts, ", "), nil
}
