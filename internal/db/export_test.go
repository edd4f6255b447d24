package db

// Migrated is migrated, for tests outside the package.
var Migrated = migrated

// MigratedWith is migratedWith, for tests outside the package.
var MigratedWith = migratedWith

// KeyedBatch is keyedBatch, for tests outside the package.
var KeyedBatch = keyedBatch
