package app_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/app"
	"github.com/planserver/planserver/internal/dbtest/migrated"
	planhttp "github.com/planserver/planserver/internal/http"
)

// TestBuildsAndStops: the app built on a database it is given serves
// (ready, with the metrics of every part on one registry), and each of its
// jobs returns once its context is done, as serve needs before it closes
// the database.
func TestBuildsAndStops(t *testing.T) {
	a := app.New(app.Config{Config: planhttp.Config{DB: migrated.Fresh(t), Version: "test"}})
	for path, want := range map[string]string{"/readyz": `"status":"ready"`, "/metrics": "planserver_hook_unjudged_runs_total"} {
		rec := httptest.NewRecorder()
		a.HTTP.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d, lacks %s", path, rec.Code, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){
		func(ctx context.Context) { a.RunPruner(ctx, time.Hour) }, a.RunWebhooks, a.RunLeaseSweeper,
	} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	cancel()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a job did not stop when its context ended")
	}
	a.HTTP.Shutdown()
}
