package client_test

// The database engines the tests' servers open: each registers its driver
// with internal/db.
import (
	_ "github.com/planserver/planserver/internal/db/postgres"
	_ "github.com/planserver/planserver/internal/db/sqlite"
)
