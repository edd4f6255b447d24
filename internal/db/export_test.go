package db

// CopiedColumns lists the columns Copy copies of each table, for tests
// outside the package (db_test).
func CopiedColumns() map[string]string {
	out := map[string]string{}
	for _, c := range copyTables {
		out[c.name] = c.columns
	}
	return out
}
