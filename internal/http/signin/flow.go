package signin

import (
	"crypto/subtle"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/auth"
	"github.com/planserver/planserver/internal/http/response"
)

// Flow serves the login flow: /auth/login, /auth/callback and
// /auth/logout. Without a provider (OIDC nil) they answer 404 saying so.
type Flow struct {
	OIDC    *OIDC
	SignIns *auth.SignIns
	// Limited takes one request of the client's rate limit for the
	// sign-in routes, which anyone may call and each of which may write (a
	// login records an attempt; a callback or a logout with a made-up
	// cookie still looks for one to delete); when none is left it answers
	// 429 and reports true.
	Limited func(w http.ResponseWriter, r *http.Request) bool
	// ClientKey names the client a request comes from, for the bound on
	// the logins in progress of one client.
	ClientKey func(r *http.Request) string
	// Console is where the review console is served: where a login
	// returns by default, and a logout sends the browser.
	Console string
	// CSP is the console's Content-Security-Policy, which the sign-in's
	// pages are served under too.
	CSP string
	Log *slog.Logger
}

// Routes routes /auth/login, /auth/callback and /auth/logout on r.
func (f *Flow) Routes(r Router) {
	r.Get(LoginPath, f.login)
	r.Get(CallbackPath, f.callback)
	r.Post("/auth/logout", f.logout)
}

// Router is the part of chi.Router Routes uses.
type Router interface {
	Get(pattern string, h http.HandlerFunc)
	Post(pattern string, h http.HandlerFunc)
}

// errNoSignIn answers the sign-in routes of a server without OIDC.
var errNoSignIn = apierr.New(apierr.NotFound,
	"sign-in is not configured on this server: it takes bearer tokens only (see --oidc-issuer to turn sign-in on)")

