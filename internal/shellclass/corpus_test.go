package shellclass

import (
	"os"
	"strings"
	"testing"
)

// corpusCase is one command of testdata/corpus.txt with its expected verdict.
type corpusCase struct {
	line     int
	readOnly bool
	reason   string // a substring of the expected reason
	command  string
}

// readCorpus parses testdata/corpus.txt: a case starts with a line
// "== ro" or "== no: REASON SUBSTRING" (for ro, an optional ": REASON"),
// and its command is every line up to the next "==" line, the final
// newline removed. Lines starting with "#" before a case header are
// comments.
func readCorpus(t testing.TB, path string) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	var cur *corpusCase
	var body []string
	flush := func() {
		if cur != nil {
			cur.command = strings.Join(body, "\n")
			cases = append(cases, *cur)
		}
		cur, body = nil, nil
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if header, ok := strings.CutPrefix(line, "== "); ok {
			flush()
			verdict, reason, _ := strings.Cut(header, ":")
			verdict = strings.TrimSpace(verdict)
			if verdict != "ro" && verdict != "no" {
				t.Fatalf("%s:%d: verdict %q: want ro or no", path, i+1, verdict)
			}
			cur = &corpusCase{line: i + 1, readOnly: verdict == "ro", reason: strings.TrimSpace(reason)}
			if cur.reason == "" {
				if !cur.readOnly {
					t.Fatalf("%s:%d: a not-read-only case needs its reason", path, i+1)
				}
				cur.reason = ReadOnlyReason
			}
			continue
		}
		if cur == nil {
			if line != "" && !strings.HasPrefix(line, "#") {
				t.Fatalf("%s:%d: text outside a case", path, i+1)
			}
			continue
		}
		body = append(body, line)
	}
	flush()
	return cases
}

// TestCorpus classifies every command of the corpus and checks the
// verdict and that the reason says what the corpus expects.
func TestCorpus(t *testing.T) {
	cases := readCorpus(t, "testdata/corpus.txt")
	table := DefaultTable()
	for _, tc := range cases {
		v := Classify(tc.command, table)
		if v.ReadOnly != tc.readOnly || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("corpus.txt:%d: %q\n  got  read-only=%v %q\n  want read-only=%v, reason containing %q",
				tc.line, tc.command, v.ReadOnly, v.Reason, tc.readOnly, tc.reason)
		}
	}
	if len(cases) < 300 {
		t.Errorf("the corpus has %d commands; it must keep at least 300", len(cases))
	}
}
