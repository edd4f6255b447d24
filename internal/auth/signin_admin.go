package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/pagetoken"
)

// The admin's view of sign-ins: list them, and end one, or all of one
// person's, at once. Ending deletes the record, as a sign-out does, so
// the cookie is refused on every replica from the next request, and the
// event streams it holds end at the next commit (this one: Recheck).

// SignInIDPattern is the shape of a sign-in's public id.
var SignInIDPattern = regexp.MustCompile(`^si_[A-Za-z0-9_-]{22}$`)

// maxSubjectBytes bounds a subject filter: OIDC Core (2) limits sub to
// 255 ASCII characters.
const maxSubjectBytes = 255

// Page sizes of ListSignIns.
const (
	defaultSignInPage = 50
	maxSignInPage     = 1000
)

// checkSignInID refuses what cannot be a sign-in's id. Errors:
// invalid_argument.
func checkSignInID(id string) error {
	if !SignInIDPattern.MatchString(id) {
		return apierr.Invalid("id", "a sign-in id is si_ and 22 base64url characters (GET /v1/signins lists them), not %q", clip(id))
	}
	return nil
}

// checkSubject refuses what cannot be a provider's subject. Errors:
// invalid_argument.
func checkSubject(subject string) error {
	if subject == "" || len(subject) > maxSubjectBytes || strings.ContainsFunc(subject, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return apierr.Invalid("subject", "must be a provider's subject: 1 to %d characters, no control characters", maxSubjectBytes)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// view is the admin's view of g as of the rules in force, in q's
// snapshot.
func (s *SignIns) view(q db.Querier, g *signInRow) (api.SignIn, error) {
	out := api.SignIn{ID: g.id, Subject: g.person.Subject, Email: g.person.Email, Name: g.person.Name,
		Groups: nonNil(g.groups), RoleAtSignIn: g.role, CreatedAt: g.created, LastSeenAt: g.lastSeen,
		ExpiresAt: g.expires, IdleExpiresAt: g.expires}
	if s.timeouts.Idle > 0 {
		if idle := db.FormatTime(g.lastSeenTime.Add(s.timeouts.Idle)); idle < g.expires {
			out.IdleExpiresAt = idle
		}
	}
	gr, err := s.grantOf(q, g)
	if apierr.CodeOf(err) == apierr.Unauthenticated {
		return out, nil // no rule lets them in now: role null
	}
	if err != nil {
		return out, err
	}
	role := string(gr.role)
	out.Role = &role
	if gr.sessionID != "" {
		id := gr.sessionID
		out.SessionID = &id
	}
	return out, nil
}

// liveSince is the cut of last_seen_at below which a sign-in is idle.
func (s *SignIns) liveSince(now time.Time) string {
	if s.timeouts.Idle <= 0 {
		return ""
	}
	return db.FormatTime(now.Add(-s.timeouts.Idle))
}

// List returns a page of the live sign-ins (not signed out, ended or
// timed out), oldest first, of one person when subject is not "".
// Errors: invalid_argument (subject, limit, page token).
func (s *SignIns) List(ctx context.Context, subject string, limit int, pageToken string) ([]api.SignIn, string, error) {
	if subject != "" {
		if err := checkSubject(subject); err != nil {
			return nil, "", err
		}
	}
	switch {
	case limit == 0:
		limit = defaultSignInPage
	case limit < 0 || limit > maxSignInPage:
		return nil, "", apierr.Invalid("limit", "must be between 1 and %d", maxSignInPage)
	}
	filters := pagetoken.Fingerprint(subject)
	after, err := pagetoken.Decode("signins", filters, pageToken)
	if err != nil {
		return nil, "", err
	}
	afterCreated, afterID, _ := strings.Cut(after, " ")
	var (
		out  []api.SignIn
		next string
	)
	err = s.db.Read(ctx, func(tx *db.Tx) error {
		now := tx.Now()
		q := `SELECT ` + signInColumns + signInsFrom + ` WHERE g.expires_at > ? AND g.last_seen_at > ?
			AND (g.created_at > ? OR (g.created_at = ? AND g.id > ?))`
		args := []any{db.FormatTime(now), s.liveSince(now), afterCreated, afterCreated, afterID}
		if subject != "" {
			q += ` AND g.subject = ?`
			args = append(args, subject)
		}
		q += ` ORDER BY g.created_at, g.id LIMIT ?`
		args = append(args, limit+1)
		rows, err := tx.Query(q, args...)
		if err != nil {
			return fmt.Errorf("list sign-ins: %w", err)
		}
		var found []*signInRow
		for rows.Next() {
			g, err := scanSignIn(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("list sign-ins: %w", err)
			}
			found = append(found, g)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list sign-ins: %w", err)
		}
		if len(found) > limit {
			found = found[:limit]
			last := found[limit-1]
			next = pagetoken.Encode("signins", filters, last.created+" "+last.id)
		}
		out = make([]api.SignIn, 0, len(found))
		for _, g := range found {
			v, err := s.view(tx, g)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		return nil
	})
	return out, next, err
}

// live reads the live sign-in id in q's snapshot. Errors:
// invalid_argument (not an id), not_found (none, or ended).
func (s *SignIns) live(q db.Querier, id string, now time.Time) (*signInRow, error) {
	if err := checkSignInID(id); err != nil {
		return nil, err
	}
	g, err := scanSignIn(q.QueryRow(`SELECT `+signInColumns+signInsFrom+` WHERE g.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierr.New(apierr.NotFound, "no sign-in %s: it never was, or it has ended (signed out, ended, timed out)", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read sign-in %s: %w", id, err)
	}
	if s.ended(g, now) != "" {
		return nil, apierr.New(apierr.NotFound, "sign-in %s has ended: it timed out at %s", id, g.expires)
	}
	return g, nil
}

// Get returns the live sign-in id. Errors: invalid_argument, not_found.
func (s *SignIns) Get(ctx context.Context, id string) (api.SignIn, error) {
	var out api.SignIn
	err := s.db.Read(ctx, func(tx *db.Tx) error {
		g, err := s.live(tx, id, tx.Now())
		if err != nil {
			return err
		}
		out, err = s.view(tx, g)
		return err
	})
	return out, err
}

// Revoke ends the live sign-in id at once, on every replica: its cookie
// is refused from the next request, its event streams end at this
// commit, its MCP calls fail. Its person may sign in again if the rules
// and the provider still let them; to stop that, change --oidc-roles or
// disable them at the provider. Errors: invalid_argument, not_found.
func (s *SignIns) Revoke(ctx context.Context, id string) (api.SignIn, error) {
	var out api.SignIn
	err := s.db.Write(ctx, func(tx *db.Tx) error {
		g, err := s.live(tx, id, tx.Now())
		if err != nil {
			return err
		}
		if out, err = s.view(tx, g); err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM signins WHERE id = ?`, id); err != nil {
			return fmt.Errorf("end sign-in %s: %w", id, err)
		}
		return nil
	})
	return out, err
}

// RevokeSubject ends every sign-in of the person subject names, as Revoke
// does, and returns the live ones it ended (none is no error: the person
// is signed out everywhere either way). Errors: invalid_argument.
func (s *SignIns) RevokeSubject(ctx context.Context, subject string) ([]api.SignIn, error) {
	if err := checkSubject(subject); err != nil {
		return nil, err
	}
	out := []api.SignIn{}
	err := s.db.Write(ctx, func(tx *db.Tx) error {
		rows, err := tx.Query(`SELECT `+signInColumns+signInsFrom+` WHERE g.subject = ? ORDER BY g.created_at, g.id`, subject)
		if err != nil {
			return fmt.Errorf("end the sign-ins of %q: %w", subject, err)
		}
		var found []*signInRow
		for rows.Next() {
			g, err := scanSignIn(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("end the sign-ins of %q: %w", subject, err)
			}
			found = append(found, g)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("end the sign-ins of %q: %w", subject, err)
		}
		for _, g := range found {
			if s.ended(g, tx.Now()) != "" {
				continue
			}
			v, err := s.view(tx, g)
			if err != nil {
				return err
			}
			out = append(out, v)
		}
		if _, err := tx.Exec(`DELETE FROM signins WHERE subject = ?`, subject); err != nil {
			return fmt.Errorf("end the sign-ins of %q: %w", subject, err)
		}
		return nil
	})
	return out, err
}
