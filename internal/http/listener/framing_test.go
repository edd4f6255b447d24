package listener

import (
	"slices"
	"testing"
)

// TestFramingFollowsRequests feeds pipelined requests in every split: the
// framing notes the one that names both headers, and only it.
func TestFramingFollowsRequests(t *testing.T) {
	stream := "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" +
		"POST /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n" +
		"POST /c HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
		"GET /d HTTP/1.1\r\nHost: h\r\n\r\n" +
		// Request targets with colons are request lines all the same.
		"POST http://h/e HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
		"POST /f?t=1:2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
		"GET /g HTTP/1.1\r\nHost: h\r\n\r\n"
	want := []bool{false, false, true, false, true, true, false}
	for split := 1; split < len(stream); split++ {
		var f framing
		f.feed([]byte(stream[:split]))
		f.feed([]byte(stream[split:]))
		var got []bool
		for range want {
			got = append(got, f.next())
		}
		if f.lost || !slices.Equal(got, want) || len(f.conflicts) != 0 || f.state != inHead {
			t.Fatalf("split at %d: conflicts %v, lost %v, state %d", split, got, f.lost, f.state)
		}
	}
}

// FuzzFraming: whatever bytes a client sends, following their framing
// never panics and never notes more requests than request lines.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nab"))
	f.Add([]byte("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\nffffffffffffffff\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr framing
		fr.feed(b)
		for fr.next() || len(fr.conflicts) > 0 {
		}
	})
}
