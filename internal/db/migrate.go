package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/planserver/planserver/migrations"
)

// ErrSchemaTooNew is returned when the database was migrated by a newer
// planserver than this binary.
var ErrSchemaTooNew = errors.New("database schema is newer than this binary")

func (db *DB) provider(logOut io.Writer) (*goose.Provider, error) {
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if logOut != nil {
		opts = append(opts, goose.WithSlog(slog.New(slog.NewTextHandler(logOut, nil))))
	}
	m := db.eng.Migrations()
	if m.Lock != nil {
		opts = append(opts, goose.WithSessionLocker(m.Lock))
	}
	return goose.NewProvider(m.Dialect, db.eng.Writer(), m.Files, opts...)
}

// SchemaVersions reports the version the database is at and the newest
// version this binary knows.
func (db *DB) SchemaVersions(ctx context.Context) (current, known int64, err error) {
	p, err := db.provider(nil)
	if err != nil {
		return 0, 0, err
	}
	current, err = p.GetDBVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	sources := p.ListSources()
	if len(sources) > 0 {
		known = sources[len(sources)-1].Version
	}
	return current, known, nil
}

// MigrateUp applies every pending migration. It refuses a database whose
// schema is newer than this binary, rather than running against columns it
// does not know.
func (db *DB) MigrateUp(ctx context.Context, logOut io.Writer) (from, to int64, err error) {
	current, known, err := db.SchemaVersions(ctx)
	if err != nil {
		return 0, 0, err
	}
	if current > known {
		return current, current, fmt.Errorf("%w: %s is at schema version %d, this planserver knows versions up to %d; run a planserver at least as new as the one that last migrated it",
			ErrSchemaTooNew, db.Path, current, known)
	}
	p, err := db.provider(logOut)
	if err != nil {
		return 0, 0, err
	}
	if _, err := p.Up(ctx); err != nil {
		return current, current, fmt.Errorf("migrate up: %w", err)
	}
	return current, known, nil
}

// MigrateDown rolls back the newest applied migration.
func (db *DB) MigrateDown(ctx context.Context, logOut io.Writer) (int64, error) {
	p, err := db.provider(logOut)
	if err != nil {
		return 0, err
	}
	res, err := p.Down(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate down: %w", err)
	}
	return res.Source.Version, nil
}

// MigrationStatus is one row of `planserver migrate status`.
type MigrationStatus struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// MigrateStatus lists every known migration and whether it is applied.
func (db *DB) MigrateStatus(ctx context.Context) ([]MigrationStatus, error) {
	p, err := db.provider(nil)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate status: %w", err)
	}
	out := make([]MigrationStatus, 0, len(st))
	for _, s := range st {
		out = append(out, MigrationStatus{
			Version:   s.Source.Version,
			Name:      s.Source.Path,
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	return out, nil
}

// AppliedVersion reads the schema version from the read pool, without
// touching the writer connection, so health checks never queue behind
// writes.
func (db *DB) AppliedVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.reader.QueryRowContext(ctx,
		`SELECT version_id FROM goose_db_version WHERE is_applied ORDER BY id DESC LIMIT 1`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// KnownVersion is the newest schema version this binary carries. Versions
// mean the same schema on every engine, so every engine's migrations end
// at the same one (TestEnginesEndAtTheSameVersion).
func KnownVersion() int64 { return newestVersion(migrations.SQLite) }

// newestVersion is the highest version among the migration files of fsys.
func newestVersion(fsys fs.FS) int64 {
	names, _ := fs.Glob(fsys, "*.sql") // the pattern is valid
	var known int64
	for _, name := range names {
		digits, _, _ := strings.Cut(name, "_")
		if v, err := strconv.ParseInt(digits, 10, 64); err == nil && v > known {
			known = v
		}
	}
	return known
}
