package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/events"
	"github.com/planserver/planserver/internal/validation"
)

// NamePattern is the rule for token names.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// Token is what is known about a token; never its secret.
type Token = api.Token

// CreateInput describes a new token.
type CreateInput = api.TokenCreate

// Store keeps tokens.
type Store struct {
	db *db.DB
	// touched remembers when last_used_at was last written per token, so a
	// busy token costs one write a minute, not one per request.
	mu      sync.Mutex
	touched map[string]time.Time
	// signIns checks sign-ins again in Recheck; its timeouts are set by
	// SetSignInTimeouts.
	signIns *SignIns
}

// NewStore returns a Store on d.
func NewStore(d *db.DB) *Store {
	return &Store{db: d, touched: map[string]time.Time{}, signIns: NewSignIns(d, SignInConfig{})}
}

// SignIns returns the store of sign-ins, configured by c, sharing this
// store's database; Recheck then checks sign-ins the same way.
func (s *Store) SignIns(c SignInConfig) *SignIns {
	s.signIns = NewSignIns(s.db, c)
	return s.signIns
}

// Create makes a token and returns its secret, which is never shown again.
// An agent token is bound to its session's identity: deleting the session
// revokes the token, and a later session of the same id is not its scope.
// Errors: invalid_argument (role, name, scope, ttl), already_exists (name).
func (s *Store) Create(ctx context.Context, in CreateInput) (string, *Token, error) {
	if err := validation.Struct(in); err != nil {
		return "", nil, err
	}
	role, err := ParseRole(in.Role)
	if err != nil {
		return "", nil, apierr.Invalid("role", "%v", err)
	}
	if in.Name == "" {
		in.Name = sanitizeName(string(role) + "-" + NewToken()[3:11])
	}
	if !NamePattern.MatchString(in.Name) {
		return "", nil, apierr.Invalid("name", "must match %s", NamePattern)
	}
	if role == Agent && in.SessionID == "" {
		return "", nil, apierr.Invalid("session_id", "an agent token is bound to a session: name it")
	}
	if role != Agent && in.SessionID != "" {
		return "", nil, apierr.Invalid("session_id", "only agent tokens are bound to a session")
	}
	var ttl time.Duration
	if in.TTL != "" {
		if ttl, err = time.ParseDuration(in.TTL); err != nil || ttl <= 0 {
			return "", nil, apierr.Invalid("ttl", "want a positive duration such as 24h or 30m, got %q", in.TTL)
		}
	}
	secret := NewToken()
	var tok *Token
	err = s.db.Write(ctx, func(tx *db.Tx) error {
		var sessionPK sql.NullInt64
		if in.SessionID != "" {
			err := tx.QueryRow(`SELECT pk FROM sessions WHERE id = ?`, in.SessionID).Scan(&sessionPK)
			if errors.Is(err, sql.ErrNoRows) {
				return apierr.Invalid("session_id", "no session %q", in.SessionID)
			}
			if err != nil {
				return fmt.Errorf("create token: %w", err)
			}
		}
		var taken int
		if err := tx.QueryRow(`SELECT count(*) FROM tokens WHERE name = ?`, in.Name).Scan(&taken); err != nil {
			return fmt.Errorf("create token: %w", err)
		}
		if taken > 0 {
			return apierr.New(apierr.AlreadyExists, "token %q already exists", in.Name)
		}
		var expires sql.NullString
		if ttl > 0 {
			expires = sql.NullString{String: db.FormatTime(tx.Now().Add(ttl)), Valid: true}
		}
		// Over HTTP the creator is the caller; on the host (planserver
		// token create) there is no caller to name.
		createdBy := ""
		if a, ok := events.ActorIn(ctx); ok {
			createdBy = a
		}
		_, err := tx.Exec(`INSERT INTO tokens (name, hash, role, session_id, session_pk, created_at, expires_at, created_by, created_by_person)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.Name, Hash(secret), role, nullString(in.SessionID), sessionPK, tx.NowText(), expires,
			createdBy, events.MarshalPerson(events.PersonFrom(ctx)))
		if err != nil {
			return fmt.Errorf("create token %q: %w", in.Name, err)
		}
		tok, err = get(tx, in.Name)
		return err
	})
	if err != nil {
		return "", nil, err
	}
	return secret, tok, nil
}

func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		} else if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = 'x'
		}
	}
	return string(b)
}

const tokenColumns = `name, role, session_id, created_at, expires_at, last_used_at, revoked_at, created_by, created_by_person`

type scanner interface{ Scan(dest ...any) error }

func scanToken(row scanner) (*Token, error) {
	var (
		t      Token
		person sql.NullString
	)
	if err := row.Scan(&t.Name, &t.Role, &t.SessionID, &t.CreatedAt, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt,
		&t.CreatedBy, &person); err != nil {
		return nil, err
	}
	var err error
	if t.CreatedByPerson, err = events.UnmarshalPerson(person); err != nil {
		return nil, err
	}
	return &t, nil
}

func get(q db.Querier, name string) (*Token, error) {
	t, err := scanToken(q.QueryRow(`SELECT `+tokenColumns+` FROM tokens WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierr.New(apierr.NotFound, "token %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("get token %q: %w", name, err)
	}
	return t, nil
}

// Get returns the token name. Errors: not_found.
func (s *Store) Get(ctx context.Context, name string) (*Token, error) {
	return get(s.db.Reader(ctx), name)
}

// List returns every token, oldest first, revoked ones included.
func (s *Store) List(ctx context.Context) ([]*Token, error) {
	rows, err := s.db.Reader(ctx).Query(`SELECT ` + tokenColumns + ` FROM tokens ORDER BY created_at, name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	out := []*Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

// Revoke revokes a token by name; revoking twice is a no-op. Errors:
// not_found.
func (s *Store) Revoke(ctx context.Context, name string) (*Token, error) {
	var tok *Token
	err := s.db.Write(ctx, func(tx *db.Tx) error {
		if _, err := get(tx, name); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE name = ?`,
			tx.NowText(), name); err != nil {
			return fmt.Errorf("revoke token %q: %w", name, err)
		}
		var err error
		tok, err = get(tx, name)
		return err
	})
	return tok, err
}

// errUnauthenticated is the one code for every bad credential. The detail
// says what was wrong, which tells the holder of a revoked or expired
// secret nothing they could not guess; an unknown token names nothing.
func errUnauthenticated(why string) error {
	return apierr.New(apierr.Unauthenticated, "%s", why)
}

// Authenticate returns the principal of a secret token. Errors:
// unauthenticated (unknown, malformed, expired or revoked, or bound to a
// session that no longer exists).
func (s *Store) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !LooksLikeToken(secret) {
		return Principal{}, errUnauthenticated("not a planserver token")
	}
	p, err := s.principal(s.db.Reader(ctx), Hash(secret), s.db.Now())
	if err != nil {
		return Principal{}, err
	}
	s.touch(ctx, p.Name)
	return p, nil
}

