package admin

import "testing"

// TestDialAddr: healthcheck asks a server listening on every address on
// loopback, and any other address as given.
func TestDialAddr(t *testing.T) {
	for addr, want := range map[string]string{"0.0.0.0:8080": "127.0.0.1:8080", ":8080": "127.0.0.1:8080",
		"[::]:8080": "[::1]:8080", "127.0.0.1:9": "127.0.0.1:9", "example.com:80": "example.com:80"} {
		if got := dialAddr(addr); got != want {
			t.Errorf("dialAddr(%q) = %q, want %q", addr, got, want)
		}
	}
}
