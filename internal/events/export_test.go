package events

// SetPruneBatch makes Prune delete at most n events per transaction until
// the returned function restores the default.
func SetPruneBatch(n int) (restore func()) {
	old := pruneBatch
	pruneBatch = n
	return func() { pruneBatch = old }
}

// TailHead is the head of t's newest generation, or -1 when it has none.
func TailHead(t *Tail) int64 {
	g := t.gen.Load()
	if g == nil {
		return -1
	}
	return g.head
}

// TailFrom is the cursor from which t's newest generation holds every
// event, or -1 when it has none.
func TailFrom(t *Tail) int64 {
	g := t.gen.Load()
	if g == nil {
		return -1
	}
	return g.from
}

// TailChecked reports whether t's newest generation holds the re-check of
// every key.
func TailChecked(t *Tail, keys ...string) bool {
	g := t.gen.Load()
	if g == nil {
		return false
	}
	for _, k := range keys {
		if _, ok := g.checks[k]; !ok {
			return false
		}
	}
	return true
}
