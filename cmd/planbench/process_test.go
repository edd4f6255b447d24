package main

import (
	"os"
	"testing"
	"time"
)

// The test binary stands in for planbench where planbench starts itself
// (the chi baseline: planbench serve-baseline ADDR).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve-baseline" {
		main()
		return
	}
	os.Exit(m.Run())
}

// A planbench stopped by a signal (a time limit) takes the servers it
// started with it: killStarted reaches every one still running.
func TestKillStartedEndsTheServers(t *testing.T) {
	p, err := startChiBaseline(options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	if n := killStarted(); n != 1 {
		t.Errorf("killStarted = %d, want 1", n)
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the server still runs 5 s after killStarted")
	}
	if n := killStarted(); n != 0 {
		t.Errorf("killStarted after the server ended = %d, want 0", n)
	}
}
