// Package signin owns sign-in through an OIDC provider (docs/sign-in.md):
// the console's humans sign in with their organisation's identity, and
// every change they make names them. The flow is the authorization code flow with PKCE, a state
// (bound to the browser by a short-lived cookie, and single-use through
// the database) and a nonce (checked in the ID token). The sign-in is a
// record in the database (auth.SignIns), so every replica knows it; the
// browser holds only an opaque random id in an HttpOnly, SameSite=Lax
// cookie, Secure when the redirect URL is https. Requests that change
// state with the cookie must also carry the sign-in's CSRF token (from
// GET /v1/me) in X-CSRF-Token, on top of originGuard. Bearer tokens are
// untouched: a request with an Authorization header is a token's.
//
// It holds the provider (OIDC, NewOIDC), the login flow (Flow: /auth/login,
// /auth/callback, /auth/logout), the admin's routes of sign-ins (Admin)
// and GET /v1/me (Me). The server authenticates the cookie itself
// (auth.SignIns) and checks the CSRF token with CheckCSRF.
package signin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/request"
)

// Cookie names.
const (
	// Cookie holds the sign-in's random id.
	Cookie = "planserver_session"
	// loginCookie binds a login's state to the browser that started it,
	// so a callback URL made for someone else's browser fails (login CSRF).
	loginCookie = "planserver_login"
	// CSRFHeader carries the sign-in's CSRF token.
	CSRFHeader = "X-CSRF-Token"
)

// The sign-in routes.
const (
	CallbackPath = "/auth/callback"
	LoginPath    = "/auth/login"
)

// Settings configure sign-in (the --oidc-* flags).
type Settings struct {
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
	DefaultIdle   = 8 * time.Hour
	DefaultMaxAge = 7 * 24 * time.Hour
)

// OIDC is a provider discovered at startup.
type OIDC struct {
	settings Settings
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
func NewOIDC(ctx context.Context, s Settings) (*OIDC, error) {
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
	if redirect.Scheme == "http" && !request.HostAllowed(redirect.Host, nil) {
		return nil, fmt.Errorf("--oidc-redirect-url %q is plain http on a host that is not loopback: the sign-in cookie "+
			"would cross the network in clear. Serve planserver behind TLS and give the https URL", s.RedirectURL)
	}
	if s.Idle <= 0 {
		s.Idle = DefaultIdle
	}
	if s.MaxAge <= 0 {
		s.MaxAge = DefaultMaxAge
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

// Settings are the provider's settings, defaults filled in.
func (o *OIDC) Settings() Settings { return o.settings }

// cookie returns a cookie of this server's sign-in: HttpOnly, SameSite
// Lax (sent on the provider's redirect back, a top-level GET, but not on
// another site's POST), Secure behind https.
func (o *OIDC) cookie(name, value, path string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: path, MaxAge: maxAge, HttpOnly: true,
		Secure: o.secure, SameSite: http.SameSiteLaxMode}
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

// CheckCSRF requires a state-changing request made with the sign-in
// cookie secret to carry the sign-in's CSRF token.
func CheckCSRF(r *http.Request, secret string) error {
	got := r.Header.Get(CSRFHeader)
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(auth.CSRFToken(secret))) != 1 {
		return apierr.New(apierr.PermissionDenied,
			"a request that changes anything with the sign-in cookie must send the CSRF token of GET /v1/me (csrf_token) in %s", CSRFHeader)
	}
	return nil
}
