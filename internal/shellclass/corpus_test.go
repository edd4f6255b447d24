package shellclass

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// corpusCase is one line of testdata/corpus.txt.
type corpusCase struct {
	line    int
	command string
	writes  bool
	wReason string // a substring of Writes' reason, when it writes
	allowed bool
	sReason string // a substring of Strict's reason, when it refuses
}

// readCorpus parses testdata/corpus.txt: one case a line, three fields
// separated by tabs:
//
//	COMMAND <TAB> - | w: REASON <TAB> ok | no: REASON
//
// COMMAND is the text as it is, or q"…" for a Go-quoted string (a command
// with a newline or a tab). "-" says Writes does not call it a writer,
// "w: REASON" that it does with a reason containing REASON; "ok" says
// Strict allows it, "no: REASON" that it refuses with a reason containing
// REASON. Blank lines and lines starting with # are comments.
func readCorpus(t testing.TB, path string) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			t.Fatalf("%s:%d: want 3 tab-separated fields, got %d", path, i+1, len(fields))
		}
		tc := corpusCase{line: i + 1, command: fields[0]}
		if q, ok := strings.CutPrefix(fields[0], "q"); ok && strings.HasPrefix(q, `"`) {
			if tc.command, err = strconv.Unquote(q); err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
		}
		switch w := fields[1]; {
		case w == "-":
		case strings.HasPrefix(w, "w: ") && len(w) > 3:
			tc.writes, tc.wReason = true, w[3:]
		default:
			t.Fatalf("%s:%d: Writes field %q: want - or w: REASON", path, i+1, w)
		}
		switch s := fields[2]; {
		case s == "ok":
			tc.allowed = true
		case strings.HasPrefix(s, "no: ") && len(s) > 4:
			tc.sReason = s[4:]
		default:
			t.Fatalf("%s:%d: Strict field %q: want ok or no: REASON", path, i+1, s)
		}
		if tc.writes && tc.allowed {
			t.Fatalf("%s:%d: a writer cannot be allowed by Strict", path, i+1)
		}
		cases = append(cases, tc)
	}
	return cases
}

// TestCorpus runs both jobs over every command of the corpus and checks
// the verdicts and that each reason says what the corpus expects.
func TestCorpus(t *testing.T) {
	cases := readCorpus(t, "testdata/corpus.txt")
	table := DefaultTable()
	for _, tc := range cases {
		writes, why := Writes(tc.command)
		if writes != tc.writes || !strings.Contains(why, tc.wReason) {
			t.Errorf("corpus.txt:%d: Writes(%q) = %v %q, want %v with %q", tc.line, tc.command, writes, why, tc.writes, tc.wReason)
		}
		v := Strict(tc.command, table)
		if v.Allowed != tc.allowed || (!tc.allowed && !strings.Contains(v.Reason, tc.sReason)) {
			t.Errorf("corpus.txt:%d: Strict(%q) = %v %q, want %v with %q", tc.line, tc.command, v.Allowed, v.Reason, tc.allowed, tc.sReason)
		}
		if v.Allowed && v.Reason != StrictReason {
			t.Errorf("corpus.txt:%d: allowed with reason %q", tc.line, v.Reason)
		}
		if !writes && why != "" {
			t.Errorf("corpus.txt:%d: Writes says no with a reason %q", tc.line, why)
		}
	}
	if len(cases) < 400 {
		t.Errorf("the corpus has %d commands; it must keep at least 400", len(cases))
	}
}
