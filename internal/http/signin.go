package http

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/response"
)

// Sign-in through an OIDC provider (docs/sign-in.md): the console's humans
// sign in with their organisation's identity, and every change they make
// names them. The flow is the authorization code flow with PKCE, a state
// (bound to the browser by a short-lived cookie, and single-use through
// the database) and a nonce (checked in the ID token). The sign-in is a
// record in the database (auth.SignIns), so every replica knows it; the
// browser holds only an opaque random id in an HttpOnly, SameSite=Lax
// cookie, Secure when the redirect URL is https. Requests that change
// state with the cookie must also carry the sign-in's CSRF token (from
// GET /v1/me) in X-CSRF-Token, on top of originGuard. Bearer tokens are
// untouched: a request with an Authorization header is a token's.

// Cookie names.
const (
	// SignInCookie holds the sign-in's random id.
	SignInCookie = "planserver_session"
	// loginCookie binds a login's state to the browser that started it,
	// so a callback URL made for someone else's browser fails (login CSRF).
	loginCookie = "planserver_login"
	// CSRFHeader carries the sign-in's CSRF token.
	CSRFHeader = "X-CSRF-Token"
)

// The sign-in routes.
const (
	CallbackPath = "/auth/callback"
	loginPath    = "/auth/login"
)

// OIDCSettings configure sign-in (the --oidc-* flags).
type OIDCSettings struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is this server's /auth/callback as the browser reaches
	// it, registered at the provider.
	RedirectURL string
	Scopes      []string
	Roles       []auth.RoleRule
	// Idle and MaxAge are the sign-in's idle and absolute timeouts.
	Idle   time.Duration
	MaxAge time.Duration
	// Attempts bound the logins in progress (the auth defaults when
	// zero).
	Attempts auth.AttemptLimits
	// HTTPClient talks to the provider; http.DefaultClient when nil.
	HTTPClient *http.Client
}

// Default sign-in timeouts: a working day without a request, a week in
// all.
const (
	DefaultSignInIdle   = 8 * time.Hour
	DefaultSignInMaxAge = 7 * 24 * time.Hour
)

// OIDC is a provider discovered at startup.
type OIDC struct {
	settings OIDCSettings
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
	// provider answers UserInfo requests; userInfo says it has the
	// endpoint.
	provider *oidc.Provider
	userInfo bool
	// endSession is the provider's end_session_endpoint (RP-initiated
	// logout), "" when it offers none.
	endSession string
	// secure sets the cookies' Secure attribute: the browser reaches
	// this server over https (the redirect URL's scheme).
	secure bool
	// origin is the redirect URL's scheme and host, where the browser
	// returns after the provider's logout.
	origin string
}

