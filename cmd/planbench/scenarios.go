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

// planBody is a PUT body whose content makes the stored plan about 2 KiB.
var planBody = func() []byte {
	b, _ := json.Marshal(map[string]string{"title": "bench", "content": strings.Repeat("x", 2048-128), "author": "planbench"})
	return b
}()

// benchConditionalPut gives each worker its own plan and has it write with
// If-Match the revision it last saw, so every write is conditional and none
// loses a race: the scenario measures the write path, not conflicts.
func benchConditionalPut(ctx context.Context, o options, c *http.Client, srv *server, profile string) (result, error) {
	revs, err := createPutPlans(c, []string{srv.base}, o.concurrency)
	if err != nil {
		return result{}, err
	}
	return srv.profileWhile(o.pprofDir, profile, o.duration, func() result {
		return conditionalPuts(ctx, o, c, []string{srv.base}, revs)
	}), nil
}

// createPutPlans creates the plan of each of n workers, worker w's through
// bases[w%len(bases)], and returns their revisions.
func createPutPlans(c *http.Client, bases []string, n int) ([]int64, error) {
	revs := make([]int64, n)
	for w := range revs {
		h, _, err := call(c, "PUT", fmt.Sprintf("%s/v1/plans/bench-%d", bases[w%len(bases)], w), bytes.NewReader(planBody), jsonHeader, 201)
		if err != nil {
			return nil, err
		}
		if revs[w], err = etagRevision(h.Get("ETag")); err != nil {
			return nil, err
		}
	}
	return revs, nil
}

// conditionalPuts drives the conditional writes of benchConditionalPut,
// worker w through bases[w%len(bases)] (several replicas of one database).
func conditionalPuts(ctx context.Context, o options, c *http.Client, bases []string, revs []int64) result {
	return drive(ctx, o, func(ctx context.Context, w, i int) error {
		h, _, err := call(c, "PUT", fmt.Sprintf("%s/v1/plans/bench-%d", bases[w%len(bases)], w), bytes.NewReader(planBody),
			map[string]string{"Content-Type": "application/json", "If-Match": strconv.Quote(strconv.FormatInt(revs[w], 10))}, 200)
		if err != nil {
			return err
		}
		revs[w], err = etagRevision(h.Get("ETag"))
		return err
	})
}

func etagRevision(etag string) (int64, error) {
	n, err := strconv.ParseInt(strings.Trim(etag, `"`), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("ETag %q: %w", etag, err)
	}
	return n, nil
}

// benchGetPlan reads 2 KiB plans.
func benchGetPlan(ctx context.Context, o options, c *http.Client, srv *server) (result, error) {
	base := srv.base
	const plans = 16
	for i := 0; i < plans; i++ {
		if err := expect(c, "PUT", fmt.Sprintf("%s/v1/plans/read-%d", base, i), bytes.NewReader(planBody), jsonHeader, 201); err != nil {
			return result{}, err
		}
	}
	return srv.profileWhile(o.pprofDir, "get-plan", o.duration, func() result {
		return drive(ctx, o, func(ctx context.Context, w, i int) error {
			return expect(c, "GET", fmt.Sprintf("%s/v1/plans/read-%d", base, (w+i)%plans), nil, nil, 200)
		})
	}), nil
}

// benchCreateSession creates sessions and returns their ids for the read and
// mode scenarios.
func benchCreateSession(ctx context.Context, o options, c *http.Client, srv *server) (result, []string) {
	var n atomic.Int64
	res := srv.profileWhile(o.pprofDir, "create-session", o.duration, func() result {
		return drive(ctx, o, func(ctx context.Context, w, i int) error {
			id := fmt.Sprintf("s-%d", n.Add(1))
			return expect(c, "POST", srv.base+"/v1/sessions", strings.NewReader(`{"id":"`+id+`","title":"bench","agent":"planbench"}`), jsonHeader, 201)
		})
	})
	ids := make([]string, 0, o.concurrency)
	for i := int64(1); i <= n.Load() && len(ids) < 4*o.concurrency; i++ {
		ids = append(ids, fmt.Sprintf("s-%d", i))
	}
	return res, ids
}

// benchListPages measures the first, a middle and a last page of 100 plans
// with few and with many plans stored: with keyset pagination on an index
// the cost must not grow with the table.
func benchListPages(ctx context.Context, o options, c *http.Client, dir string) (small, large result, err error) {
	measure := func(label string, total int) (result, error) {
		srv, err := startServer(o.bin, filepath.Join(dir, "list-"+label+".db"), "normal", o.pprofDir != "")
		if err != nil {
			return result{}, err
		}
		defer srv.stop()
		if err := seedPlans(ctx, c, srv.base, total, o.concurrency); err != nil {
			return result{}, err
		}
		// Page tokens spread over the whole table, gathered once.
		tokens := []string{""}
		token := ""
		for page := 0; ; page++ {
			_, body, err := call(c, "GET", srv.base+"/v1/plans?limit=100&page_token="+token, nil, nil, 200)
			if err != nil {
				return result{}, err
			}
			var p struct {
				Next string `json:"next_page_token"`
			}
			if err := json.Unmarshal(body, &p); err != nil {
				return result{}, err
			}
			if p.Next == "" {
				break
			}
			token = p.Next
			if page%max(1, total/100/32) == 0 {
				tokens = append(tokens, token)
			}
		}
		return srv.profileWhile(o.pprofDir, fmt.Sprintf("list-%s-%d", label, total), o.duration, func() result {
			return drive(ctx, o, func(ctx context.Context, w, i int) error {
				return expect(c, "GET", srv.base+"/v1/plans?limit=100&page_token="+tokens[(w+i)%len(tokens)], nil, nil, 200)
			})
		}), nil
	}
	if small, err = measure("small", o.smallList); err != nil {
		return
	}
	large, err = measure("large", o.largeList)
	return
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
