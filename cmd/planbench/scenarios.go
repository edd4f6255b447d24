package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// bench holds what the scenarios share: the options, the one client, the
// chi baseline process and the report being built.
type bench struct {
	o     options
	c     *http.Client
	dir   string
	chi   *process
	rows  []row
	notes []string
	note  func(format string, args ...any)
}

// planBody is a PUT body whose content makes the stored plan about 2 KiB.
var planBody = func() []byte {
	b, _ := json.Marshal(map[string]string{"title": "bench", "content": strings.Repeat("x", 2048-128), "author": "planbench"})
	return b
}()

// benchSQLite runs the scenarios on the embedded default: the conditional
// PUT at both durabilities against raw SQLite, sessions against raw SQLite
// (the goal is a write path within 2× of the database's own cost), and
// reads against bare chi serving an answer of the same size (-only writes
// or reads picks one half).
func (b *bench) benchSQLite(ctx context.Context) error {
	writes := b.o.runs("writes")
	var rawNormal side
	for _, durability := range []string{"normal", "full"} {
		raw, closeRaw, err := rawSQLite(ctx, filepath.Join(b.dir, "raw-"+durability+".db"), durability)
		if err != nil {
			return err
		}
		defer closeRaw()
		if durability == "normal" {
			rawNormal = raw
		}
		if !writes {
			continue
		}
		srv, err := startServer(b.o, filepath.Join(b.dir, "put-"+durability+".db"), durability)
		if err != nil {
			return err
		}
		put, err := b.conditionalPut(srv, []string{srv.base}, "put-"+durability)
		if err == nil {
			put.name = "PUT /v1/plans/{name} If-Match 2 KiB (" + durability + ")"
			b.compare(ctx, put, raw)
		}
		srv.stop()
		if err != nil {
			return err
		}
	}

	srv, err := startServer(b.o, filepath.Join(b.dir, "main.db"), "normal")
	if err != nil {
		return err
	}
	defer srv.stop()
	if b.o.runs("reads") {
		getPlan, planSize, err := b.getPlan(srv, []string{srv.base})
		if err != nil {
			return err
		}
		b.compare(ctx, getPlan, chiSide(b.c, b.chi, "GET", planSize, ""))
	}

	var created atomic.Int64
	create := side{
		name: "POST /v1/sessions", proc: srv, profile: "create-session",
		op: func(ctx context.Context, w, i int) error {
			id := fmt.Sprintf("s-%d", created.Add(1))
			return expect(b.c, "POST", srv.base+"/v1/sessions", strings.NewReader(`{"id":"`+id+`","title":"bench","agent":"planbench"}`), jsonHeader, 201)
		},
	}
	ids := make([]string, 4*b.o.concurrency)
	if writes {
		b.compare(ctx, create, rawNormal)
	} else if err := parallel(len(ids), b.o.concurrency, func(i int) error { return create.op(ctx, 0, i) }); err != nil {
		return err
	}
	if created.Load() < int64(len(ids)) {
		return fmt.Errorf("POST /v1/sessions created only %d sessions", created.Load())
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("s-%d", i+1)
	}
	if b.o.runs("reads") {
		_, session, err := call(b.c, "GET", srv.base+"/v1/sessions/"+ids[0], nil, nil, 200)
		if err != nil {
			return err
		}
		getSession := side{
			name: fmt.Sprintf("GET /v1/sessions/{id} (%d B)", len(session)), proc: srv, profile: "get-session",
			op: func(ctx context.Context, w, i int) error {
				return expect(b.c, "GET", srv.base+"/v1/sessions/"+ids[(w+i)%len(ids)], nil, nil, 200)
			},
		}
		b.compare(ctx, getSession, chiSide(b.c, b.chi, "GET", len(session), ""))
	}
	if writes {
		// Each worker flips its own session's mode, every request a change
		// (setting the mode a session already has writes nothing), across
		// rounds too.
		flips := make([]int, b.o.concurrency)
		patchMode := side{
			name: "PATCH /v1/sessions/{id}/mode", proc: srv, profile: "patch-mode",
			op: func(ctx context.Context, w, i int) error {
				mode := []string{"plan", "build"}[flips[w]%2]
				flips[w]++
				return expect(b.c, "PATCH", srv.base+"/v1/sessions/"+ids[w%len(ids)]+"/mode",
					strings.NewReader(`{"mode":"`+mode+`"}`), jsonHeader, 200)
			},
		}
		b.compare(ctx, patchMode, rawNormal)
	}
	return nil
}

// conditionalPut gives each worker its own plan and has it write with
// If-Match the revision it last saw, so every write is conditional and none
// loses a race: the scenario measures the write path, not conflicts.
// Worker w writes through bases[w%len(bases)] (replicas of one database).
func (b *bench) conditionalPut(srv *process, bases []string, profile string) (side, error) {
	revs := make([]int64, b.o.concurrency)
	for w := range revs {
		h, _, err := call(b.c, "PUT", fmt.Sprintf("%s/v1/plans/bench-%d", bases[w%len(bases)], w), bytes.NewReader(planBody), jsonHeader, 201)
		if err != nil {
			return side{}, err
		}
		if revs[w], err = etagRevision(h.Get("ETag")); err != nil {
			return side{}, err
		}
	}
	return side{
		proc: srv, profile: profile,
		op: func(ctx context.Context, w, i int) error {
			h, _, err := call(b.c, "PUT", fmt.Sprintf("%s/v1/plans/bench-%d", bases[w%len(bases)], w), bytes.NewReader(planBody),
				map[string]string{"Content-Type": "application/json", "If-Match": strconv.Quote(strconv.FormatInt(revs[w], 10))}, 200)
			if err != nil {
				return err
			}
			revs[w], err = etagRevision(h.Get("ETag"))
			return err
		},
	}, nil
}

