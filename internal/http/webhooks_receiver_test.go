package http_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// receiver is test/webhooks/receiver.mjs, a real webhook receiver process
// on loopback that verifies every delivery with the official Standard
// Webhooks library from npm (standardwebhooks), not with planserver's
// code, and logs each one. .ci/webhooks installs it (npm ci in
// test/webhooks); without it these tests skip, unless
// PLANSERVER_REQUIRE_WEBHOOK_NPM is set (.ci/webhooks sets it), when they
// fail.
type receiver struct {
	t       *testing.T
	Port    int
	log     string
	secrets string
	mu      sync.Mutex
	cmd     *exec.Cmd
	paths   map[string]string
}

// received is one delivery as the receiver logged it.
type received struct {
	Path           string `json:"path"`
	ID             string `json:"id"`
	Timestamp      string `json:"timestamp"`
	SignatureCount int    `json:"signature_count"`
	Type           string `json:"type"`
	Seq            int64  `json:"seq"`
	Text           string `json:"text"`
	Verified       bool   `json:"verified"`
	Error          string `json:"error"`
	Mode           string `json:"mode"`
	Status         int    `json:"status"`
}

func receiverScript(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../test/webhooks")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules/standardwebhooks/package.json")); err != nil {
		if os.Getenv("PLANSERVER_REQUIRE_WEBHOOK_NPM") != "" {
			t.Fatalf("test/webhooks/node_modules/standardwebhooks is missing: run npm ci in test/webhooks (.ci/webhooks does)")
		}
		t.Skip("the npm standardwebhooks package is not installed: run .ci/webhooks (or npm ci in test/webhooks) to run the webhook delivery tests")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; the webhook receiver runs on Node")
	}
	return filepath.Join(dir, "receiver.mjs")
}

// startReceiver starts the receiver on a free loopback port.
func startReceiver(t *testing.T) *receiver {
	t.Helper()
	dir := t.TempDir()
	r := &receiver{t: t, log: filepath.Join(dir, "received.jsonl"), secrets: filepath.Join(dir, "secrets.json"), paths: map[string]string{}}
	r.writeSecrets()
	r.Start(0)
	t.Cleanup(r.Stop)
	return r
}

// Start runs the receiver process on port (0: a free one).
func (r *receiver) Start(port int) {
	r.t.Helper()
	cmd := exec.Command("node", receiverScript(r.t), strconv.Itoa(port), r.log, r.secrets)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		r.t.Fatalf("receiver did not start: %v", err)
	}
	var hello struct {
		Port int `json:"port"`
	}
	if err := json.Unmarshal([]byte(line), &hello); err != nil {
		r.t.Fatalf("receiver said %q", line)
	}
	r.mu.Lock()
	r.cmd, r.Port = cmd, hello.Port
	r.mu.Unlock()
}

// Stop kills the receiver (a receiver that is down).
func (r *receiver) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// URL is the receiver's address for path.
func (r *receiver) URL(path string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("http://127.0.0.1:%d%s", r.Port, path)
}

// Trust makes the receiver verify deliveries to path with secret.
func (r *receiver) Trust(path, secret string) {
	r.mu.Lock()
	r.paths[path] = secret
	r.mu.Unlock()
	r.writeSecrets()
}

func (r *receiver) writeSecrets() {
	r.mu.Lock()
	raw, _ := json.Marshal(r.paths)
	r.mu.Unlock()
	if err := os.WriteFile(r.secrets+".tmp", raw, 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(r.secrets+".tmp", r.secrets); err != nil {
		r.t.Fatal(err)
	}
}

// Mode sets how the receiver answers: ok, fail, hang or close; redirect,
// when not empty, makes every answer a 307 to it.
func (r *receiver) Mode(mode, redirect string) {
	r.t.Helper()
	u := fmt.Sprintf("http://127.0.0.1:%d/mode?mode=%s&redirect=%s", r.Port, mode, redirect)
	resp, err := http.Post(u, "text/plain", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
}

// Received returns what the receiver logged, in arrival order.
func (r *receiver) Received() []received {
	r.t.Helper()
	f, err := os.Open(r.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	var out []received
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec received
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			r.t.Fatalf("receiver log line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	return out
}

// accepted returns the deliveries to path the receiver verified and
// accepted with a 2xx.
func (r *receiver) accepted(path string) []received {
	var out []received
	for _, rec := range r.Received() {
		if rec.Path == path && rec.Verified && rec.Status >= 200 && rec.Status < 300 {
			out = append(out, rec)
		}
	}
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
