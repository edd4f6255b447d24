package db

// RoundTrips counts the round trips of write transactions so far, for
// tests outside the package (db_test).
func (db *DB) RoundTrips() int64 { return db.locks.trips.Load() }

// Migrated is migrated, for tests outside the package.
var Migrated = migrated

// MigratedWith is migratedWith, for tests outside the package.
var MigratedWith = migratedWith

// KeyedBatch is keyedBatch, for tests outside the package.
var KeyedBatch = keyedBatch