func etagRevision(etag string) (int64, error) {
	n, err := strconv.ParseInt(strings.Trim(etag, `"`), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ETag %q: %w", etag, err)
	}
	return n, nil
}

// getPlan stores 16 plans of 2 KiB and reads them, worker w through
// bases[w%len(bases)]; it returns the size of one answer.
func (b *bench) getPlan(srv *process, bases []string) (side, int, error) {
	const plans = 16
	for i := 0; i < plans; i++ {
		if err := expect(b.c, "PUT", fmt.Sprintf("%s/v1/plans/read-%d", bases[0], i), bytes.NewReader(planBody), jsonHeader, 201); err != nil {
			return side{}, 0, err
		}
	}
	_, body, err := call(b.c, "GET", bases[0]+"/v1/plans/read-0", nil, nil, 200)
	if err != nil {
		return side{}, 0, err
	}
	return side{
		name: fmt.Sprintf("GET /v1/plans/{name} (%d B)", len(body)), proc: srv, profile: "get-plan",
		op: func(ctx context.Context, w, i int) error {
			return expect(b.c, "GET", fmt.Sprintf("%s/v1/plans/read-%d", bases[w%len(bases)], (w+i)%plans), nil, nil, 200)
		},
	}, len(body), nil
}

// pages measures a page of 100 plans and a page of 100 events with few and
// with many rows stored: keyset pagination on an index must not grow with
// the table. Both servers run at once so that their rounds interleave.
func (b *bench) pages(ctx context.Context) error {
	small, err := b.pagesServer(ctx, "small", b.o.smallList)
	if err != nil {
		return err
	}
	defer small.srv.stop()
	large, err := b.pagesServer(ctx, "large", b.o.largeList)
	if err != nil {
		return err
	}
	defer large.srv.stop()
	b.compare(ctx, large.plans, small.plans)
	b.compare(ctx, large.events, small.events)
	return nil
}

// pageSides is a server holding many (or few) plans and the page reads
// measured on it.
type pageSides struct {
	srv           *process
	plans, events side
}

// pagesServer starts a server holding total plans (and so as many events)
// and gathers page tokens and event cursors spread over the whole table.
func (b *bench) pagesServer(ctx context.Context, label string, total int) (*pageSides, error) {
	b.note("seeding %d plans (%s pages)", total, label)
	srv, err := startServer(b.o, filepath.Join(b.dir, "pages-"+label+".db"), "normal")
	if err != nil {
		return nil, err
	}
	p := &pageSides{srv: srv}
	if err := seedPlans(ctx, b.c, srv.base, total, b.o.concurrency); err != nil {
		srv.stop()
		return nil, err
	}
	tokens := []string{""}
	token := ""
	for page := 0; ; page++ {
		_, body, err := call(b.c, "GET", srv.base+"/v1/plans?limit=100&page_token="+token, nil, nil, 200)
		if err != nil {
			srv.stop()
			return nil, err
		}
		var list struct {
			Next string `json:"next_page_token"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			srv.stop()
			return nil, err
		}
		if list.Next == "" {
			break
		}
		token = list.Next
		if page%max(1, total/100/32) == 0 {
			tokens = append(tokens, token)
		}
	}
	h, _, err := call(b.c, "GET", srv.base+"/v1/plans?limit=1", nil, nil, 200)
	if err != nil {
		srv.stop()
		return nil, err
	}
	head, err := strconv.ParseInt(h.Get("X-Event-Seq"), 10, 64)
	if err != nil || head < 100 {
		srv.stop()
		return nil, fmt.Errorf("X-Event-Seq %q after seeding %d plans", h.Get("X-Event-Seq"), total)
	}
	var cursors []int64
	for i := int64(0); i < 32; i++ {
		cursors = append(cursors, i*(head-100)/32)
	}
	accept := map[string]string{"Accept": "application/json"}
	p.plans = side{
		name: fmt.Sprintf("GET /v1/plans?limit=100 (%d plans)", total), proc: srv, profile: "list-plans-" + label,
		op: func(ctx context.Context, w, i int) error {
			return expect(b.c, "GET", srv.base+"/v1/plans?limit=100&page_token="+tokens[(w+i)%len(tokens)], nil, nil, 200)
		},
	}
	p.events = side{
		name: fmt.Sprintf("GET /v1/events?limit=100 (%d events)", head), proc: srv, profile: "list-events-" + label,
		op: func(ctx context.Context, w, i int) error {
			return expect(b.c, "GET", srv.base+"/v1/events?limit=100&after="+strconv.FormatInt(cursors[(w+i)%len(cursors)], 10), nil, accept, 200)
		},
	}
	return p, nil
}

// seedPlans stores total small plans through the API, from workers
// goroutines.
func seedPlans(ctx context.Context, c *http.Client, base string, total, workers int) error {
	var (
		next   atomic.Int64
		wg     sync.WaitGroup
		failed atomic.Pointer[error]
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= int64(total) && failed.Load() == nil && ctx.Err() == nil; n = next.Add(1) {
				err := expect(c, "PUT", fmt.Sprintf("%s/v1/plans/p%07d", base, n),
					strings.NewReader(`{"content":"plan `+strconv.FormatInt(n, 10)+`","status":"idle"}`), jsonHeader, 201)
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return fmt.Errorf("seed plans: %w", *err)
	}
	return nil
}
