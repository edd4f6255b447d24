package db_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planserver/planserver/internal/db"
	"github.com/planserver/planserver/internal/db/drivertest"
)

// TestCopyCoversTheSchema: Copy names every column of every table, so a
// migration that adds one cannot leave it behind in a copy. (Both engines
// have the same columns: TestPostgresSchemaMatchesSQLite.)
func TestCopyCoversTheSchema(t *testing.T) {
	d := drivertest.Open(t, filepath.Join(t.TempDir(), "schema.db"), db.Options{})
	rows, err := d.Reader(context.Background()).Query(`SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT IN ('sqlite_sequence', 'goose_db_version', 'event_retention') ORDER BY m.name, p.cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	schema := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		schema[table] = append(schema[table], col)
	}
	copied := map[string][]string{}
	for table, columns := range db.CopiedColumns() {
		copied[table] = strings.Split(strings.ReplaceAll(columns, " ", ""), ",")
	}
	for table, cols := range schema {
		got := slices.Clone(copied[table])
		slices.Sort(got)
		slices.Sort(cols)
		if !slices.Equal(got, cols) {
			t.Errorf("%s has columns %v; Copy copies %v", table, cols, got)
		}
	}
	for table := range copied {
		if _, ok := schema[table]; !ok {
			t.Errorf("Copy copies %s, which the schema does not have", table)
		}
	}
}
