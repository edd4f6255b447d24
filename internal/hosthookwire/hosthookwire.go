// Package hosthookwire is what a hook process needs to ask planserver: its
// settings, its token, and one POST /v1/hooks/{host} over HTTP/1.1.
//
// A host starts the hook before every tool call, so the hook's start-up is
// added to every call, and in Go that start-up grows with what the binary
// links: every package initialiser runs before main, and every page of it
// touched is a fault. On the 2-core VM (measured in docs/benchmarks.md's round six, in git history)
// an empty Go program starts and exits in 6.9 ms (p50; 10.8 ms p99), and
// planserver-hook, when it linked the adapters, the shell parser, the YAML
// table and net/http, took 18.4 ms (25.1 ms p99), against a target of 15
// ms at p99; without them it takes 12.4 ms (19.0 ms p99).
// So this package, which the lean planserver-hook is made of, imports only
// the standard library's net, bufio and encoding/json: no net/http, no TLS,
// no shell parser. Its client speaks the small part of HTTP/1.1 one hook
// question needs (one request, Connection: close, a body sized by
// Content-Length, chunks or the end of the connection). Judging a call
// without planserver, and https, are planserver hook's: planserver-hook
// hands the call over to it (cmd/planserver-hook).
package hosthookwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/planserver/planserver/internal/hosthookproto"
)

// maxAnswer bounds planserver's answer: an answer carries at most the
// input's command back (updatedInput), so twice the input is plenty.
const maxAnswer = 2*hosthookproto.MaxInput + 1<<20

// DefaultServer is the planserver the hook, its installer and the API
// commands talk to when neither --server nor PLANSERVER_URL names one.
const DefaultServer = "http://127.0.0.1:8080"

// DefaultTimeout bounds one question to planserver: well inside every
// host's default hook timeout (Claude Code and Gemini CLI: 60 s).
const DefaultTimeout = 5 * time.Second

// Settings are the hook's settings, from its flags and the environment.
type Settings struct {
	Server, TokenFile, Session, Parent string
	// ShellReadOnly is the --shell-read-only file that extends the shell
	// table, for the commands the hook allows while planserver is down.
	ShellReadOnly string
	Timeout       time.Duration
	// OfflineReason, when set, says planserver was already asked for this
	// call and could not answer, and why: judge it locally at once.
	OfflineReason string
	// MCP is the name under which planserver's MCP server is set up in the
	// host ("none" when it is not), as planserver hook install wrote it:
	// planserver names those tools in its denials (?mcp=).
	MCP string
	// TokenOnArgv records a --token given on the command line: refused.
	TokenOnArgv bool
}

