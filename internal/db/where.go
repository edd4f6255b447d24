package db

import "strings"

// Where collects the conditions of a query's WHERE clause, joined with
// AND, and their arguments in order: the one way the stores build a
// query from optional filters.
type Where struct {
	conds []string
	args  []any
}

// Add adds cond, with its ? placeholders' arguments.
func (w *Where) Add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// Equal adds "column = ?" when value is set (a filter left empty filters
// nothing).
func (w *Where) Equal(column, value string) {
	if value != "" {
		w.Add(column+" = ?", value)
	}
}

// SQL is the conditions joined with AND.
func (w *Where) SQL() string { return strings.Join(w.conds, " AND ") }

// Args are the conditions' arguments, then extra (a LIMIT, say).
func (w *Where) Args(extra ...any) []any { return append(append([]any(nil), w.args...), extra...) }