// NewOIDC checks the settings and discovers the provider, so that a
// misconfigured sign-in stops the server at startup with a clear error,
// not the first person who tries. Errors name the flag to fix.
func NewOIDC(ctx context.Context, s OIDCSettings) (*OIDC, error) {
	switch {
	case s.Issuer == "":
		return nil, errors.New("--oidc-issuer is required for sign-in (the provider's issuer URL, e.g. https://dex.example.com)")
	case s.ClientID == "":
		return nil, errors.New("--oidc-client-id is required for sign-in (the client registered at the provider)")
	case s.ClientSecret == "":
		return nil, errors.New("the OIDC client secret is missing: put it in a file named by --oidc-client-secret-file " +
			"(PLANSERVER_OIDC_CLIENT_SECRET_FILE), or in PLANSERVER_OIDC_CLIENT_SECRET")
	case len(s.Roles) == 0:
		return nil, errors.New("--oidc-roles is required for sign-in: nobody without a role mapping gets in, " +
			"e.g. --oidc-roles admin=email:you@example.com,reviewer=domain:example.com")
	}
	redirect, err := url.Parse(s.RedirectURL)
	if err != nil || redirect.Host == "" || (redirect.Scheme != "http" && redirect.Scheme != "https") ||
		redirect.User != nil || redirect.RawQuery != "" || redirect.Fragment != "" {
		return nil, fmt.Errorf("--oidc-redirect-url %q: want this server's callback as the browser reaches it, "+
			"e.g. https://planserver.example.com%s", s.RedirectURL, CallbackPath)
	}
	if redirect.Path != CallbackPath {
		return nil, fmt.Errorf("--oidc-redirect-url %q: its path must be %s (the route that finishes the login), not %q",
			s.RedirectURL, CallbackPath, redirect.Path)
	}
	if redirect.Scheme == "http" && !hostAllowed(redirect.Host, nil) {
		return nil, fmt.Errorf("--oidc-redirect-url %q is plain http on a host that is not loopback: the sign-in cookie "+
			"would cross the network in clear. Serve planserver behind TLS and give the https URL", s.RedirectURL)
	}
	if s.Idle <= 0 {
		s.Idle = DefaultSignInIdle
	}
	if s.MaxAge <= 0 {
		s.MaxAge = DefaultSignInMaxAge
	}
	if len(s.Scopes) == 0 {
		s.Scopes = []string{oidc.ScopeOpenID, "email", "profile"}
	}
	if !contains(s.Scopes, oidc.ScopeOpenID) {
		s.Scopes = append([]string{oidc.ScopeOpenID}, s.Scopes...)
	}
	client := s.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, client), 15*time.Second)
	defer cancel()
	provider, err := oidc.NewProvider(dctx, s.Issuer)
	if err != nil {
		return nil, fmt.Errorf("--oidc-issuer %s: discovery failed (%w); check that the issuer URL is exactly the provider's "+
			"(its /.well-known/openid-configuration must answer) and that this host can reach it", s.Issuer, err)
	}
	var meta struct {
		EndSession string   `json:"end_session_endpoint"`
		UserInfo   string   `json:"userinfo_endpoint"`
		Challenges []string `json:"code_challenge_methods_supported"`
	}
	if err := provider.Claims(&meta); err != nil {
		return nil, fmt.Errorf("--oidc-issuer %s: unreadable discovery document: %w", s.Issuer, err)
	}
	s.HTTPClient = client
	return &OIDC{
		settings: s,
		oauth: oauth2.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret, Endpoint: provider.Endpoint(),
			RedirectURL: s.RedirectURL, Scopes: s.Scopes},
		verifier:   provider.Verifier(&oidc.Config{ClientID: s.ClientID}),
		provider:   provider,
		userInfo:   meta.UserInfo != "",
		endSession: meta.EndSession,
		secure:     redirect.Scheme == "https",
		origin:     redirect.Scheme + "://" + redirect.Host,
	}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// signInLimited takes one request of the client's rate limit for the
// sign-in routes, which anyone may call and each of which may write (a
// login records an attempt; a callback or a logout with a made-up cookie
// still looks for one to delete); when none is left it answers 429
// problem+json with Retry-After and reports true. The bucket is the one
// failed authentications of /v1 draw from: what this address does before
// anyone knows who it is.
func (s *Server) signInLimited(w http.ResponseWriter, r *http.Request) bool {
	return s.limited(w, r, "ip:"+clientKey(r))
}

// signInRoutes are /auth/login, /auth/callback and /auth/logout. Without
// sign-in configured they answer 404 saying so.
func (s *Server) signInRoutes(r chiRouter) {
	r.Get(loginPath, s.login)
	r.Get(CallbackPath, s.callback)
	r.Post("/auth/logout", s.logout)
}

// chiRouter is the part of chi.Router signInRoutes uses.
type chiRouter interface {
	Get(pattern string, h http.HandlerFunc)
	Post(pattern string, h http.HandlerFunc)
}

// errNoSignIn answers the sign-in routes of a server without OIDC.
var errNoSignIn = apierr.New(apierr.NotFound,
	"sign-in is not configured on this server: it takes bearer tokens only (see --oidc-issuer to turn sign-in on)")

