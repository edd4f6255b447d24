// Package oidctest runs a real OpenID Provider that nobody here wrote,
// zitadel's (github.com/zitadel/oidc/v3: its op package, and the example
// OP's storage and username/password login page), on a loopback address,
// for the tests of sign-in: the Go tests of internal/http start it
// in-process, and test/oidcprovider runs it as a process of its own for
// the browser test (e2e/signin.test.mjs).
//
// What is ours is configuration and one thing the example OP lacks: a
// browser session at the provider (single sign-on). Its login page asks
// for the password on every authorization request; a real provider
// remembers the person and signs them in again without asking, until
// RP-initiated logout (its end_session_endpoint) ends that session. The
// tests of logout need exactly that difference, so this package keeps a
// cookie of its own after a successful login and ends it when the OP,
// having verified the id_token_hint, terminates the user's session.
package oidctest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is a person who can sign in at the provider's login page.
type User struct {
	Subject  string
	Username string
	Password string
	Email    string
	// GivenName and FamilyName make the name claim ("Given Family").
	GivenName  string
	FamilyName string
}

// Options configure a provider.
type Options struct {
	// Addr is the loopback host:port to listen on; "127.0.0.1:0" when "".
	Addr string
	// ClientID and ClientSecret register one confidential web client
	// (client_secret_basic, authorization code flow, PKCE allowed).
	ClientID     string
	ClientSecret string
	// RedirectURIs are the client's registered redirect URIs (exact).
	RedirectURIs []string
	// PostLogoutRedirectURIs are where end_session may send the browser
	// back to (exact); any other post_logout_redirect_uri is refused.
	PostLogoutRedirectURIs []string
	Users                  []User
	// Logger receives the OP's request log; nil keeps slog's default.
	// (exampleop makes a non-nil logger the process's default.)
	Logger *slog.Logger
}

// Provider is a running OP.
type Provider struct {
	// Issuer is the provider's issuer URL, as its discovery document
	// names it.
	Issuer string
	srv    *http.Server
	store  *store
	// logins counts the login pages shown, silent counts sign-ins the
	// provider's session answered without one.
	logins, silent atomic.Int64
}

// The paths of the example OP's login page (exampleop mounts it at
// /login/), and the cookie of this package's provider session.
const (
	loginPath = "/login/username"
	ssoCookie = "oidctest_sso"
)

// Start starts a provider; Close stops it.
func Start(o Options) (*Provider, error) {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("oidctest: %q is not a loopback address", o.Addr)
	}
	if o.ClientID == "" || o.ClientSecret == "" || len(o.RedirectURIs) == 0 || len(o.Users) == 0 {
		return nil, errors.New("oidctest: a client id, a client secret, a redirect URI and a user are required")
	}
	users := userStore{}
	for _, u := range o.Users {
		users[u.Subject] = &storage.User{ID: u.Subject, Username: u.Username, Password: u.Password,
			FirstName: u.GivenName, LastName: u.FamilyName, Email: u.Email, EmailVerified: true,
			PreferredLanguage: language.English}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, err
	}
	issuer := "http://" + ln.Addr().String()
	s := &store{
		Storage: storage.NewStorageWithClients(users, map[string]*storage.Client{
			o.ClientID: storage.WebClient(o.ClientID, o.ClientSecret, o.RedirectURIs...),
		}),
		postLogout: map[string][]string{o.ClientID: o.PostLogoutRedirectURIs},
		users:      users,
		sessions:   map[string]string{},
	}
	p := &Provider{Issuer: issuer, store: s}
	router := exampleop.SetupServer(issuer, s, o.Logger, false)
	p.srv = &http.Server{Handler: p.session(router), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the provider.
func (p *Provider) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

// LoginPages is how many times the provider showed its login page (a GET
// of it that its session did not answer).
func (p *Provider) LoginPages() int64 { return p.logins.Load() }

// SilentSignIns is how many authorization requests the provider's
// session answered without asking for the password.
func (p *Provider) SilentSignIns() int64 { return p.silent.Load() }

// session adds the provider-side browser session to the example OP:
//   - a login that succeeds (the login page's POST answers with a
//     redirect back into the OP) gets a session cookie for that user;
//   - a login page requested with a live session cookie is answered by
//     the OP's own login handler as if the user had typed their password
//     again, so the browser goes straight back to the client;
//   - the OP's TerminateSession (end_session with a valid id_token_hint)
//     ends the user's sessions (store.TerminateSession).
func (p *Provider) session(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != loginPath {
			next.ServeHTTP(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet:
			if u := p.store.sessionUser(r); u != nil {
				p.silent.Add(1)
				form := url.Values{"id": {r.URL.Query().Get("authRequestID")}, "username": {u.Username}, "password": {u.Password}}
				r = r.Clone(r.Context())
				r.Method = http.MethodPost
				r.Body = io.NopCloser(strings.NewReader(form.Encode()))
				r.ContentLength = int64(len(form.Encode()))
				r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				r.Form, r.PostForm = nil, nil
				next.ServeHTTP(w, r)
				return
			}
			p.logins.Add(1)
		case http.MethodPost:
			// Parsed here so the username is known after the OP's
			// handler (which sees the parsed form) has checked it.
			if err := r.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w = &afterLogin{ResponseWriter: w, loggedIn: func(h http.Header) {
				if c := p.store.startSession(r.PostForm.Get("username")); c != "" {
					h.Add("Set-Cookie", (&http.Cookie{Name: ssoCookie, Value: c, Path: "/", HttpOnly: true,
						SameSite: http.SameSiteLaxMode}).String())
				}
			}}
		}
		next.ServeHTTP(w, r)
	})
}

