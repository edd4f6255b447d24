package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
)

// Sign-in: a person proves who they are at the OIDC provider, and
// planserver keeps a server-side record of the sign-in in the database, so
// that every replica knows it and a sign-out on one ends it on all. The
// browser holds only an opaque random id in a cookie; the record is keyed
// by that id's SHA-256, so a copy of the database holds no usable cookie.
// The OIDC exchange itself (discovery, PKCE, the token and its checks)
// lives in internal/http; this file keeps the records and decides who
// gets which role.

// SignInPrefix marks the cookie's id, as TokenPrefix marks tokens; a
// cookie value without it is refused without a lookup.
const SignInPrefix = "pss_"

// SignInIDPrefix marks a sign-in's public id, which names it to admins
// (128 random bits; it tells nothing about the cookie).
const SignInIDPrefix = "si_"

// newSecret returns prefix and 256 random bits.
func newSecret(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// newSignInID returns a sign-in's public id: the prefix and 128 random
// bits, 22 base64url characters.
func newSignInID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return SignInIDPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// NewNonce returns 256 random bits in base64url, for state, nonce and
// the PKCE verifier.
func NewNonce() string { return newSecret("") }

// CSRFToken is the anti-forgery token of the sign-in whose cookie holds
// secret: derived from it, so it needs no storage and no replica has to
// agree on anything but the cookie. Only a page that can read /v1/me with
// the cookie (this origin) learns it; SHA-256 cannot be undone, so it
// tells nothing about the cookie.
func CSRFToken(secret string) string {
	h := sha256.Sum256([]byte("planserver csrf\x00" + secret))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// SignInInput is a person who just proved who they are, with the role
// --oidc-roles gave them.
type SignInInput struct {
	Person Person
	// Groups are the provider's groups claim, kept so that group rules
	// can be matched again on every request.
	Groups []string
	Role   Role
	// SessionID is a reviewer's subtree; "" for every session.
	SessionID string
	// IDToken is the provider's raw ID token, kept as the hint of
	// RP-initiated logout.
	IDToken string
	// MaxAge is the absolute timeout: the sign-in ends then whatever the
	// activity. Idle is checked on every request (Timeouts).
	MaxAge time.Duration
}

// Timeouts bound a sign-in: Idle without a request ends it, MaxAge after
// login ends it in any case.
type Timeouts struct {
	Idle   time.Duration
	MaxAge time.Duration
}

// AttemptLimits bound the logins in progress, which anyone can start:
// /auth/login is unauthenticated and records an attempt per request.
type AttemptLimits struct {
	// PerClient is how many attempts one client (an address; an IPv6
	// client by its /64) may have in progress: its next one replaces its
	// oldest. DefaultAttemptsPerClient when 0.
	PerClient int
	// Total is how many may be in progress in all: beyond it a login is
	// refused (503 unavailable) until attempts finish or expire.
	// DefaultAttemptsTotal when 0.
	Total int
}

// Default attempt limits: room for an office behind one NAT address
// signing in at nine, and a table that stays a few megabytes under any
// flood.
const (
	DefaultAttemptsPerClient = 100
	DefaultAttemptsTotal     = 10000
)

// SignInConfig configures the sign-in store.
type SignInConfig struct {
	Timeouts Timeouts
	Attempts AttemptLimits
	// Rules are --oidc-roles. They are matched again on every use of a
	// sign-in, against what the provider said at login, so a sign-in
	// never outlives the rule that let its person in. Without rules no
	// sign-in is valid.
	Rules []RoleRule
}

// SignIns keeps sign-ins and login attempts.
type SignIns struct {
	db       *db.DB
	timeouts Timeouts
	attempts AttemptLimits
	rules    []RoleRule
	// touched remembers when this replica last wrote a sign-in's
	// last_seen_at, so the requests that find it stale at once write it
	// once, not each.
	mu      sync.Mutex
	touched map[string]time.Time
}

// NewSignIns returns the sign-in store on d.
func NewSignIns(d *db.DB, c SignInConfig) *SignIns {
	if c.Attempts.PerClient <= 0 {
		c.Attempts.PerClient = DefaultAttemptsPerClient
	}
	if c.Attempts.Total <= 0 {
		c.Attempts.Total = DefaultAttemptsTotal
	}
	return &SignIns{db: d, timeouts: c.Timeouts, attempts: c.Attempts, rules: c.Rules, touched: map[string]time.Time{}}
}

// Attempt is a login in progress, between /auth/login and /auth/callback.
type Attempt struct {
	Nonce    string
	Verifier string
	ReturnTo string
	// Client is who started it (an address, an IPv6 /64), for
	// AttemptLimits.PerClient.
	Client string
}

// attemptTTL bounds how long a person may take at the provider's page.
const attemptTTL = 10 * time.Minute

// Begin records a login attempt under state, within the attempt limits:
// a client at its limit loses its oldest attempt, and when the limit of
// all is reached the login is refused before any write, so a flood of
// logins neither grows the table nor queues behind other writes. Expired
// attempts are pruned on the way. Errors: unavailable (too many logins in
// progress, with RetryAfter: when the oldest expires).
func (s *SignIns) Begin(ctx context.Context, state string, a Attempt) error {
	if err := s.roomForAttempt(s.db.Reader(ctx), s.db.Now()); err != nil {
		return err
	}
	return s.db.Write(ctx, func(tx *db.Tx) error {
		now := tx.NowText()
		if _, err := tx.Exec(`DELETE FROM signin_attempts WHERE expires_at <= ?`, now); err != nil {
			return fmt.Errorf("prune login attempts: %w", err)
		}
		// Keep this client's newest PerClient-1, so that with this one
		// it has PerClient.
		if _, err := tx.Exec(`DELETE FROM signin_attempts WHERE client = ? AND state_hash NOT IN
			(SELECT state_hash FROM signin_attempts WHERE client = ? ORDER BY expires_at DESC, state_hash LIMIT ?)`,
			a.Client, a.Client, s.attempts.PerClient-1); err != nil {
			return fmt.Errorf("bound this client's login attempts: %w", err)
		}
		if err := s.roomForAttempt(tx, tx.Now()); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO signin_attempts (state_hash, nonce, verifier, return_to, expires_at, client)
			VALUES (?, ?, ?, ?, ?, ?)`, Hash(state), a.Nonce, a.Verifier, a.ReturnTo,
			db.FormatTime(tx.Now().Add(attemptTTL)), a.Client); err != nil {
			return fmt.Errorf("record login attempt: %w", err)
		}
		return nil
	})
}

// roomForAttempt reports, as of now in q's snapshot, whether another
// attempt fits under AttemptLimits.Total.
func (s *SignIns) roomForAttempt(q db.Querier, now time.Time) error {
	var (
		pending int
		oldest  string
	)
	if err := q.QueryRow(`SELECT count(*), coalesce(min(expires_at), '') FROM signin_attempts WHERE expires_at > ?`,
		db.FormatTime(now)).Scan(&pending, &oldest); err != nil {
		return fmt.Errorf("count login attempts: %w", err)
	}
	if pending < s.attempts.Total {
		return nil
	}
	wait := attemptTTL
	if t, err := time.Parse(db.TimeFormat, oldest); err == nil && t.After(now) {
		wait = t.Sub(now)
	}
	return &apierr.Error{Code: apierr.Unavailable, RetryAfter: int(wait/time.Second) + 1,
		Detail: fmt.Sprintf("%d sign-ins are in progress, the most this server keeps; try again when older ones finish or expire", pending)}
}

// Take returns and deletes the attempt recorded under state: a state is
// good for one callback only. A state nobody recorded is refused from a
// read, so made-up callbacks never reach the writer. Errors:
// unauthenticated (unknown, used or expired state).
func (s *SignIns) Take(ctx context.Context, state string) (Attempt, error) {
	var (
		a       Attempt
		expires string
	)
	var n int
	if err := s.db.Reader(ctx).QueryRow(`SELECT count(*) FROM signin_attempts WHERE state_hash = ?`, Hash(state)).Scan(&n); err != nil {
		return a, fmt.Errorf("look up login attempt: %w", err)
	}
	if n == 0 {
		return a, apierr.New(apierr.Unauthenticated, "this login's state is unknown or was already used: start again")
	}
	err := s.db.Write(ctx, func(tx *db.Tx) error {
		err := tx.QueryRow(`DELETE FROM signin_attempts WHERE state_hash = ? RETURNING nonce, verifier, return_to, expires_at`,
			Hash(state)).Scan(&a.Nonce, &a.Verifier, &a.ReturnTo, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return apierr.New(apierr.Unauthenticated, "this login's state is unknown or was already used: start again")
		}
		if err != nil {
			return fmt.Errorf("take login attempt: %w", err)
		}
		if expires <= tx.NowText() {
			return apierr.New(apierr.Unauthenticated, "this login took longer than %s: start again", attemptTTL)
		}
		return nil
	})
	return a, err
}

// Create records a sign-in and returns the secret for its cookie, which is
// never stored. A reviewer's subtree must name an existing session.
func (s *SignIns) Create(ctx context.Context, in SignInInput) (string, error) {
	if in.Person.Subject == "" {
		return "", apierr.New(apierr.Unauthenticated, "the provider's ID token names no subject")
	}
	secret := newSecret(SignInPrefix)
	err := s.db.Write(ctx, func(tx *db.Tx) error {
		now := tx.NowText()
		if _, err := tx.Exec(`DELETE FROM signins WHERE expires_at <= ?`, now); err != nil {
			return fmt.Errorf("prune sign-ins: %w", err)
		}
		var pk sql.NullInt64
		if in.SessionID != "" {
			err := tx.QueryRow(`SELECT pk FROM sessions WHERE id = ?`, in.SessionID).Scan(&pk)
			if errors.Is(err, sql.ErrNoRows) {
				return apierr.New(apierr.PermissionDenied,
					"your role is %s of session %q, which does not exist (yet): ask an operator to fix --oidc-roles", in.Role, in.SessionID)
			}
			if err != nil {
				return fmt.Errorf("sign in: %w", err)
			}
		}
		maxAge := in.MaxAge
		if maxAge <= 0 {
			maxAge = s.timeouts.MaxAge
		}
		groups, err := json.Marshal(nonNil(in.Groups))
		if err != nil {
			return fmt.Errorf("sign in: %w", err)
		}
		_, err = tx.Exec(`INSERT INTO signins (hash, id, subject, email, name, groups, role, session_id, session_pk, id_token,
			created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			Hash(secret), newSignInID(), in.Person.Subject, in.Person.Email, in.Person.Name,
			string(groups), in.Role, nullString(in.SessionID), pk, in.IDToken, now, now, db.FormatTime(tx.Now().Add(maxAge)))
		if err != nil {
			return fmt.Errorf("sign in: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// LooksLikeSignIn reports whether s has a sign-in cookie's shape.
func LooksLikeSignIn(s string) bool {
	rest, ok := strings.CutPrefix(s, SignInPrefix)
	return ok && len(rest) == 43
}

// touchEvery is how stale last_seen_at may get before a request writes it
// again: the idle timeout is this precise, and a busy reviewer costs one
// write a minute, not one per request.
const touchEvery = time.Minute

// Authenticate returns the person whose cookie holds secret. Errors:
// unauthenticated (malformed, unknown or signed out, idle too long, past
// its absolute timeout, or a reviewer whose subtree was deleted).
func (s *SignIns) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !LooksLikeSignIn(secret) {
		return Principal{}, errUnauthenticated("not a planserver sign-in: sign in again at /auth/login")
	}
	hash := Hash(secret)
	p, lastSeen, err := s.principal(s.db.Reader(ctx), hash, s.db.Now())
	if err != nil {
		return Principal{}, err
	}
	p.CSRF = CSRFToken(secret)
	now := s.db.Now()
	if now.Sub(lastSeen) >= touchEvery && s.claimTouch(hash, now) {
		// A failure to record activity never fails the request.
		_ = s.db.Write(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(`UPDATE signins SET last_seen_at = ? WHERE hash = ?`, tx.NowText(), hash)
			return err
		})
	}
	return p, nil
}

// claimTouch reports whether this request is the one to write a stale
// last_seen_at: the first in touchEvery on this replica.
func (s *SignIns) claimTouch(hash string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if last, ok := s.touched[hash]; ok && now.Sub(last) < touchEvery {
		return false
	}
	if len(s.touched) > 10000 {
		clear(s.touched) // forgetting only costs a write each
	}
	s.touched[hash] = now
	return true
}

// signInColumns are a sign-in's columns as scanSignIn reads them, with
// the path of the reviewer subtree it was given at login (NULL once that
// session is gone), from signins g LEFT JOIN sessions s.
const signInColumns = `g.hash, g.id, g.subject, g.email, g.name, g.groups, g.role, g.session_id, g.session_pk,
	s.ancestry || s.pk || '/', g.created_at, g.last_seen_at, g.expires_at`

const signInsFrom = ` FROM signins g LEFT JOIN sessions s ON s.pk = g.session_pk`

// signInRow is one sign-in as stored.
type signInRow struct {
	hash, id                   string
	person                     Person
	groups                     []string
	role                       string
	sessionID, path            sql.NullString
	pk                         sql.NullInt64
	created, lastSeen, expires string
	lastSeenTime               time.Time
}

func scanSignIn(row scanner) (*signInRow, error) {
	var (
		g      signInRow
		groups string
	)
	if err := row.Scan(&g.hash, &g.id, &g.person.Subject, &g.person.Email, &g.person.Name, &groups, &g.role,
		&g.sessionID, &g.pk, &g.path, &g.created, &g.lastSeen, &g.expires); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(groups), &g.groups); err != nil {
		return nil, fmt.Errorf("sign-in %s: groups %q: %w", g.id, groups, err)
	}
	seen, err := time.Parse(db.TimeFormat, g.lastSeen)
	if err != nil {
		return nil, fmt.Errorf("sign-in %s: last_seen_at %q: %w", g.id, g.lastSeen, err)
	}
	g.lastSeenTime = seen
	return &g, nil
}

// ended says why g no longer signs anyone in as of now (absolute or idle
// timeout), or "" while it is live.
func (s *SignIns) ended(g *signInRow, now time.Time) string {
	if g.expires <= db.FormatTime(now) {
		return "this sign-in expired at " + g.expires + ": sign in again at /auth/login"
	}
	if s.timeouts.Idle > 0 && now.Sub(g.lastSeenTime) >= s.timeouts.Idle {
		return fmt.Sprintf("this sign-in was idle for more than %s: sign in again at /auth/login", s.timeouts.Idle)
	}
	return ""
}

// grant is what the rules in force give a sign-in now.
type grant struct {
	role Role
	// sessionID, pk and path are a reviewer's subtree ("" for none).
	sessionID string
	pk        int64
	path      string
}

// grantOf matches the rules in force against what the provider said about
// g's person at login, in q's snapshot: the role is never the one taken
// once at login, so a changed rule applies on the person's next request.
// A reviewer subtree the rules name is the session of that id, by the
// identity it had at login when the rule is the login's, else by the
// identity it has now. Errors: unauthenticated (no rule matches, or the
// subtree does not exist).
func (s *SignIns) grantOf(q db.Querier, g *signInRow) (grant, error) {
	rule, ok := MatchRole(s.rules, Claims{Email: g.person.Email, EmailVerified: true, Groups: g.groups})
	if !ok {
		return grant{}, errUnauthenticated(fmt.Sprintf("no rule of --oidc-roles lets %s in any more: "+
			"ask whoever runs planserver", g.person.DisplayName()))
	}
	out := grant{role: rule.Role, sessionID: rule.SessionID}
	switch {
	case rule.SessionID == "":
	case g.sessionID.Valid && g.sessionID.String == rule.SessionID:
		if !g.path.Valid {
			return grant{}, errUnauthenticated("your reviewer subtree, session " + rule.SessionID + ", no longer exists: sign in again")
		}
		out.pk, out.path = g.pk.Int64, g.path.String
	default:
		err := q.QueryRow(`SELECT pk, ancestry || pk || '/' FROM sessions WHERE id = ?`, rule.SessionID).Scan(&out.pk, &out.path)
		if errors.Is(err, sql.ErrNoRows) {
			return grant{}, errUnauthenticated("your reviewer subtree, session " + rule.SessionID + ", does not exist: " +
				"ask an operator to fix --oidc-roles")
		}
		if err != nil {
			return grant{}, fmt.Errorf("authenticate sign-in: %w", err)
		}
	}
	return out, nil
}

// principal reads the sign-in whose hash is hash, as of now, with the role
// the rules in force give it, and when it was last seen.
func (s *SignIns) principal(q db.Querier, hash string, now time.Time) (Principal, time.Time, error) {
	g, err := scanSignIn(q.QueryRow(`SELECT `+signInColumns+signInsFrom+` WHERE g.hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, time.Time{}, errUnauthenticated("this sign-in has ended (signed out, ended by an admin, or unknown): sign in again at /auth/login")
	}
	if err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("authenticate sign-in: %w", err)
	}
	if !HashesEqual(g.hash, hash) {
		return Principal{}, time.Time{}, errUnauthenticated("this sign-in has ended: sign in again at /auth/login")
	}
	if why := s.ended(g, now); why != "" {
		return Principal{}, time.Time{}, errUnauthenticated(why)
	}
	gr, err := s.grantOf(q, g)
	if err != nil {
		return Principal{}, time.Time{}, err
	}
	person := g.person
	p := Principal{Name: person.DisplayName(), Role: gr.role, Person: &person, hash: hash, signIn: true,
		ExpiresAt: g.expires, SignInID: g.id,
		SessionID: gr.sessionID, SessionPK: gr.pk, SessionPath: gr.path}
	return p, g.lastSeenTime, nil
}

// End deletes the sign-in whose cookie holds secret and returns its ID
// token (for RP-initiated logout). Ending one that is gone is no error:
// the answer is the same, the person is signed out (and a cookie nobody
// issued never reaches the writer).
func (s *SignIns) End(ctx context.Context, secret string) (idToken string, err error) {
	if !LooksLikeSignIn(secret) {
		return "", nil
	}
	var n int
	if err := s.db.Reader(ctx).QueryRow(`SELECT count(*) FROM signins WHERE hash = ?`, Hash(secret)).Scan(&n); err != nil {
		return "", fmt.Errorf("sign out: %w", err)
	}
	if n == 0 {
		return "", nil
	}
	err = s.db.Write(ctx, func(tx *db.Tx) error {
		err := tx.QueryRow(`DELETE FROM signins WHERE hash = ? RETURNING id_token`, Hash(secret)).Scan(&idToken)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sign out: %w", err)
		}
		return nil
	})
	return idToken, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
