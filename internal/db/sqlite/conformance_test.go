package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/planserver/planserver/internal/db/drivertest"
	"github.com/planserver/planserver/internal/disktest"
)

// TestConformance holds the SQLite driver to what every driver owes the
// stores (internal/db/drivertest), on files in the test's temp dir.
func TestConformance(t *testing.T) {
	drivertest.Exercise(t, drivertest.Harness{
		Fresh: func(tb testing.TB) string { return filepath.Join(tb.TempDir(), "planserver.db") },
		OnSmallDisk: func(tb testing.TB, size string) (string, string) {
			dir := disktest.SmallDisk(tb, size)
			return filepath.Join(dir, "planserver.db"), dir
		},
	})
}