// ReturnPath checks a return_to value: a path on this server, never an
// absolute URL, a scheme-relative //host, or anything a browser could
// read as another origin (backslashes, control characters). "" is /ui/.
func ReturnPath(v string) (string, error) {
	if v == "" {
		return uiPrefix, nil
	}
	bad := func() error {
		return apierr.Invalid("return_to", "must be a path on this server such as /ui/sessions/ID/review, not %q", v)
	}
	if !strings.HasPrefix(v, "/") || strings.HasPrefix(v, "//") || strings.ContainsAny(v, "\\") || len(v) > 2048 {
		return "", bad()
	}
	for _, c := range v {
		if c < 0x21 || c == 0x7f {
			return "", bad()
		}
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") {
		return "", bad()
	}
	return v, nil
}

// cookie returns a cookie of this server's sign-in: HttpOnly, SameSite
// Lax (sent on the provider's redirect back, a top-level GET, but not on
// another site's POST), Secure behind https.
func (o *OIDC) cookie(name, value, path string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge, HttpOnly: true,
		Secure: o.secure, SameSite: http.SameSiteLaxMode}
}

// login starts a login: it records the attempt (state, nonce, PKCE
// verifier, where to return) in the database, binds the state to this
// browser, and sends the browser to the provider.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil {
		response.Problem(w, r, errNoSignIn)
		return
	}
	if s.signInLimited(w, r) {
		return
	}
	returnTo, err := ReturnPath(r.URL.Query().Get("return_to"))
	if err != nil {
		s.signInPage(w, r, http.StatusBadRequest, signInText{Title: "This sign-in link is not valid",
			Words: "It asks to return to a place outside this server, which planserver never does. Open the console and sign in from there."})
		return
	}
	state, nonce, verifier := auth.NewNonce(), auth.NewNonce(), oauth2.GenerateVerifier()
	err = s.signIns.Begin(r.Context(), state, auth.Attempt{Nonce: nonce, Verifier: verifier, ReturnTo: returnTo, Client: clientKey(r)})
	if apierr.CodeOf(err) == apierr.Unavailable {
		response.Problem(w, r, err) // too many logins in progress: 503 with Retry-After
		return
	}
	if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	http.SetCookie(w, s.oidc.cookie(loginCookie, state, "/auth/", 600))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.oidc.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// idClaims are the ID token's claims the sign-in reads.
type idClaims struct {
	Subject           string   `json:"sub"`
	Email             string   `json:"email"`
	EmailVerified     *bool    `json:"email_verified"`
	Name              string   `json:"name"`
	PreferredUsername string   `json:"preferred_username"`
	Groups            []string `json:"groups"`
}

// errLogin is a login that failed for a reason the person should read:
// planserver's own title and words, and, when the provider gave a reason,
// the provider's text, shown only as a quotation under them.
type errLogin struct {
	status       int
	title, words string
	quoted       string
}

func (e *errLogin) Error() string { return e.title + ": " + e.words }

func loginError(status int, title, words string) error {
	return &errLogin{status: status, title: title, words: words}
}

// providerWords are planserver's words for the error codes of an
// authorization response (RFC 6749 section 4.1.2.1, OIDC Core 3.1.2.6).
var providerWords = map[string]string{
	"access_denied":              "The sign-in was cancelled, or the identity provider refused it.",
	"login_required":             "The identity provider needs you to sign in there first.",
	"interaction_required":       "The identity provider needs you to sign in there first.",
	"consent_required":           "The identity provider needs your consent for planserver first.",
	"account_selection_required": "The identity provider needs you to choose an account first.",
	"server_error":               "The identity provider had a problem. Try again in a moment.",
	"temporarily_unavailable":    "The identity provider is busy or down for a moment. Try again shortly.",
}

// maxQuoted bounds the provider's text shown on a sign-in page.
const maxQuoted = 300

