// Package gates keeps the gate registry (/v1/gates, planserver gate
// add|list|remove): the streamable-HTTP MCP servers the gate proxy fronts
// at /mcp/gate/{name} (internal/gates/proxy), each with the tools its
// operator declared read-only. It is the registry's store and its rules
// (the name, the URL); the proxy that serves a gate is a transport above
// it, as webhooks/deliver is above webhooks.
package gates

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"

	"github.com/planserver/planserver/api"
	"github.com/planserver/planserver/internal/apierr"
	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/validation"
)

// Store keeps the registered upstream tool servers of /mcp/gate/{name}.
type Store struct{ db *db.DB }

// NewStore returns the registry on d.
func NewStore(d *db.DB) *Store { return &Store{db: d} }

// Name is the rule for a gate's name: a URL path segment as it is.
var Name = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// ValidateName checks a gate's name. Errors: invalid_argument.
func ValidateName(name string) error {
	if !Name.MatchString(name) {
		return apierr.Invalid("name", "gate name %q must match %s", name, Name.String())
	}
	return nil
}

// validateGate checks a registration: an absolute http or https URL, and
// tool names.
func validateGate(in api.GateWrite) error {
	if err := validation.Struct(in); err != nil {
		return err
	}
	u, err := url.Parse(in.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return apierr.Invalid("url", "must be the absolute http:// or https:// URL of a streamable-HTTP MCP server, without credentials; got %q", in.URL)
	}
	return nil
}

const gateColumns = `name, url, read_only, created_at, updated_at`

func scanGate(row interface{ Scan(...any) error }) (*api.Gate, error) {
	var (
		g        api.Gate
		readOnly string
	)
	if err := row.Scan(&g.Name, &g.URL, &readOnly, &g.CreatedAt, &g.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(readOnly), &g.ReadOnlyTools); err != nil {
		return nil, fmt.Errorf("gate %q: read_only is not a JSON list: %w", g.Name, err)
	}
	if g.ReadOnlyTools == nil {
		g.ReadOnlyTools = []string{}
	}
	return &g, nil
}

func gateNotFound(name string) error {
	return apierr.New(apierr.NotFound, "no gate %q is registered (planserver gate add NAME URL, or PUT /v1/gates/{name})", name)
}

// Put registers or replaces the gate called name and reports whether it
// was new. Errors: invalid_argument.
func (s *Store) Put(ctx context.Context, name string, in api.GateWrite) (*api.Gate, bool, error) {
	if err := ValidateName(name); err != nil {
		return nil, false, err
	}
	if err := validateGate(in); err != nil {
		return nil, false, err
	}
	if in.ReadOnlyTools == nil {
		in.ReadOnlyTools = []string{}
	}
	readOnly, err := json.Marshal(in.ReadOnlyTools)
	if err != nil {
		return nil, false, err
	}
	var (
		out     *api.Gate
		created bool
	)
	err = s.db.Write(ctx, func(tx *db.Tx) error {
		now := tx.NowText()
		res, err := tx.Exec(`UPDATE gates SET url = ?, read_only = ?, updated_at = ? WHERE name = ?`, in.URL, string(readOnly), now, name)
		if err != nil {
			return fmt.Errorf("register gate %q: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			created = true
			if _, err := tx.Exec(`INSERT INTO gates (`+gateColumns+`) VALUES (?, ?, ?, ?, ?)`, name, in.URL, string(readOnly), now, now); err != nil {
				return fmt.Errorf("register gate %q: %w", name, err)
			}
		}
		out, err = scanGate(tx.QueryRow(`SELECT `+gateColumns+` FROM gates WHERE name = ?`, name))
		return err
	})
	return out, created, err
}

// Get returns the gate called name. Errors: invalid_argument, not_found.
func (s *Store) Get(ctx context.Context, name string) (*api.Gate, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	g, err := scanGate(s.db.Reader(ctx).QueryRow(`SELECT `+gateColumns+` FROM gates WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, gateNotFound(name)
	}
	if err != nil {
		return nil, fmt.Errorf("get gate %q: %w", name, err)
	}
	return g, nil
}

// List returns every gate, by name.
func (s *Store) List(ctx context.Context) ([]api.Gate, error) {
	rows, err := s.db.Reader(ctx).Query(`SELECT ` + gateColumns + ` FROM gates ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list gates: %w", err)
	}
	defer rows.Close()
	out := []api.Gate{}
	for rows.Next() {
		g, err := scanGate(rows)
		if err != nil {
			return nil, fmt.Errorf("list gates: %w", err)
		}
		out = append(out, *g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list gates: %w", err)
	}
	return out, nil
}

// Delete removes the gate called name. Errors: invalid_argument,
// not_found.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return s.db.Write(ctx, func(tx *db.Tx) error {
		res, err := tx.Exec(`DELETE FROM gates WHERE name = ?`, name)
		if err != nil {
			return fmt.Errorf("remove gate %q: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return gateNotFound(name)
		}
		return nil
	})
}
