package postgres

import (
	"testing"

	"github.com/planserver/planserver/internal/db/drivertest"
	"github.com/planserver/planserver/internal/dbtest"
)

// TestConformance holds the PostgreSQL driver to what every driver owes
// the stores (internal/db/drivertest), on a database of its own per test
// on the server PLANSERVER_TEST_POSTGRES names.
func TestConformance(t *testing.T) {
	dbtest.RequirePostgres(t)
	drivertest.Exercise(t, drivertest.Harness{Fresh: dbtest.Fresh, OnSmallDisk: dbtest.OnSmallDisk})
}