// providerRefused is the page of an error answer from the provider, for
// a login this browser did start: planserver's words, and the provider's
// code and description as a bounded quotation of printable characters
// (RFC 6749 allows no others in them).
func providerRefused(code, description string) error {
	words, ok := providerWords[code]
	if !ok {
		words = "The identity provider ended the sign-in with an error."
	}
	words += " Sign in again; if it keeps failing, tell whoever runs planserver what the provider said."
	quoted := printable(code)
	if d := printable(description); d != "" {
		quoted += ": " + d
	}
	return &errLogin{status: http.StatusUnauthorized, title: "The identity provider did not sign you in", words: words, quoted: quoted}
}

// printable keeps the first maxQuoted printable ASCII characters of s,
// the only ones an OAuth error code or description may hold.
func printable(s string) string {
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= maxQuoted {
			b.WriteString("…")
			break
		}
		if c >= 0x20 && c < 0x7f {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// callback finishes a login: the state must be this browser's and unused,
// the code must be redeemable with the attempt's PKCE verifier, the ID
// token must be the provider's, for this client, unexpired, with the
// attempt's nonce, and the person must match a role rule. Then the
// sign-in is recorded and the browser returns where it was going.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil {
		response.Problem(w, r, errNoSignIn)
		return
	}
	if s.signInLimited(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	// Whatever happens, this login's state is spent.
	http.SetCookie(w, s.oidc.cookie(loginCookie, "", "/auth/", -1))
	returnTo, secret, err := s.finishLogin(r)
	if err != nil {
		s.signInFailed(w, r, err)
		return
	}
	http.SetCookie(w, s.oidc.cookie(SignInCookie, secret, "/", int(s.oidc.settings.MaxAge/time.Second)))
	http.Redirect(w, r, returnTo, http.StatusSeeOther)
}

func (s *Server) finishLogin(r *http.Request) (returnTo, secret string, err error) {
	q := r.URL.Query()
	// The state comes first, for an error answer too: until the callback
	// is known to end a login this browser started, nothing in its URL is
	// the provider's, and nothing of it is shown (anyone can send a link
	// to /auth/callback?error=…&error_description=ANY TEXT).
	state := q.Get("state")
	c, cerr := r.Cookie(loginCookie)
	if state == "" || cerr != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		return "", "", loginError(http.StatusBadRequest, "This sign-in did not start in this browser",
			"Its state does not match the one this browser was given (or the sign-in took too long). Sign in again.")
	}
	attempt, err := s.signIns.Take(r.Context(), state)
	if err != nil {
		return "", "", loginError(http.StatusBadRequest, "This sign-in was already used or has expired",
			"Each sign-in link works once. Sign in again.")
	}
	if e := q.Get("error"); e != "" {
		return "", "", providerRefused(e, q.Get("error_description"))
	}
	ctx := oidc.ClientContext(r.Context(), s.oidc.settings.HTTPClient)
	tok, err := s.oidc.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(attempt.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return "", "", loginError(http.StatusUnauthorized, "The identity provider refused this sign-in",
				"It would not redeem the code (it may have been used already, or have expired): "+re.ErrorCode+". Sign in again.")
		}
		return "", "", loginError(http.StatusBadGateway, "The identity provider cannot be reached",
			"planserver could not reach "+s.oidc.settings.Issuer+" to finish the sign-in. Try again in a moment; "+
				"if it persists, tell whoever runs planserver.")
	}
	raw, _ := tok.Extra("id_token").(string)
	p, claims, err := s.oidc.verify(ctx, raw, attempt.Nonce)
	if err != nil {
		return "", "", err
	}
	if err := s.oidc.completeFromUserInfo(ctx, tok, p, claims); err != nil {
		return "", "", err
	}
	// An email the provider has not verified is anyone's to type: it
	// matches no rule, and it is not this person's email here either, so
	// it never becomes the name on their decisions (their subject does).
	unverified := ""
	if claims.EmailVerified != nil && !*claims.EmailVerified {
		unverified, p.Email = p.Email, ""
	}
	rule, ok := auth.MatchRole(s.oidc.settings.Roles, auth.Claims{Email: p.Email, EmailVerified: true, Groups: claims.Groups})
	if !ok {
		who := p.DisplayName()
		if unverified != "" {
			who += " (the provider has not verified your email " + unverified + ", so no email or domain rule counts it)"
		}
		return "", "", loginError(http.StatusForbidden, "You have no access to this planserver",
			"You signed in as "+who+", but no role is mapped to you. Ask whoever runs planserver to add you to --oidc-roles.")
	}
	secret, err = s.signIns.Create(r.Context(), auth.SignInInput{Person: *p, Groups: claims.Groups, Role: rule.Role,
		SessionID: rule.SessionID, IDToken: raw, MaxAge: s.oidc.settings.MaxAge})
	if err != nil {
		return "", "", err
	}
	return attempt.ReturnTo, secret, nil
}

