// Package oidctest runs a real OpenID Provider that nobody here wrote,
// zitadel's (github.com/zitadel/oidc/v3: its op package, and the example
// OP's storage and username/password login page), on a loopback address,
// for the tests of sign-in: the Go tests of internal/http start it
// in-process, and test/oidcprovider runs it as a process of its own for
// the browser test (e2e/signin.test.mjs).
//
// What is ours is configuration and what the tests of sign-in need that
// the example OP lacks:
//   - a browser session at the provider (single sign-on). Its login page
//     asks for the password on every authorization request; a real
//     provider remembers the person and signs them in again without
//     asking, until RP-initiated logout (its end_session_endpoint) ends
//     that session. The tests of logout need exactly that difference, so
//     this package keeps a cookie of its own after a successful login and
//     ends it when the OP, having verified the id_token_hint, terminates
//     the user's session;
//   - the people providers send that a relying party must not trust
//     blindly: an unverified email, groups, claims only in UserInfo, a
//     UserInfo answer about another subject (User), added while the
//     provider runs (QueueUser);
//   - signing in a chosen person without the login page (QueueUser), so a
//     test of the relying party drives the flow with plain GETs;
//   - ID tokens that no flow would issue (IDToken), to put each of the
//     relying party's checks to a token that breaks it.
package oidctest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/crypto"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is a person who can sign in at the provider's login page (or
// through QueueUser).
type User struct {
	Subject string
	// Username and Password are what the login page asks for, and
	// Username is the preferred_username claim. A user signed in through
	// QueueUser needs neither: the login name is then the Subject (with
	// no preferred_username claim) and Password a random one.
	Username string
	Password string
	Email    string
	// GivenName and FamilyName make the name claim ("Given Family").
	GivenName  string
	FamilyName string
	// Name, when set, is the name claim instead: a provider sends
	// whatever display name the person chose, even one that looks like
	// someone else's email.
	Name string
	// Groups is the groups claim, sent with the email and profile
	// claims (in UserInfo, and in the ID token when
	// Options.ClaimsInIDToken).
	Groups []string
	// EmailUnverified sends email_verified false: the provider does not
	// vouch that the email is the person's (many let anyone type one in),
	// so it must not name them.
	EmailUnverified bool
	// UserInfoOnly names claims ("email", "groups") that the ID token
	// leaves out even when Options.ClaimsInIDToken, so the relying party
	// must ask UserInfo for them, as OIDC Core 5.4 allows.
	UserInfoOnly []string
	// UserInfoSubject, when set, is the sub of the UserInfo answers about
	// this user: an answer about someone other than the ID token's
	// subject, which the relying party must refuse (OIDC Core 5.3.2).
	UserInfoSubject string
}

// record is the user as the example OP's storage holds it.
func (u User) record() *storage.User {
	login := u.Username
	if login == "" {
		login = u.Subject
	}
	return &storage.User{ID: u.Subject, Username: login, Password: u.Password,
		FirstName: u.GivenName, LastName: u.FamilyName, Email: u.Email, EmailVerified: !u.EmailUnverified,
		PreferredLanguage: language.English}
}

// Options configure a provider.
type Options struct {
	// Addr is the loopback host:port to listen on; "127.0.0.1:0" when "".
	Addr string
	// ClientID and ClientSecret register one confidential web client
	// (client_secret_basic, authorization code flow, PKCE allowed);
	// "oidctest" and a random secret when "" (Provider has both).
	ClientID     string
	ClientSecret string
	// RedirectURIs are the client's registered redirect URIs (exact);
	// AddRedirectURI registers more once the client's address is known.
	RedirectURIs []string
	// PostLogoutRedirectURIs are where end_session may send the browser
	// back to (exact); any other post_logout_redirect_uri is refused.
	PostLogoutRedirectURIs []string
	// Users can sign in at the login page; QueueUser adds more.
	Users []User
	// ClaimsInIDToken puts the email, profile and groups claims in the ID
	// token as well as in UserInfo, as many providers do. Without it the
	// ID token carries only the subject, the example OP's default for a
	// client that also gets an access token (OIDC Core 5.4, ZITADEL's
	// default too), and the relying party must ask UserInfo.
	ClaimsInIDToken bool
	// NoEndSession leaves end_session_endpoint out of the discovery
	// document, as providers without RP-initiated logout do, so the
	// relying party's logout is its own alone.
	NoEndSession bool
	// Logger receives the OP's request log; nil keeps slog's default.
	// (exampleop makes a non-nil logger the process's default.)
	Logger *slog.Logger
}

