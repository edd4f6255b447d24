package events

// SetPruneBatch makes Prune delete at most n events per transaction until
// the returned function restores the default.
func SetPruneBatch(n int) (restore func()) {
	old := pruneBatch
	pruneBatch = n
	return func() { pruneBatch = old }
}