// ParseFlags reads the hook's flags (args after HOST); the environment
// fills what the flags leave empty.
func ParseFlags(args []string, getenv func(string) string) (Settings, error) {
	var set Settings
	fs := flag.NewFlagSet("planserver hook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var argvToken string
	fs.StringVar(&set.Server, "server", "", "")
	fs.StringVar(&argvToken, "token", "", "")
	fs.StringVar(&set.TokenFile, "token-file", "", "")
	fs.StringVar(&set.Session, "session", "", "")
	fs.StringVar(&set.Parent, "parent", "", "")
	fs.DurationVar(&set.Timeout, "timeout", DefaultTimeout, "")
	fs.StringVar(&set.ShellReadOnly, "shell-read-only", "", "")
	fs.StringVar(&set.OfflineReason, "offline-reason", "", "")
	fs.StringVar(&set.MCP, "mcp", "", "")
	if err := fs.Parse(args); err != nil {
		return set, fmt.Errorf("bad arguments: %w", err)
	}
	if fs.NArg() > 0 {
		return set, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set.TokenOnArgv = argvToken != ""
	env := map[string]*string{"PLANSERVER_URL": &set.Server, "PLANSERVER_SESSION": &set.Session, "PLANSERVER_PARENT": &set.Parent}
	for name, v := range env {
		if *v == "" {
			*v = getenv(name)
		}
	}
	if set.Server == "" {
		set.Server = DefaultServer
	}
	if set.Session != "" && set.Parent != "" {
		return set, errors.New("both a session and a parent are set; the hook acts for one session")
	}
	if set.Timeout <= 0 || set.Timeout > time.Minute {
		return set, fmt.Errorf("--timeout %s is not between 0 and 1m", set.Timeout)
	}
	return set, nil
}

// IsHelp reports whether an argument of the hook command asks for its
// help.
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}

// Check reports what keeps the hook from asking planserver with set: a
// token on the command line, or no session.
func (set Settings) Check() error {
	if set.TokenOnArgv {
		return errors.New("--token is refused on the command line (hosts print the hook command in their errors); " +
			"set PLANSERVER_TOKEN or --token-file")
	}
	if set.Session == "" && set.Parent == "" {
		return errors.New("no session is configured: set PLANSERVER_SESSION or --session (or PLANSERVER_PARENT / --parent)")
	}
	return nil
}

// Token reads the token from --token-file, else PLANSERVER_TOKEN.
func Token(set Settings, getenv func(string) string) (string, error) {
	if set.TokenFile == "" {
		return strings.TrimSpace(getenv("PLANSERVER_TOKEN")), nil
	}
	raw, err := os.ReadFile(set.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read --token-file: %w", err)
	}
	return strings.TrimSpace(string(raw)), nil
}

// Request is one question to planserver, as both of the hook's clients
// send it: planserver hook's net/http client (proxies, TLS) and Send.
type Request struct {
	URL *url.URL
	// Header in the order sent; Host and the framing are the client's.
	Header [][2]string
	Body   []byte
}

// NewRequest is the question about the host's input raw: POST
// /v1/hooks/{host} with the session (or parent) it acts for.
func NewRequest(set Settings, token, host string, raw []byte) (Request, error) {
	u, err := url.Parse(strings.TrimRight(set.Server, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Request{}, fmt.Errorf("planserver's URL %q is not a URL like http://127.0.0.1:8080", set.Server)
	}
	if strings.ContainsFunc(token, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return Request{}, errors.New("the token has characters a token cannot have (spaces, control or non-ASCII characters)")
	}
	q := url.Values{}
	if set.Session != "" {
		q.Set("session", set.Session)
	} else {
		q.Set("parent", set.Parent)
	}
	if set.MCP != "" {
		q.Set("mcp", set.MCP)
	}
	if host == "" || strings.ContainsFunc(host, func(r rune) bool { return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' }) {
		return Request{}, fmt.Errorf("%q is not a host name like claude-code", host)
	}
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/")+"/v1/hooks/"+host, ""
	u.RawQuery = q.Encode()
	header := [][2]string{{"Content-Type", "application/json"}, {hosthookproto.AdapterHeader, "command"}}
	if token != "" {
		header = append(header, [2]string{"Authorization", "Bearer " + token})
	}
	return Request{URL: u, Header: header, Body: raw}, nil
}

// Answer reads planserver's answer: a 200 JSON object is the host's
// output; anything else is an error that says what planserver said.
func Answer(status int, body []byte) ([]byte, error) {
	if status != 200 {
		var p struct{ Code, Detail string }
		if json.Unmarshal(body, &p) == nil && p.Code != "" {
			return nil, fmt.Errorf("planserver answered %d %s: %s", status, p.Code, p.Detail)
		}
		return nil, fmt.Errorf("planserver answered %d", status)
	}
	// json.Valid, not Unmarshal: no reflection on the path of every call
	// (its first use pages in type data, which costs start-up time).
	body = bytes.TrimSpace(body)
	if !json.Valid(body) || len(body) == 0 || body[0] != '{' {
		return nil, fmt.Errorf("planserver's answer is not a JSON object: %.80q", body)
	}
	return body, nil
}

// Direct reports whether Send can carry a question to u: plain http, and
// not through a proxy (net/http sends a loopback host directly, and any
// host when no HTTP_PROXY is set; Send follows the same rule).
func Direct(u *url.URL, getenv func(string) string) bool {
	if u.Scheme != "http" {
		return false
	}
	if getenv("HTTP_PROXY") == "" && getenv("http_proxy") == "" {
		return true
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

// Send carries req over a plain TCP connection as HTTP/1.1 and returns
// the answer's status and body. The whole exchange ends by the deadline of
// ctx. Only for URLs Direct accepts.
func Send(ctx context.Context, req Request) (int, []byte, error) {
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	w := bufio.NewWriter(conn)
	head := []string{"POST ", req.URL.RequestURI(), " HTTP/1.1\r\nHost: ", req.URL.Host, "\r\nUser-Agent: planserver-hook\r\n"}
	for _, h := range req.Header {
		head = append(head, h[0], ": ", h[1], "\r\n")
	}
	head = append(head, "Content-Length: ", strconv.Itoa(len(req.Body)), "\r\nConnection: close\r\n\r\n")
	for _, s := range head {
		_, _ = w.WriteString(s)
	}
	_, _ = w.Write(req.Body)
	if err := w.Flush(); err != nil {
		return 0, nil, err
	}
	return readResponse(bufio.NewReader(conn))
}

// readResponse reads an HTTP/1.1 response to a request sent with
// Connection: close: its status and its whole body, however it is framed.
func readResponse(br *bufio.Reader) (int, []byte, error) {
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return 0, nil, err
	}
	proto, rest, _ := strings.Cut(line, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || status < 100 || status > 599 {
		return 0, nil, fmt.Errorf("not an HTTP/1.x status line: %.80q", line)
	}
	header, err := tp.ReadMIMEHeader()
	if err != nil {
		return 0, nil, fmt.Errorf("the headers: %w", err)
	}
	var body []byte
	switch te := strings.ToLower(header.Get("Transfer-Encoding")); {
	case te == "chunked":
		body, err = readChunked(br)
	case te != "":
		err = fmt.Errorf("unsupported Transfer-Encoding %q", te)
	case header.Get("Content-Length") != "":
		n, perr := strconv.ParseInt(header.Get("Content-Length"), 10, 64)
		if perr != nil || n < 0 || n > maxAnswer {
			return 0, nil, fmt.Errorf("bad or huge Content-Length %q", header.Get("Content-Length"))
		}
		body = make([]byte, n)
		_, err = io.ReadFull(br, body)
	default:
		body, err = readAtMost(br, maxAnswer)
	}
	return status, body, err
}

// readChunked decodes a chunked body (RFC 9112, section 7.1), trailers
// read and dropped.
func readChunked(br *bufio.Reader) ([]byte, error) {
	tp := textproto.NewReader(br)
	var body []byte
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return nil, fmt.Errorf("a chunk's size: %w", err)
		}
		sizeText, _, _ := strings.Cut(line, ";") // chunk extensions are ignored
		size, err := strconv.ParseInt(strings.TrimSpace(sizeText), 16, 64)
		if err != nil || size < 0 || int64(len(body))+size > maxAnswer {
			return nil, fmt.Errorf("bad or huge chunk size %.40q", line)
		}
		if size == 0 {
			if _, err := tp.ReadMIMEHeader(); err != nil { // trailers, then the final CRLF
				return nil, fmt.Errorf("after the last chunk: %w", err)
			}
			return body, nil
		}
		start := len(body)
		body = append(body, make([]byte, size)...)
		if _, err := io.ReadFull(br, body[start:]); err != nil {
			return nil, fmt.Errorf("a chunk: %w", err)
		}
		if crlf, err := tp.ReadLine(); err != nil || crlf != "" {
			return nil, errors.New("a chunk does not end with CRLF")
		}
	}
}

func readAtMost(r io.Reader, n int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, n+1))
	if err == nil && int64(len(body)) > n {
		err = fmt.Errorf("the answer is larger than %d bytes", n)
	}
	return body, err
}

// IsReport reports whether raw is host's report of a run (one of
// hosthookproto.ReportEvents), for the answers given when nothing else could be read:
// a report gets no decision. It unmarshals, so it is for the paths where
// the hook already failed, not the start-up of every call.
func IsReport(host string, raw []byte) bool {
	var in struct {
		HookEventName string `json:"hook_event_name"`
		Event         string `json:"event"`
	}
	if json.Unmarshal(raw, &in) != nil {
		return false
	}
	ev := in.HookEventName
	if host == "opencode" {
		ev = in.Event
	}
	for _, r := range hosthookproto.ReportEvents[host] {
		if ev == r {
			return true
		}
	}
	return false
}

// AnyHostDeny is a denial every host's format reads as one (Claude Code
// and Gemini CLI take "decision": "block", Cursor "permission", the
// opencode plugin anything but allow/none): the answer when the host is
// unknown, or when the hook cannot tell which host's format to answer in.
func AnyHostDeny(reason string) []byte {
	raw, _ := json.Marshal(map[string]string{"decision": "block", "reason": reason,
		"permission": "deny", "agent_message": reason, "user_message": reason})
	return raw
}
