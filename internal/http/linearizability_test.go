package http_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/planserver/planserver/internal/apitest"
)

// The versioned-register model of a shared plan: a plan either does not
// exist or holds a content at a revision. Every operation a client can do
// on it through HTTP is one of regOp's kinds.

type regKind int

const (
	opCreate regKind = iota // PUT with If-None-Match: *
	opCAS                   // PUT with If-Match: "expect"
	opPut                   // unconditional PUT
	opGet                   // GET
)

type regInput struct {
	plan    string
	kind    regKind
	expect  int64 // opCAS
	content string
}

type regOutput struct {
	ok      bool // 2xx; false for a 412 (and for a GET: not found)
	rev     int64
	content string // opGet
}

type regState struct {
	exists  bool
	rev     int64
	content string
}

var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byPlan := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			p := op.Input.(regInput).plan
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
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		written := func() regState {
			if s.exists {
				return regState{true, s.rev + 1, in.content}
			}
			return regState{true, 1, in.content}
		}
		switch in.kind {
		case opCreate:
			if s.exists {
				return !out.ok, s
			}
			return out.ok && out.rev == 1, regState{true, 1, in.content}
		case opCAS:
			if !s.exists || s.rev != in.expect {
				return !out.ok, s
			}
			next := written()
			return out.ok && out.rev == next.rev, next
		case opPut:
			next := written()
			return out.ok && out.rev == next.rev, next
		case opGet:
			if !s.exists {
				return !out.ok, s
			}
			return out.ok && out.rev == s.rev && out.content == s.content, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		name := []string{"create", "cas", "put", "get"}[in.kind]
		return fmt.Sprintf("%s %s(expect %d, %q) -> ok=%v rev=%d %q", in.plan, name, in.expect, in.content, out.ok, out.rev, out.content)
	},
}

// TestRegisterModelRejectsALostUpdate makes sure the model can fail: two
// conditional writes on the same revision cannot both succeed.
func TestRegisterModelRejectsALostUpdate(t *testing.T) {
	h := []porcupine.Operation{
		{ClientId: 0, Input: regInput{plan: "p", kind: opCreate, content: "a"}, Call: 0, Output: regOutput{ok: true, rev: 1}, Return: 1},
		{ClientId: 0, Input: regInput{plan: "p", kind: opCAS, expect: 1, content: "b"}, Call: 2, Output: regOutput{ok: true, rev: 2}, Return: 3},
		{ClientId: 1, Input: regInput{plan: "p", kind: opCAS, expect: 1, content: "c"}, Call: 2, Output: regOutput{ok: true, rev: 2}, Return: 4},
	}
	if porcupine.CheckOperations(registerModel, h) {
		t.Fatal("a lost update was judged linearizable")
	}
	h[2].Output = regOutput{ok: false}
	if !porcupine.CheckOperations(registerModel, h) {
		t.Fatal("a clean conflict was judged not linearizable")
	}
}

// stressDuration is how long the concurrency tests run: short in make test,
// minutes under make stress (PLANSERVER_STRESS=2m).
func stressDuration(t *testing.T, short time.Duration) time.Duration {
	v := os.Getenv("PLANSERVER_STRESS")
	if v == "" {
		return short
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("PLANSERVER_STRESS=%q: %v", v, err)
	}
	return d
}

// TestSharedPlansAreLinearizable has several clients create, conditionally
// write, blindly write and read a few plans through the real HTTP server,
// records every operation's real-time interval, and checks the history
// against the versioned-register model.
func TestSharedPlansAreLinearizable(t *testing.T) {
	env := apitest.New(t)
	duration := stressDuration(t, 1500*time.Millisecond)
	plans := []string{"lin-a", "lin-b", "lin-c"}
	const clients = 6
	start := time.Now()
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		wg      sync.WaitGroup
	)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			known := map[string]int64{}
			for i := 0; time.Since(start) < duration; i++ {
				plan := plans[rng.IntN(len(plans))]
				in := regInput{plan: plan, content: fmt.Sprintf("c%d-%d", c, i)}
				switch r := rng.IntN(10); {
				case r < 1:
					in.kind = opCreate
				case r < 5:
					in.kind, in.expect = opCAS, known[plan]
				case r < 6:
					in.kind = opPut
				default:
					in.kind = opGet
				}
				call := time.Since(start).Nanoseconds()
				out := doRegister(t, env, in)
				ret := time.Since(start).Nanoseconds()
				if out.ok {
					known[plan] = out.rev
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res, info := porcupine.CheckOperationsVerbose(registerModel, history, time.Minute)
	if res != porcupine.Ok {
		path := ""
		if f, err := os.CreateTemp("", "planserver-linearizability-*.html"); err == nil {
			_ = porcupine.Visualize(registerModel, info, f)
			f.Close()
			path = f.Name()
		}
		t.Fatalf("history of %d operations is %s (visualization: %s)", len(history), res, path)
	}
	t.Logf("%d operations linearizable", len(history))
}

// doRegister performs one register operation over HTTP.
func doRegister(t *testing.T, env *apitest.Env, in regInput) regOutput {
	path := "/v1/plans/" + in.plan
	if in.kind == opGet {
		r := env.Call("GET", path, nil)
		switch r.Status {
		case http.StatusOK:
			var p struct {
				Revision int64  `json:"revision"`
				Content  string `json:"content"`
			}
			r.JSON(t, &p)
			return regOutput{ok: true, rev: p.Revision, content: p.Content}
		case http.StatusNotFound:
			return regOutput{}
		}
		t.Errorf("GET %s: %d %s", path, r.Status, r.Body)
		return regOutput{}
	}
	var header []string
	switch in.kind {
	case opCreate:
		header = []string{"If-None-Match", "*"}
	case opCAS:
		header = []string{"If-Match", strconv.Quote(strconv.FormatInt(in.expect, 10))}
	}
	r := env.Call("PUT", path, map[string]string{"content": in.content}, header...)
	switch r.Status {
	case http.StatusOK, http.StatusCreated:
		rev, err := strconv.ParseInt(strings.Trim(r.Header.Get("ETag"), `"`), 10, 64)
		if err != nil {
			t.Errorf("PUT %s: ETag %q", path, r.Header.Get("ETag"))
		}
		return regOutput{ok: true, rev: rev}
	case http.StatusPreconditionFailed:
		return regOutput{}
	}
	t.Errorf("PUT %s: %d %s", path, r.Status, r.Body)
	return regOutput{}
}
