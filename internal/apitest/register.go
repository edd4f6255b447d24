package apitest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// RegisterModel is the versioned-register model of a shared plan, for
// porcupine: a plan either does not
// exist or holds a content at a revision. Every operation a client can do
// on it through HTTP is one of RegKind's kinds. The linearizability tests
// of one server (internal/http) and of several replicas (cmd/planserver)
// judge their histories with it.

type RegKind int

const (
	OpCreate RegKind = iota // PUT with If-None-Match: *
	OpCAS                   // PUT with If-Match: "expect"
	OpPut                   // unconditional PUT
	OpGet                   // GET
)

type RegInput struct {
	Plan    string
	Kind    RegKind
	Expect  int64 // OpCAS
	Content string
}

type RegOutput struct {
	OK      bool // 2xx; false for a 412 (and for a GET: not found)
	Rev     int64
	Content string // OpGet
}

type regState struct {
	exists  bool
	rev     int64
	content string
}

var RegisterModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byPlan := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			p := op.Input.(RegInput).Plan
			if _, ok := byPlan[p]; !ok {
				order = append(order, p)
			}
			byPlan[p] = append(byPlan[p], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, p := range order {
			out = append(out, byPlan[p])
		}
		return out
	},
	Init: func() any { return regState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(regState), input.(RegInput), output.(RegOutput)
		written := func() regState {
			if s.exists {
				return regState{true, s.rev + 1, in.Content}
			}
			return regState{true, 1, in.Content}
		}
		switch in.Kind {
		case OpCreate:
			if s.exists {
				return !out.OK, s
			}
			return out.OK && out.Rev == 1, regState{true, 1, in.Content}
		case OpCAS:
			if !s.exists || s.rev != in.Expect {
				return !out.OK, s
			}
			next := written()
			return out.OK && out.Rev == next.rev, next
		case OpPut:
			next := written()
			return out.OK && out.Rev == next.rev, next
		case OpGet:
			if !s.exists {
				return !out.OK, s
			}
			return out.OK && out.Rev == s.rev && out.Content == s.content, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(RegInput), output.(RegOutput)
		name := []string{"create", "cas", "put", "get"}[in.Kind]
		return fmt.Sprintf("%s %s(expect %d, %q) -> ok=%v rev=%d %q", in.Plan, name, in.Expect, in.Content, out.OK, out.Rev, out.Content)
	},
}

// CheckLinearizable checks history against RegisterModel and fails tb when
// it is not linearizable, writing porcupine's visualization to a file it
// names.
func CheckLinearizable(tb testing.TB, history []porcupine.Operation) {
	tb.Helper()
	res, info := porcupine.CheckOperationsVerbose(RegisterModel, history, 5*time.Minute)
	if res == porcupine.Ok {
		return
	}
	path := ""
	if f, err := os.CreateTemp("", "planserver-linearizability-*.html"); err == nil {
		_ = porcupine.Visualize(RegisterModel, info, f)
		f.Close()
		path = f.Name()
	}
	tb.Fatalf("history of %d operations is %s (visualization: %s)", len(history), res, path)
}

// StressDuration is how long a concurrency test runs: short in make test,
// as long as PLANSERVER_STRESS says under make stress (e.g. 2m).
func StressDuration(tb testing.TB, short time.Duration) time.Duration {
	v := os.Getenv("PLANSERVER_STRESS")
	if v == "" {
		return short
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		tb.Fatalf("PLANSERVER_STRESS=%q: %v", v, err)
	}
	return d
}

// RegisterClients runs clients concurrent clients, each doing random
// register operations on plans through do (create 10%, conditional write
// 40%, blind write 10%, read 40%; a conditional write expects the revision
// the client last saw) until duration has passed and at least minOps were
// done, and returns every operation with its real-time interval, for
// CheckLinearizable. seed varies the random choices between tests. An
// error from do fails tb and ends that client.
func RegisterClients(tb testing.TB, clients int, seed uint64, plans []string, duration time.Duration, minOps int64,
	do func(rng *rand.Rand, in RegInput) (RegOutput, error)) []porcupine.Operation {
	tb.Helper()
	start := time.Now()
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		ops     atomic.Int64
		wg      sync.WaitGroup
	)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), seed))
			known := map[string]int64{}
			for i := 0; time.Since(start) < duration || ops.Load() < minOps; i++ {
				plan := plans[rng.IntN(len(plans))]
				in := RegInput{Plan: plan, Content: fmt.Sprintf("c%d-%d", c, i)}
				switch r := rng.IntN(10); {
				case r < 1:
					in.Kind = OpCreate
				case r < 5:
					in.Kind, in.Expect = OpCAS, known[plan]
				case r < 6:
					in.Kind = OpPut
				default:
					in.Kind = OpGet
				}
				call := time.Since(start).Nanoseconds()
				out, err := do(rng, in)
				ret := time.Since(start).Nanoseconds()
				if err != nil {
					tb.Error(err)
					return
				}
				if out.OK {
					known[plan] = out.Rev
				}
				ops.Add(1)
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return history
}
