package main

// The database engines this binary serves: each registers its driver with
// internal/db, and db.Open picks the one that takes --db.
import (
	_ "github.com/planserver/planserver/internal/db/postgres"
	_ "github.com/planserver/planserver/internal/db/sqlite"
)
