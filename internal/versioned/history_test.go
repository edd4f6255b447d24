package versioned

import (
	"errors"
	"testing"
)

// TestCompareDefaults: a bound left out defaults as GET …/diff promises
// (to the newest readable revision; from the newest readable one below
// to, or 0), the history is read only for a bound left out, and to is
// read before from.
func TestCompareDefaults(t *testing.T) {
	contents := map[int64]string{2: "two\n", 5: "five\n", 7: "seven\n"}
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name             string
		from, to         *int64
		wantFrom, wantTo int64
		wantListed       bool
	}{
		{"both left out", nil, nil, 5, 7, true},
		{"to only", nil, n(5), 2, 5, true},
		{"to the oldest", nil, n(2), 0, 2, true},
		{"from only", n(2), nil, 2, 7, true},
		{"both given", n(0), n(5), 0, 5, false},
	} {
		listed := false
		var read []int64
		got, err := Compare(c.from, c.to,
			func() ([]int64, error) { listed = true; return []int64{7, 5, 2}, nil },
			func(rev int64) (string, error) { read = append(read, rev); return contents[rev], nil })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.From != c.wantFrom || got.To != c.wantTo || got.A != contents[c.wantFrom] || got.B != contents[c.wantTo] {
			t.Errorf("%s: got %+v, want %d..%d", c.name, got, c.wantFrom, c.wantTo)
		}
		if listed != c.wantListed {
			t.Errorf("%s: history listed = %v, want %v", c.name, listed, c.wantListed)
		}
		if len(read) == 0 || read[0] != c.wantTo {
			t.Errorf("%s: read %v, want %d first", c.name, read, c.wantTo)
		}
	}
	missing := errors.New("not kept")
	_, err := Compare(nil, nil, func() ([]int64, error) { return nil, missing }, nil)
	if !errors.Is(err, missing) {
		t.Errorf("a history that cannot be read: got %v", err)
	}
}

// TestComparedDiff: two equal texts differ by no hunks, listed as empty
// (the JSON answer carries [] rather than null).
func TestComparedDiff(t *testing.T) {
	d := Compared{From: 1, To: 2, A: "a\n", B: "a\n"}.Diff()
	if d.Hunks == nil || len(d.Hunks) != 0 || d.From != 1 || d.To != 2 {
		t.Errorf("got %+v", d)
	}
	d = Compared{From: 0, To: 1, B: "a\n"}.Diff()
	if len(d.Hunks) != 1 {
		t.Errorf("got %+v", d)
	}
}
