package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/sqlite"
)

// NamePattern is the rule for token names.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// Token is what is known about a token; never its secret.
type Token struct {
	Name       string  `json:"name"`
	Role       Role    `json:"role"`
	SessionID  *string `json:"session_id"`
	CreatedAt  string  `json:"created_at"`
	ExpiresAt  *string `json:"expires_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
}

// Store keeps tokens.
type Store struct {
	db *sqlite.DB
	// touched remembers when last_used_at was last written per token, so a
	// busy token costs one write a minute, not one per request.
	mu      sync.Mutex
	touched map[string]time.Time
}

// NewStore returns a Store on db.
func NewStore(db *sqlite.DB) *Store { return &Store{db: db, touched: map[string]time.Time{}} }

// CreateInput describes a new token.
type CreateInput struct {
	Role      string `json:"role" validate:"required"`
	SessionID string `json:"session_id"`
	Name      string `json:"name"`
	// TTL is a Go duration ("24h"); empty means no expiry.
	TTL string `json:"ttl"`
}

// Create makes a token and returns its secret, which is never shown again.
// Errors: invalid_argument (role, name, scope, ttl), already_exists (name).
func (s *Store) Create(ctx context.Context, in CreateInput, now time.Time) (string, *Token, error) {
	role, err := ParseRole(in.Role)
	if err != nil {
		return "", nil, apierr.Invalid("role", "%v", err)
	}
	if in.Name == "" {
		in.Name = string(role) + "-" + NewToken()[3:11]
		in.Name = sanitizeName(in.Name)
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
	var expires sql.NullString
	if in.TTL != "" {
		ttl, err := time.ParseDuration(in.TTL)
		if err != nil || ttl <= 0 {
			return "", nil, apierr.Invalid("ttl", "want a positive duration such as 24h or 30m, got %q", in.TTL)
		}
		expires = sql.NullString{String: sqlite.FormatTime(now.Add(ttl)), Valid: true}
	}
	secret := NewToken()
	var tok *Token
	err = s.db.Write(ctx, func(tx *sql.Tx) error {
		if in.SessionID != "" {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE id = ?`, in.SessionID).Scan(&n); err != nil {
				return fmt.Errorf("create token: %w", err)
			}
			if n == 0 {
				return apierr.Invalid("session_id", "no session %q", in.SessionID)
			}
		}
		var taken int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tokens WHERE name = ?`, in.Name).Scan(&taken); err != nil {
			return fmt.Errorf("create token: %w", err)
		}
		if taken > 0 {
			return apierr.New(apierr.AlreadyExists, "token %q already exists", in.Name)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (name, hash, role, session_id, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?)`, in.Name, Hash(secret), role, nullString(in.SessionID), sqlite.FormatTime(now), expires)
		if err != nil {
			return fmt.Errorf("create token %q: %w", in.Name, err)
		}
		tok, err = get(ctx, tx, in.Name)
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

const tokenColumns = `name, role, session_id, created_at, expires_at, last_used_at, revoked_at`

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type scanner interface{ Scan(dest ...any) error }

func scanToken(row scanner) (*Token, error) {
	var t Token
	if err := row.Scan(&t.Name, &t.Role, &t.SessionID, &t.CreatedAt, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt); err != nil {
		return nil, err
	}
	return &t, nil
}

func get(ctx context.Context, q querier, name string) (*Token, error) {
	t, err := scanToken(q.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE name = ?`, name))
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
	return get(ctx, s.db.Reader, name)
}

// List returns every token, oldest first, revoked ones included.
func (s *Store) List(ctx context.Context) ([]*Token, error) {
	rows, err := s.db.Reader.QueryContext(ctx, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, name`)
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
func (s *Store) Revoke(ctx context.Context, name string, now time.Time) (*Token, error) {
	var tok *Token
	err := s.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := get(ctx, tx, name); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE name = ?`,
			sqlite.FormatTime(now), name); err != nil {
			return fmt.Errorf("revoke token %q: %w", name, err)
		}
		var err error
		tok, err = get(ctx, tx, name)
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
// unauthenticated (unknown, malformed, expired or revoked).
func (s *Store) Authenticate(ctx context.Context, secret string, now time.Time) (Principal, error) {
	if !LooksLikeToken(secret) {
		return Principal{}, errUnauthenticated("not a planserver token")
	}
	hash := Hash(secret)
	var (
		storedHash string
		tok        *Token
	)
	row := s.db.Reader.QueryRowContext(ctx, `SELECT hash, `+tokenColumns+` FROM tokens WHERE hash = ?`, hash)
	var t Token
	err := row.Scan(&storedHash, &t.Name, &t.Role, &t.SessionID, &t.CreatedAt, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, errUnauthenticated("unknown token")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	tok = &t
	if !HashesEqual(storedHash, hash) {
		return Principal{}, errUnauthenticated("unknown token")
	}
	if tok.RevokedAt != nil {
		return Principal{}, errUnauthenticated("token " + tok.Name + " was revoked")
	}
	if tok.ExpiresAt != nil && *tok.ExpiresAt <= sqlite.FormatTime(now) {
		return Principal{}, errUnauthenticated("token " + tok.Name + " expired at " + *tok.ExpiresAt)
	}
	s.touch(ctx, tok.Name, now)
	p := Principal{Name: tok.Name, Role: tok.Role}
	if tok.SessionID != nil {
		p.SessionID = *tok.SessionID
	}
	return p, nil
}

// touch records that a token was used, at most once a minute per token.
// A failure to record it never fails the request.
func (s *Store) touch(ctx context.Context, name string, now time.Time) {
	s.mu.Lock()
	last, ok := s.touched[name]
	if ok && now.Sub(last) < time.Minute {
		s.mu.Unlock()
		return
	}
	s.touched[name] = now
	s.mu.Unlock()
	_ = s.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE tokens SET last_used_at = ? WHERE name = ?`, sqlite.FormatTime(now), name)
		return err
	})
}

// InScope reports whether session target is scope or one of its
// descendants. A target that does not exist is not in scope.
func InScope(ctx context.Context, q querier, scope, target string) (bool, error) {
	if scope == "" || target == "" {
		return false, nil
	}
	if scope == target {
		return true, nil
	}
	var n int
	err := q.QueryRowContext(ctx, `
		WITH RECURSIVE chain(id, parent_id) AS (
			SELECT id, parent_id FROM sessions WHERE id = ?
			UNION ALL
			SELECT s.id, s.parent_id FROM sessions s JOIN chain c ON s.id = c.parent_id
		)
		SELECT count(*) FROM chain WHERE id = ?`, target, scope).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("scope of session %q: %w", target, err)
	}
	return n > 0, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