// verify checks an ID token: signed by the provider's keys, issued by the
// configured issuer, for this client, unexpired (go-oidc), and carrying
// the nonce of this login (so a token minted for another login cannot be
// replayed into this one).
func (o *OIDC) verify(ctx context.Context, raw, nonce string) (*api.Person, *idClaims, error) {
	if raw == "" {
		return nil, nil, loginError(http.StatusBadGateway, "The identity provider sent no ID token",
			"Its answer had no id_token; is the openid scope allowed for this client?")
	}
	idt, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return nil, nil, loginError(http.StatusUnauthorized, "The identity provider's answer was not accepted",
			"Its ID token did not pass the checks (issuer, audience, signature, expiry): "+err.Error())
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return nil, nil, loginError(http.StatusUnauthorized, "The identity provider's answer was not for this sign-in",
			"Its ID token carries another sign-in's nonce. Sign in again.")
	}
	var c idClaims
	if err := idt.Claims(&c); err != nil {
		return nil, nil, loginError(http.StatusBadGateway, "The identity provider's answer is unreadable", err.Error())
	}
	name := c.Name
	if name == "" {
		name = c.PreferredUsername
	}
	return &api.Person{Subject: idt.Subject, Email: c.Email, Name: name}, &c, nil
}

// completeFromUserInfo fills in what the ID token left out from the
// provider's UserInfo endpoint. OIDC Core (5.4) lets a provider return the
// email and profile claims only there when it also issues an access token,
// and some do (ZITADEL, by default); groups often live only there too.
// It asks only when something the sign-in needs is missing: the email (the
// person's name in history and events, and what email and domain rules
// match) or, when a rule matches on groups, the groups. The answer counts
// only for the ID token's subject (OIDC Core 5.3.2); the ID token's own
// claims win over it.
func (o *OIDC) completeFromUserInfo(ctx context.Context, tok *oauth2.Token, p *api.Person, c *idClaims) error {
	needGroups := c.Groups == nil && slices.ContainsFunc(o.settings.Roles, func(r auth.RoleRule) bool { return r.Kind == auth.MatchGroup })
	if !o.userInfo || (c.Email != "" && !needGroups) {
		return nil
	}
	info, err := o.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		return loginError(http.StatusBadGateway, "The identity provider did not say who you are",
			"Its ID token lacks your email or groups, and its UserInfo endpoint did not answer: "+err.Error()+". Try again in a moment; "+
				"if it persists, tell whoever runs planserver.")
	}
	if info.Subject != p.Subject {
		return loginError(http.StatusUnauthorized, "The identity provider's answer was not accepted",
			"Its UserInfo answer is about another subject than its ID token. Sign in again.")
	}
	// email_verified's value comes as go-oidc reads it (some providers
	// send a string); absent, it counts as verified, as in the ID token.
	var u struct {
		Name              string          `json:"name"`
		PreferredUsername string          `json:"preferred_username"`
		Groups            []string        `json:"groups"`
		EmailVerified     json.RawMessage `json:"email_verified"`
	}
	if err := info.Claims(&u); err != nil {
		return loginError(http.StatusBadGateway, "The identity provider's answer is unreadable", err.Error())
	}
	if c.Email == "" {
		c.Email, c.EmailVerified = info.Email, nil
		if u.EmailVerified != nil {
			verified := info.EmailVerified
			c.EmailVerified = &verified
		}
		p.Email = info.Email
	}
	if c.Groups == nil {
		c.Groups = u.Groups
	}
	if p.Name == "" {
		p.Name = u.Name
		if p.Name == "" {
			p.Name = u.PreferredUsername
		}
	}
	return nil
}

