package main

// The database engines the benchmark opens itself (its PostgreSQL
// databases): each registers its driver with internal/db.
import (
	_ "github.com/planserver/planserver/internal/db/postgres"
	_ "github.com/planserver/planserver/internal/db/sqlite"
)
