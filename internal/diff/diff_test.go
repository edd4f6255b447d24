package diff

import (
	"fmt"
	"strings"
	"testing"
)

func TestHunksRebuildTheNewText(t *testing.T) {
	cases := []struct{ a, b string }{
		{"", ""},
		{"a\nb\nc\n", "a\nb\nc\n"},
		{"", "a\nb\n"},
		{"a\nb\n", ""},
		{"a\nb\nc\n", "a\nx\nc\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n2\nX\n4\n5\n6\n7\n8\n9\n10\nY\n12\n"},
		{"a\nb\nc\nd\n", "b\nc\nd\ne\n"},
		{"x\n", "y\n"},
		{"# Plan\n1. one\n2. two\n", "# Plan\n1. one\n1b. inserted\n2. two\n3. three\n"},
	}
	for _, c := range cases {
		a, b := Lines(c.a), Lines(c.b)
		hunks := Hunks(a, b)
		if (len(hunks) == 0) != (c.a == c.b) {
			t.Errorf("%q → %q: %d hunks", c.a, c.b, len(hunks))
		}
		// Rebuild b: copy a up to each hunk, then the hunk's ' ' and '+'
		// lines, checking its ' ' and '-' lines against a.
		var out []string
		ai := 0
		for _, h := range hunks {
			start := h.OldStart - 1
			if h.OldLines == 0 {
				start = ai
			}
			out = append(out, a[ai:start]...)
			ai = start
			for _, l := range h.Lines {
				switch l.Op {
				case " ", "-":
					if ai >= len(a) || a[ai] != l.Text {
						t.Fatalf("%q → %q: hunk line %q does not match old line %d", c.a, c.b, l.Text, ai+1)
					}
					ai++
					if l.Op == " " {
						out = append(out, l.Text)
					}
				case "+":
					out = append(out, l.Text)
				}
			}
		}
		out = append(out, a[ai:]...)
		if strings.Join(out, "\n") != strings.Join(b, "\n") {
			t.Errorf("%q → %q rebuilt as %q", c.a, c.b, out)
		}
	}
}

func TestUnifiedFormat(t *testing.T) {
	a := Lines("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
	b := Lines("1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n")
	got := Unified("plan@1", "plan@2", Hunks(a, b))
	want := "--- plan@1\n+++ plan@2\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
	if got != want {
		t.Errorf("unified:\n%s\nwant:\n%s", got, want)
	}
}

// TestLargeUnrelatedTextsStayCheap: two large texts with nothing in
// common are one replacement, found without an unbounded search.
func TestLargeUnrelatedTextsStayCheap(t *testing.T) {
	var a, b []string
	for i := 0; i < 20000; i++ {
		a = append(a, fmt.Sprintf("a%d", i))
		b = append(b, fmt.Sprintf("b%d", i))
	}
	hunks := Hunks(a, b)
	if len(hunks) != 1 || hunks[0].OldLines != len(a) || hunks[0].NewLines != len(b) {
		t.Fatalf("%d hunks", len(hunks))
	}
}
