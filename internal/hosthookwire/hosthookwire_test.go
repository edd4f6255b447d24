package hosthookwire

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planserver/planserver/internal/hosthookproto"
)

// Send's HTTP is checked against net/http's server, which frames answers
// the ways a planserver (or a proxy-less front) can: Content-Length for a
// small answer, chunks for one written in parts, the end of the
// connection for an HTTP/1.0-style answer.

func settings(server string) Settings {
	return Settings{Server: server, Session: "s 1", Timeout: 2 * time.Second}
}

func ask(t *testing.T, set Settings, token string, raw []byte) ([]byte, error) {
	t.Helper()
	req, err := NewRequest(set, token, "claude-code", raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), set.Timeout)
	defer cancel()
	status, body, err := Send(ctx, req)
	if err != nil {
		return nil, err
	}
	return Answer(status, body)
}

func TestSendRequestAndFraming(t *testing.T) {
	big := `{"hookSpecificOutput":{"x":"` + strings.Repeat(`é\"\\`, 20000) + `"}}`
	var got *http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		switch r.URL.Query().Get("session") {
		case "small":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok":true}`)
		case "chunked":
			for rest := big; rest != ""; {
				n := min(len(rest), 1000)
				_, _ = io.WriteString(w, rest[:n])
				w.(http.Flusher).Flush()
				rest = rest[n:]
			}
		case "problem":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"code":"unauthenticated","detail":"token x was revoked"}`)
		case "not-json":
			_, _ = io.WriteString(w, `<html>`)
		}
	}))
	defer srv.Close()
	input := []byte(`{"tool_name":"Bash","tool_input":{"command":"ls"}}`)

	set := settings(srv.URL + "/prefix/")
	set.Session = "small"
	out, err := ask(t, set, "tok-en", input)
	if err != nil || string(out) != `{"ok":true}` {
		t.Fatalf("small answer: %q %v", out, err)
	}
	if got.Method != "POST" || got.URL.Path != "/prefix/v1/hooks/claude-code" || got.URL.RawQuery != "session=small" ||
		got.Header.Get("Authorization") != "Bearer tok-en" || got.Header.Get(hosthookproto.AdapterHeader) != "command" ||
		got.Header.Get("Content-Type") != "application/json" || string(gotBody) != string(input) {
		t.Errorf("request: %s %s %v body %q", got.Method, got.URL, got.Header, gotBody)
	}

	set.Session = "chunked"
	out, err = ask(t, set, "", input)
	if err != nil {
		t.Fatalf("chunked answer: %v", err)
	}
	if string(out) != big {
		t.Errorf("chunked answer: %d bytes, want %d", len(out), len(big))
	}
	if got.Header.Get("Authorization") != "" {
		t.Errorf("no token, yet Authorization %q", got.Header.Get("Authorization"))
	}

	set.Session = "problem"
	if _, err := ask(t, set, "", input); err == nil || err.Error() != "planserver answered 401 unauthenticated: token x was revoked" {
		t.Errorf("problem: %v", err)
	}
	set.Session = "not-json"
	if _, err := ask(t, set, "", input); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("not JSON: %v", err)
	}
}

// rawServer answers every connection with reply (and then holds it open
// for hold, or closes it).
func rawServer(t *testing.T, reply string, hold time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for { // the request's headers
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(c, reply)
				time.Sleep(hold)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestSendRefusesBrokenAnswers(t *testing.T) {
	for _, c := range []struct {
		name, reply string
		hold        time.Duration
		want        string
	}{
		{"until close", "HTTP/1.0 200 OK\r\n\r\n{\"a\":1}", 0, ""},
		{"hangs", "", 5 * time.Second, "timeout"},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"a\":1}", 0, "EOF"},
		{"cut chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"a\":1}", 0, "a chunk"},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, "bad or huge chunk size"},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":1}xx0\r\n\r\n", 0, "CRLF"},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", 0, "huge Content-Length"},
		{"gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "unsupported Transfer-Encoding"},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", 0, "not an HTTP/1.x status line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := settings(rawServer(t, c.reply, c.hold))
			set.Timeout = 300 * time.Millisecond
			begin := time.Now()
			out, err := ask(t, set, "", []byte(`{}`))
			if c.want == "" {
				if err != nil || string(out) != `{"a":1}` {
					t.Errorf("%q %v", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one that says %q", err, c.want)
			}
			if took := time.Since(begin); took > 2*time.Second {
				t.Errorf("took %s past a 300ms timeout", took)
			}
		})
	}
	// Nobody listening: refused at once.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := ask(t, settings("http://"+addr), "", []byte(`{}`)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("nobody listening: %v", err)
	}
}

func TestNewRequestRefusesWhatItCannotSend(t *testing.T) {
	for _, c := range []struct {
		server, token, host, want string
	}{
		{"127.0.0.1:8080", "", "claude-code", "not a URL like"},
		{"ftp://h", "", "claude-code", "not a URL like"},
		{"http://u:p@h", "", "claude-code", "not a URL like"},
		{"http://h?x=1", "", "claude-code", "not a URL like"},
		{"http://h", "a\r\nX-Evil: 1", "claude-code", "characters a token cannot have"},
		{"http://h", "", "../admin", "not a host name"},
		{"http://h", "", "", "not a host name"},
	} {
		if _, err := NewRequest(settings(c.server), c.token, c.host, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q %q: %v, want %q", c.server, c.token, c.host, err, c.want)
		}
	}
	req, err := NewRequest(Settings{Server: "http://h:1/", Parent: "p"}, "", "gemini-cli", nil)
	if err != nil || req.URL.String() != "http://h:1/v1/hooks/gemini-cli?parent=p" {
		t.Errorf("parent: %v %v", req.URL, err)
	}
}

func TestDirect(t *testing.T) {
	env := func(proxy string) func(string) string {
		return func(k string) string {
			if k == "HTTP_PROXY" {
				return proxy
			}
			return ""
		}
	}
	for _, c := range []struct {
		server, proxy string
		want          bool
	}{
		{"http://127.0.0.1:8080", "", true},
		{"http://planserver.internal:8080", "", true},
		{"https://127.0.0.1:8080", "", false},
		{"http://127.0.0.1:8080", "http://proxy:3128", true},
		{"http://localhost:8080", "http://proxy:3128", true},
		{"http://[::1]:8080", "http://proxy:3128", true},
		{"http://planserver.internal:8080", "http://proxy:3128", false},
	} {
		req, err := NewRequest(settings(c.server), "", "claude-code", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := Direct(req.URL, env(c.proxy)); got != c.want {
			t.Errorf("%s with proxy %q: %v, want %v", c.server, c.proxy, got, c.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	env := map[string]string{"PLANSERVER_URL": "http://env:1", "PLANSERVER_SESSION": "from-env"}
	set, err := ParseFlags([]string{"--session", "flag", "--timeout", "2s", "--token", "x"}, func(k string) string { return env[k] })
	if err != nil || set.Server != "http://env:1" || set.Session != "flag" || set.Timeout != 2*time.Second || !set.TokenOnArgv {
		t.Errorf("%+v %v", set, err)
	}
	if err := set.Check(); err == nil || !strings.Contains(err.Error(), "--token is refused") {
		t.Errorf("token on argv: %v", err)
	}
	for _, args := range [][]string{{"--timeout", "2m"}, {"--session", "a", "--parent", "b"}, {"extra"}, {"--nope"}} {
		if _, err := ParseFlags(args, os.Getenv); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
