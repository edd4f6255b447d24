// Package diff compares two texts line by line: the hunks a reviewer reads
// (Myers' shortest edit script, with context) and their unified form. It
// is pure: plans are compared here, stored elsewhere.
package diff

import (
	"fmt"
	"strings"

	"github.com/planserver/planserver/api"
)

// Context is how many unchanged lines surround each change in a hunk.
const Context = 3

// maxEdits bounds the work of the shortest-edit search (its memory grows
// with the square of the edits). Two texts that differ in more lines than
// this are shown as one replacement of everything, which is what a reader
// would make of them anyway; the bound keeps hostile inputs (two
// unrelated megabyte plans) cheap.
const maxEdits = 1000

// Lines splits text into lines, keeping nothing of the newlines; a final
// newline ends the last line rather than starting an empty one.
func Lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// op is one line of an edit script: ' ', '-' or '+', and the index of the
// line in a (for ' ' and '-') or b (for '+').
type op struct {
	kind byte
	a, b int
}

// script returns the shortest edit script from a to b (Myers' greedy
// algorithm), or a full replacement when it needs more than maxEdits.
func script(a, b []string) []op {
	n, m := len(a), len(b)
	// Common prefix and suffix cost nothing and shorten the search.
	pre := 0
	for pre < n && pre < m && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < n-pre && suf < m-pre && a[n-1-suf] == b[m-1-suf] {
		suf++
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', i, i})
	}
	ops = append(ops, middle(a[pre:n-suf], b[pre:m-suf], pre)...)
	for i := 0; i < suf; i++ {
		ops = append(ops, op{' ', n - suf + i, m - suf + i})
	}
	return ops
}

// middle is the Myers search on a and b, whose lines start at offset in
// the full texts.
func middle(a, b []string, offset int) []op {
	n, m := len(a), len(b)
	replace := func() []op {
		ops := make([]op, 0, n+m)
		for i := 0; i < n; i++ {
			ops = append(ops, op{'-', offset + i, 0})
		}
		for j := 0; j < m; j++ {
			ops = append(ops, op{'+', 0, offset + j})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return replace()
	}
	max := n + m
	if max > maxEdits {
		max = maxEdits
	}
	v := make([]int, 2*max+2)
	var trace [][]int
	found := -1
	for d := 0; d <= max && found < 0; d++ {
		// Keep only the diagonals the backtrack reads: -d..d.
		trace = append(trace, append([]int(nil), v[max-d:max+d+1]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[max+k-1] < v[max+k+1]) {
				x = v[max+k+1]
			} else {
				x = v[max+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[max+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return replace()
	}
	// Walk the trace back from (n, m) to (0, 0).
	var rev []op
	x, y := n, m
	for d := found; d > 0; d-- {
		at := func(k int) int { return trace[d][k+d] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			rev = append(rev, op{' ', offset + x, offset + y})
		}
		if x == prevX {
			y--
			rev = append(rev, op{'+', 0, offset + y})
		} else {
			x--
			rev = append(rev, op{'-', offset + x, 0})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, op{' ', offset + x, offset + y})
	}
	ops := make([]op, len(rev))
	for i := range rev {
		ops[i] = rev[len(rev)-1-i]
	}
	return ops
}

// Hunks compares a and b and returns the changed regions with Context
// lines around each; none when the texts are equal.
func Hunks(a, b []string) []api.DiffHunk {
	ops := script(a, b)
	var hunks []api.DiffHunk
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk starts Context lines before the first change and runs to
		// Context lines after the last change that is within 2·Context of
		// the next.
		start := max(0, i-Context)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*Context {
				end = min(end+Context, len(ops))
				break
			}
			end = run
		}
		hunks = append(hunks, hunk(a, b, ops[start:end]))
		i = end
	}
	return hunks
}

func hunk(a, b []string, ops []op) api.DiffHunk {
	h := api.DiffHunk{Lines: make([]api.DiffLine, 0, len(ops))}
	firstA, firstB := -1, -1
	for _, o := range ops {
		switch o.kind {
		case ' ':
			h.OldLines++
			h.NewLines++
			if firstA < 0 {
				firstA = o.a
			}
			if firstB < 0 {
				firstB = o.b
			}
			h.Lines = append(h.Lines, api.DiffLine{Op: " ", Text: a[o.a]})
		case '-':
			h.OldLines++
			if firstA < 0 {
				firstA = o.a
			}
			h.Lines = append(h.Lines, api.DiffLine{Op: "-", Text: a[o.a]})
		case '+':
			h.NewLines++
			if firstB < 0 {
				firstB = o.b
			}
			h.Lines = append(h.Lines, api.DiffLine{Op: "+", Text: b[o.b]})
		}
	}
	// Line numbers are 1-based. A side with no lines in a hunk is an
	// empty text (otherwise the hunk's context would be on it), which
	// unified diffs write as line 0.
	h.OldStart, h.NewStart = firstA+1, firstB+1
	if h.OldLines == 0 {
		h.OldStart = 0
	}
	if h.NewLines == 0 {
		h.NewStart = 0
	}
	return h
}

// Unified writes hunks as a unified diff between texts named from and to.
func Unified(from, to string, hunks []api.DiffHunk) string {
	if len(hunks) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, to)
	for _, h := range hunks {
		fmt.Fprintf(&b, "@@ -%s +%s @@\n", span(h.OldStart, h.OldLines), span(h.NewStart, h.NewLines))
		for _, l := range h.Lines {
			b.WriteString(l.Op)
			b.WriteString(l.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func span(start, lines int) string {
	if lines == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, lines)
}