// logout ends the caller's sign-in on every replica (the record is gone)
// and, where the provider offers RP-initiated logout, says where to send
// the browser to end the provider's session too. The CSRF token is
// required like on any state-changing request made with the cookie; a
// cookie that no longer names a sign-in is simply cleared.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil {
		response.Problem(w, r, errNoSignIn)
		return
	}
	if s.signInLimited(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	out := api.Logout{Redirect: uiPrefix}
	if c, err := r.Cookie(SignInCookie); err == nil {
		if _, err := s.signIns.Authenticate(r.Context(), c.Value); err == nil {
			if err := checkCSRF(r, c.Value); err != nil {
				response.Problem(w, r, err)
				return
			}
		}
		idToken, err := s.signIns.End(r.Context(), c.Value)
		if err != nil {
			response.Problem(w, r, err)
			return
		}
		if s.oidc.endSession != "" && idToken != "" {
			u, perr := url.Parse(s.oidc.endSession)
			if perr == nil {
				v := u.Query()
				v.Set("id_token_hint", idToken)
				v.Set("post_logout_redirect_uri", s.oidc.origin+uiPrefix)
				v.Set("client_id", s.oidc.settings.ClientID)
				u.RawQuery = v.Encode()
				out.Redirect = u.String()
			}
		}
	}
	http.SetCookie(w, s.oidc.cookie(SignInCookie, "", "/", -1))
	response.JSON(w, http.StatusOK, out)
}

// checkCSRF requires a state-changing request made with the sign-in
// cookie secret to carry the sign-in's CSRF token.
func checkCSRF(r *http.Request, secret string) error {
	got := r.Header.Get(CSRFHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(auth.CSRFToken(secret))) != 1 {
		return apierr.New(apierr.PermissionDenied,
			"a request that changes anything with the sign-in cookie must send the CSRF token of GET /v1/me (csrf_token) in %s", CSRFHeader)
	}
	return nil
}

// signInFailed answers a failed login with a page that says what went
// wrong and offers to start again: never a blank screen, never JSON for a
// person in a browser.
func (s *Server) signInFailed(w http.ResponseWriter, r *http.Request, err error) {
	var le *errLogin
	if errors.As(err, &le) {
		s.signInPage(w, r, le.status, signInText{Title: le.title, Words: le.words, Quoted: le.quoted, Retry: loginPath})
		return
	}
	e, status, _ := response.ProblemOf(r, err)
	s.signInPage(w, r, status, signInText{Title: "Sign-in failed", Words: e.Detail, Retry: loginPath})
}

var signInTemplate = template.Must(template.New("signin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · planserver</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/ui/assets/app.css"></head>
<body><main class="signin-page"><h1>{{.Title}}</h1><p id="signin-reason">{{.Words}}</p>
{{if .Quoted}}<figure class="provider-said"><figcaption>The identity provider said:</figcaption>
<blockquote id="provider-said">{{.Quoted}}</blockquote></figure>{{end}}
{{if .Retry}}<p><a href="{{.Retry}}">Sign in again</a> · <a href="/ui/">Open the console</a></p>{{end}}
</main></body></html>
`))

// signInText is what a sign-in page says: planserver's title and words,
// the provider's text as a quotation (never anything else of it), and the
// link to start again.
type signInText struct {
	Title, Words, Quoted, Retry string
}

// signInPage writes the sign-in's HTML page, under the console's CSP.
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request, status int, text signInText) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = signInTemplate.Execute(w, text)
	if status >= 500 {
		s.log.Warn("sign-in failed", "status", status, "reason", text.Words)
	}
}