// returnPath checks a return_to value: a path on this server, never an
// absolute URL, a scheme-relative //host, or anything a browser could
// read as another origin (backslashes, control characters). "" is the
// console.
func (f *Flow) returnPath(v string) (string, error) {
	if v == "" {
		return f.Console, nil
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

// login starts a login: it records the attempt (state, nonce, PKCE
// verifier, where to return) in the database, binds the state to this
// browser, and sends the browser to the provider.
func (f *Flow) login(w http.ResponseWriter, r *http.Request) {
	if f.OIDC == nil {
		response.Problem(w, r, errNoSignIn)
		return
	}
	if f.Limited(w, r) {
		return
	}
	returnTo, err := f.returnPath(r.URL.Query().Get("return_to"))
	if err != nil {
		f.signInPage(w, r, http.StatusBadRequest, signInText{Title: "This sign-in link is not valid",
			Words: "It asks to return to a place outside this server, which planserver never does. Open the console and sign in from there."})
		return
	}
	state, nonce, verifier := auth.NewNonce(), auth.NewNonce(), oauth2.GenerateVerifier()
	err = f.SignIns.Begin(r.Context(), state, auth.Attempt{Nonce: nonce, Verifier: verifier, ReturnTo: returnTo, Client: f.ClientKey(r)})
	if apierr.CodeOf(err) == apierr.Unavailable {
		response.Problem(w, r, err) // too many logins in progress: 503 with Retry-After
		return
	}
	if err != nil {
		f.signInFailed(w, r, err)
		return
	}
	http.SetCookie(w, f.OIDC.cookie(loginCookie, state, "/auth/", 600))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, f.OIDC.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
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
func (f *Flow) callback(w http.ResponseWriter, r *http.Request) {
	if f.OIDC == nil {
		response.Problem(w, r, errNoSignIn)
		return
	}
	if f.Limited(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	// Whatever happens, this login's state is spent.
	http.SetCookie(w, f.OIDC.cookie(loginCookie, "", "/auth/", -1))
	returnTo, secret, err := f.finishLogin(r)
	if err != nil {
		f.signInFailed(w, r, err)
		return
	}
	http.SetCookie(w, f.OIDC.cookie(Cookie, secret, "/", int(f.OIDC.settings.MaxAge/time.Second)))
	http.Redirect(w, r, returnTo, http.StatusSeeOther)
}

func (f *Flow) finishLogin(r *http.Request) (returnTo, secret string, err error) {
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
	attempt, err := f.SignIns.Take(r.Context(), state)
	if err != nil {
		return "", "", loginError(http.StatusBadRequest, "This sign-in was already used or has expired",
			"Each sign-in link works once. Sign in again.")
	}
	if e := q.Get("error"); e != "" {
		return "", "", providerRefused(e, q.Get("error_description"))
	}
	ctx := oidc.ClientContext(r.Context(), f.OIDC.settings.HTTPClient)
	tok, err := f.OIDC.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(attempt.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return "", "", loginError(http.StatusUnauthorized, "The identity provider refused this sign-in",
				"It would not redeem the code (it may have been used already, or have expired): "+re.ErrorCode+". Sign in again.")
		}
		return "", "", loginError(http.StatusBadGateway, "The identity provider cannot be reached",
			"planserver could not reach "+f.OIDC.settings.Issuer+" to finish the sign-in. Try again in a moment; "+
				"if it persists, tell whoever runs planserver.")
	}
	raw, _ := tok.Extra("id_token").(string)
	p, claims, err := f.OIDC.verify(ctx, raw, attempt.Nonce)
	if err != nil {
		return "", "", err
	}
	if err := f.OIDC.completeFromUserInfo(ctx, tok, p, claims); err != nil {
		return "", "", err
	}
	// An email the provider has not verified is anyone's to type: it
	// matches no rule, and it is not this person's email here either, so
	// it never becomes the name on their decisions (their subject does).
	unverified := ""
	if claims.EmailVerified != nil && !*claims.EmailVerified {
		unverified, p.Email = p.Email, ""
	}
	rule, ok := auth.MatchRole(f.OIDC.settings.Roles, auth.Claims{Email: p.Email, EmailVerified: true, Groups: claims.Groups})
	if !ok {
		who := p.DisplayName()
		if unverified != "" {
			who += " (the provider has not verified your email " + unverified + ", so no email or domain rule counts it)"
		}
		return "", "", loginError(http.StatusForbidden, "You have no access to this planserver",
			"You signed in as "+who+", but no role is mapped to you. Ask whoever runs planserver to add you to --oidc-roles.")
	}
	secret, err = f.SignIns.Create(r.Context(), auth.SignInInput{Person: *p, Groups: claims.Groups, Role: rule.Role,
		SessionID: rule.SessionID, IDToken: raw, MaxAge: f.OIDC.settings.MaxAge})
	if err != nil {
		return "", "", err
	}
	return attempt.ReturnTo, secret, nil
}

// logout ends the caller's sign-in on every replica (the record is gone)
// and, where the provider offers RP-initiated logout, says where to send
// the browser to end the provider's session too. The CSRF token is
// required like on any state-changing request made with the cookie; a
// cookie that no longer names a sign-in is simply cleared.
func (f *Flow) logout(w http.ResponseWriter, r *http.Request) {
	if f.OIDC == nil {
		response.Problem(w, r, errNoSignIn)
		return
	}
	if f.Limited(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	out := api.Logout{Redirect: f.Console}
	if c, err := r.Cookie(Cookie); err == nil {
		if _, err := f.SignIns.Authenticate(r.Context(), c.Value); err == nil {
			if err := CheckCSRF(r, c.Value); err != nil {
				response.Problem(w, r, err)
				return
			}
		}
		idToken, err := f.SignIns.End(r.Context(), c.Value)
		if err != nil {
			response.Problem(w, r, err)
			return
		}
		if f.OIDC.endSession != "" && idToken != "" {
			u, perr := url.Parse(f.OIDC.endSession)
			if perr == nil {
				v := u.Query()
				v.Set("id_token_hint", idToken)
				v.Set("post_logout_redirect_uri", f.OIDC.origin+f.Console)
				v.Set("client_id", f.OIDC.settings.ClientID)
				u.RawQuery = v.Encode()
				out.Redirect = u.String()
			}
		}
	}
	http.SetCookie(w, f.OIDC.cookie(Cookie, "", "/", -1))
	response.JSON(w, http.StatusOK, out)
}

// signInFailed answers a failed login with a page that says what went
// wrong and offers to start again: never a blank screen, never JSON for a
// person in a browser.
func (f *Flow) signInFailed(w http.ResponseWriter, r *http.Request, err error) {
	var le *errLogin
	if errors.As(err, &le) {
		f.signInPage(w, r, le.status, signInText{Title: le.title, Words: le.words, Quoted: le.quoted, Retry: LoginPath})
		return
	}
	e, status, _ := response.ProblemOf(r, err)
	f.signInPage(w, r, status, signInText{Title: "Sign-in failed", Words: e.Detail, Retry: LoginPath})
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
func (f *Flow) signInPage(w http.ResponseWriter, r *http.Request, status int, text signInText) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", f.CSP)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = signInTemplate.Execute(w, text)
	if status >= 500 {
		f.Log.Warn("sign-in failed", "status", status, "reason", text.Words)
	}
}