// Recheck checks, within q's snapshot, that principal p's token is still
// valid: not revoked, not expired, its session still there; for a
// sign-in, not ended (signed out, ended by an admin, timed out) and given
// the same role and subtree by the rules in force. An event stream calls
// it in the snapshot of every page it reads and on every heartbeat, so
// it ends with the credential. Principals without a token (--auth none)
// always pass.
func (s *Store) Recheck(q db.Querier, p Principal) error {
	if p.hash == "" {
		return nil
	}
	if p.signIn {
		now, _, err := s.signIns.principal(q, p.hash, s.db.Now())
		if err != nil {
			return err
		}
		if now.Role != p.Role || now.SessionPath != p.SessionPath {
			return errUnauthenticated(fmt.Sprintf("the rules give this sign-in another role (%s) than when this stream opened (%s): open it again",
				now.Role, p.Role))
		}
		return nil
	}
	_, err := s.principal(q, p.hash, s.db.Now())
	return err
}

// principal reads the principal of the token whose hash is hash, as of now.
func (s *Store) principal(q db.Querier, hash string, now time.Time) (Principal, error) {
	var (
		storedHash string
		t          Token
		pk         sql.NullInt64
		path       sql.NullString
	)
	err := q.QueryRow(`SELECT t.hash, t.name, t.role, t.session_id, t.created_at, t.expires_at, t.last_used_at, t.revoked_at,
			t.session_pk, s.ancestry || s.pk || '/'
		FROM tokens t LEFT JOIN sessions s ON s.pk = t.session_pk WHERE t.hash = ?`, hash).
		Scan(&storedHash, &t.Name, &t.Role, &t.SessionID, &t.CreatedAt, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt, &pk, &path)
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, errUnauthenticated("unknown token")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	if !HashesEqual(storedHash, hash) {
		return Principal{}, errUnauthenticated("unknown token")
	}
	if t.RevokedAt != nil {
		return Principal{}, errUnauthenticated("token " + t.Name + " was revoked")
	}
	if t.ExpiresAt != nil && *t.ExpiresAt <= db.FormatTime(now) {
		return Principal{}, errUnauthenticated("token " + t.Name + " expired at " + *t.ExpiresAt)
	}
	p := Principal{Name: t.Name, Role: Role(t.Role), hash: hash}
	if t.SessionID != nil {
		if !path.Valid {
			return Principal{}, errUnauthenticated("token " + t.Name + " was bound to session " + *t.SessionID + ", which no longer exists")
		}
		p.SessionID, p.SessionPK, p.SessionPath = *t.SessionID, pk.Int64, path.String
	}
	return p, nil
}

// touch records that a token was used, at most once a minute per token.
// A failure to record it never fails the request.
func (s *Store) touch(ctx context.Context, name string) {
	now := s.db.Now()
	s.mu.Lock()
	last, ok := s.touched[name]
	if ok && now.Sub(last) < time.Minute {
		s.mu.Unlock()
		return
	}
	s.touched[name] = now
	s.mu.Unlock()
	_ = s.db.Write(ctx, func(tx *db.Tx) error {
		_, err := tx.Exec(`UPDATE tokens SET last_used_at = ? WHERE name = ?`, tx.NowText(), name)
		return err
	})
}

// InScope is the scope rule: a session is in an agent's scope when its
// path (its chain of identities) starts with the path of the session the
// agent's token was bound to. A later session that merely reuses an id is
// never in scope.
func InScope(scope, target string) bool {
	return scope != "" && target != "" && strings.HasPrefix(target, scope)
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