// afterLogin calls loggedIn before the login page's answer is written
// when that answer is the redirect of a successful login (a wrong
// password renders the page again, 200).
type afterLogin struct {
	http.ResponseWriter
	loggedIn func(http.Header)
	done     bool
}

func (a *afterLogin) WriteHeader(code int) {
	if !a.done && code == http.StatusFound {
		a.loggedIn(a.Header())
	}
	a.done = true
	a.ResponseWriter.WriteHeader(code)
}

func (a *afterLogin) Write(b []byte) (int, error) {
	if !a.done {
		a.WriteHeader(http.StatusOK)
	}
	return a.ResponseWriter.Write(b)
}

// store is the example OP's in-memory storage with the client's
// post-logout redirect URIs registered (the example's clients have none)
// and the provider sessions.
type store struct {
	*storage.Storage
	postLogout map[string][]string
	users      userStore

	mu       sync.Mutex
	sessions map[string]string // cookie value → user id
}

// GetClientByClientID answers the example's client with its post-logout
// redirect URIs.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return registered{Client: c, postLogout: s.postLogout[id]}, nil
}

// TerminateSession is called by the OP's end_session endpoint for the
// user of a verified id_token_hint: the example revokes the user's
// tokens; the user's provider sessions end too.
func (s *store) TerminateSession(ctx context.Context, userID, clientID string) error {
	err := s.Storage.TerminateSession(ctx, userID, clientID)
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, u := range s.sessions {
		if u == userID {
			delete(s.sessions, c)
		}
	}
	return err
}

func (s *store) startSession(username string) string {
	u := s.users.GetUserByUsername(username)
	if u == nil {
		return ""
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	c := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[c] = u.ID
	return c
}

func (s *store) sessionUser(r *http.Request) *storage.User {
	c, err := r.Cookie(ssoCookie)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	id, ok := s.sessions[c.Value]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return s.users.GetUserByID(id)
}

// registered is a client with its post-logout redirect URIs.
type registered struct {
	op.Client
	postLogout []string
}

func (c registered) PostLogoutRedirectURIs() []string { return c.postLogout }

// userStore is storage.UserStore over a fixed set of users.
type userStore map[string]*storage.User

func (u userStore) GetUserByID(id string) *storage.User { return u[id] }

func (u userStore) GetUserByUsername(name string) *storage.User {
	for _, v := range u {
		if v.Username == name {
			return v
		}
	}
	return nil
}

func (userStore) ExampleClientID() string { return storage.ServiceUserID }