// Provider is a running OP.
type Provider struct {
	// Issuer is the provider's issuer URL, as its discovery document
	// names it.
	Issuer string
	// ClientID and ClientSecret are the registered client's.
	ClientID, ClientSecret string
	srv                    *http.Server
	store                  *store
	noEndSession           bool
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
	if o.ClientID == "" {
		o.ClientID = "oidctest"
	}
	if o.ClientSecret == "" {
		o.ClientSecret = randomString()
	}
	users := &userStore{byID: map[string]User{}}
	for _, u := range o.Users {
		users.add(u)
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
		clientID:        o.ClientID,
		redirects:       slices.Clone(o.RedirectURIs),
		postLogout:      map[string][]string{o.ClientID: o.PostLogoutRedirectURIs},
		claimsInIDToken: o.ClaimsInIDToken,
		users:           users,
		sessions:        map[string]string{},
	}
	p := &Provider{Issuer: issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret, store: s, noEndSession: o.NoEndSession}
	router := exampleop.SetupServer(issuer, s, o.Logger, false)
	p.srv = &http.Server{Handler: p.discovery(p.session(router)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the provider.
func (p *Provider) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

// AuthorizationEndpoint is the provider's authorization endpoint, where
// a relying party sends the browser to sign in, as its discovery
// document names it (exampleop chooses the path).
func (p *Provider) AuthorizationEndpoint() string {
	rec := httptest.NewRecorder()
	p.srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.Issuer+oidc.DiscoveryEndpoint, nil))
	var doc struct {
		Authorization string `json:"authorization_endpoint"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &doc)
	return doc.Authorization
}

// AddRedirectURI registers another redirect URI of the client: a test
// usually starts the provider before the server it signs in to, whose
// address, and so callback, is known only then.
func (p *Provider) AddRedirectURI(uri string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.redirects = append(p.store.redirects, uri)
}

// QueueUser signs u in at the next authorization request without its
// login page, as if u had typed their password there, so a test drives a
// sign-in with plain GETs and picks who signs in each time. u is added to the provider's users, replacing any user with
// its subject. Queued users sign in first come, first served; with none
// queued the login page (or the provider's session) answers.
func (p *Provider) QueueUser(u User) {
	if u.Password == "" {
		u.Password = randomString()
	}
	p.store.users.add(u)
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.queue = append(p.store.queue, u.Subject)
}

// TokenClaims say what an ID token of IDToken claims.
type TokenClaims struct {
	Subject string
	// Audience is the client's id when "".
	Audience string
	Nonce    string
	Email    string
	// Expiry is an hour from now when zero.
	Expiry time.Time
}

// IDToken mints an ID token signed with the provider's key and naming
// the provider as its issuer, as its token endpoint would issue one. The
// checks a relying party makes on an ID token (issuer, audience, expiry,
// signature, nonce) can then each be put to a token that breaks just
// that one, which no flow through the provider would produce.
func (p *Provider) IDToken(c TokenClaims) (string, error) {
	if c.Audience == "" {
		c.Audience = p.ClientID
	}
	if c.Expiry.IsZero() {
		c.Expiry = time.Now().Add(time.Hour)
	}
	key, err := p.store.SigningKey(context.Background())
	if err != nil {
		return "", err
	}
	signer, err := op.SignerFromKey(key)
	if err != nil {
		return "", err
	}
	claims := oidc.NewIDTokenClaims(p.Issuer, c.Subject, []string{c.Audience}, c.Expiry, time.Now(), c.Nonce, "", nil, c.Audience, 0)
	claims.Email, claims.EmailVerified = c.Email, true
	return crypto.Sign(claims, signer)
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
			u := p.store.nextQueued()
			if u == nil {
				if u = p.store.sessionUser(r); u != nil {
					p.silent.Add(1)
				}
			}
			if u != nil {
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

// discovery leaves end_session_endpoint out of the discovery document
// when the provider is to offer no RP-initiated logout (NoEndSession).
func (p *Provider) discovery(next http.Handler) http.Handler {
	if !p.noEndSession {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != oidc.DiscoveryEndpoint {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var doc map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		delete(doc, "end_session_endpoint")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(doc)
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
// post-logout redirect URIs registered (the example's clients have none),
// redirect URIs added at run time, the claims of User, the provider
// sessions and the queue of QueueUser.
type store struct {
	*storage.Storage
	clientID        string
	postLogout      map[string][]string
	claimsInIDToken bool
	users           *userStore

	mu        sync.Mutex
	redirects []string
	sessions  map[string]string // cookie value → user id
	queue     []string          // user ids
}

// GetClientByClientID answers the example's client with its redirect
// and post-logout redirect URIs.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	r := registered{Client: c, postLogout: s.postLogout[id], claimsInIDToken: s.claimsInIDToken}
	if id == s.clientID {
		s.mu.Lock()
		r.redirects = slices.Clone(s.redirects)
		s.mu.Unlock()
	}
	return r, nil
}

// SetUserinfoFromRequest makes the ID token's claims: the example's,
// then User's.
func (s *store) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	s.userClaims(info, req.GetSubject(), true)
	return nil
}

// SetUserinfoFromToken makes the UserInfo answer: the example's, then
// User's.
func (s *store) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	s.userClaims(info, info.Subject, false)
	return nil
}

// userClaims puts what User adds to the example's claims into info, an
// ID token's (idToken) or a UserInfo answer's. The example has set the
// claims of the scopes the OP asked for (for an ID token, email and
// profile only with ClaimsInIDToken): preferred_username for profile,
// email for email.
func (s *store) userClaims(info *oidc.UserInfo, subject string, idToken bool) {
	u, ok := s.users.user(subject)
	if !ok {
		return
	}
	profile, email := info.PreferredUsername != "", info.Email != ""
	if profile {
		// The example's name is "Given Family", " " without either.
		info.Name = u.Name
		if u.Name == "" {
			info.Name = strings.TrimSpace(u.GivenName + " " + u.FamilyName)
		}
		if u.Username == "" {
			info.PreferredUsername = ""
		}
	}
	if email && u.EmailUnverified {
		// The struct's email_verified is omitted when false: say it.
		info.AppendClaims("email_verified", false)
	}
	if len(u.Groups) > 0 && (profile || email) && !(idToken && slices.Contains(u.UserInfoOnly, "groups")) {
		info.AppendClaims("groups", u.Groups)
	}
	if idToken && slices.Contains(u.UserInfoOnly, "email") {
		info.Email, info.EmailVerified = "", false
		delete(info.Claims, "email_verified")
	}
	if !idToken && u.UserInfoSubject != "" {
		info.Subject = u.UserInfoSubject
	}
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
	c := randomString()
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

// nextQueued takes the next user of QueueUser, nil when none waits.
func (s *store) nextQueued() *storage.User {
	s.mu.Lock()
	if len(s.queue) == 0 {
		s.mu.Unlock()
		return nil
	}
	id := s.queue[0]
	s.queue = s.queue[1:]
	s.mu.Unlock()
	return s.users.GetUserByID(id)
}

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// registered is a client with its redirect URIs (those of Options and
// AddRedirectURI, exact), its post-logout redirect URIs and whether its
// ID tokens carry the claims of UserInfo.
type registered struct {
	op.Client
	redirects, postLogout []string
	claimsInIDToken       bool
}

func (c registered) RedirectURIs() []string { return c.redirects }

func (c registered) PostLogoutRedirectURIs() []string { return c.postLogout }

func (c registered) IDTokenUserinfoClaimsAssertion() bool { return c.claimsInIDToken }

// userStore is storage.UserStore over the provider's users, who may be
// added while it runs.
type userStore struct {
	mu   sync.Mutex
	byID map[string]User
}

func (u *userStore) add(user User) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.byID[user.Subject] = user
}

func (u *userStore) user(id string) (User, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	user, ok := u.byID[id]
	return user, ok
}

func (u *userStore) GetUserByID(id string) *storage.User {
	if user, ok := u.user(id); ok {
		return user.record()
	}
	return nil
}

func (u *userStore) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, v := range u.byID {
		if r := v.record(); r.Username == name {
			return r
		}
	}
	return nil
}

func (*userStore) ExampleClientID() string { return storage.ServiceUserID }
