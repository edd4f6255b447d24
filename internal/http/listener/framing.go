package listener

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// A request that carries both Content-Length and Transfer-Encoding is the
// classic request-smuggling shape: a proxy in front may frame it by one
// header and this server by the other, and then read the rest of the body
// as the next request. RFC 9112 §6.1 lets a server refuse it and says it
// must close the connection either way. net/http accepts it (it drops
// Content-Length and reads the chunks; TestNetHTTPAcceptsAmbiguousFraming
// shows it), and no handler can see it did: the header is gone. So the
// Listener's connections follow the framing of the bytes they read,
// request by request, and remember which requests named both;
// AmbiguousFraming tells the server, which answers those 400 and closes
// the connection.

// framing follows HTTP/1.1 message framing on the bytes a connection
// reads, noting for each request head whether it names both
// Content-Length and Transfer-Encoding. It frames bodies as net/http does
// (chunked wins), so it stays in step with the requests net/http serves.
// If it ever loses track (bytes it cannot frame), it stops noting: net/http
// then refuses the request and closes the connection itself.
type framing struct {
	mu        sync.Mutex
	conflicts []bool // one per request head seen and not yet served
	state     framingState
	line      []byte // the line being read (head lines, chunk sizes)
	// inRequest: the current head's request line has been read, so the
	// lines up to the blank one are its header fields.
	inRequest bool
	hasLength bool
	hasTE     bool
	chunked   bool
	length    int64
	remaining int64 // body or chunk bytes still to come
	lost      bool
}

type framingState int

const (
	inHead framingState = iota
	inBody
	inChunkSize
	inChunkData
	inChunkEnd
	inTrailers
)

// maxFramedLine bounds a line the tracker buffers; net/http refuses
// longer heads (431) and closes the connection.
const maxFramedLine = 128 << 10

// feed follows the framing of b, the next bytes read from the connection.
func (f *framing) feed(b []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(b) > 0 && !f.lost {
		switch f.state {
		case inBody, inChunkData:
			n := min(int64(len(b)), f.remaining)
			b, f.remaining = b[n:], f.remaining-n
			if f.remaining == 0 {
				if f.state == inBody {
					f.state = inHead
				} else {
					f.state = inChunkEnd
				}
			}
		default:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				f.line = append(f.line, b...)
				if len(f.line) > maxFramedLine {
					f.lost = true
				}
				return
			}
			f.line = append(f.line, b[:i]...)
			b = b[i+1:]
			f.endLine(strings.TrimSuffix(string(f.line), "\r"))
			f.line = f.line[:0]
		}
	}
}

// endLine handles one whole line in the states that read lines.
func (f *framing) endLine(line string) {
	switch f.state {
	case inHead:
		if line == "" {
			if f.inRequest {
				f.inRequest = false
				f.headEnd()
			}
			// A blank line before a request line is skipped, as net/http
			// skips it.
			return
		}
		f.headLine(line)
	case inChunkSize:
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(strings.TrimSpace(size), 16, 64)
		if err != nil || n < 0 {
			f.lost = true
			return
		}
		if n == 0 {
			f.state = inTrailers
			return
		}
		f.state, f.remaining = inChunkData, n
	case inChunkEnd:
		f.state = inChunkSize // the CRLF after a chunk's data
	case inTrailers:
		if line == "" {
			f.state = inHead
		}
	}
}

// headLine handles one line of a request head: the first is the request
// line, which starts a new request (whatever it holds: a target like
// http://host/x or /x?t=1:2 has colons too), and of the header fields
// after it the framing ones are noted.
func (f *framing) headLine(line string) {
	if !f.inRequest {
		f.inRequest = true
		f.hasLength, f.hasTE, f.chunked, f.length = false, false, false, 0
		f.conflicts = append(f.conflicts, false)
		return
	}
	name, value, _ := strings.Cut(line, ":")
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "content-length":
		f.hasLength = true
		f.length, _ = strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	case "transfer-encoding":
		f.hasTE = true
		codings := strings.Split(strings.ToLower(value), ",")
		f.chunked = strings.TrimSpace(codings[len(codings)-1]) == "chunked"
	}
	if f.hasLength && f.hasTE && len(f.conflicts) > 0 {
		f.conflicts[len(f.conflicts)-1] = true
	}
}

// headEnd starts reading the body the head announced.
func (f *framing) headEnd() {
	switch {
	case f.hasTE && f.chunked:
		f.state = inChunkSize
	case f.hasTE:
		f.lost = true // net/http refuses other codings and closes
	case f.length > 0:
		f.state, f.remaining = inBody, f.length
	}
}

// next reports whether the oldest request not yet served named both
// framing headers, and forgets it.
func (f *framing) next() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.conflicts) == 0 {
		return false
	}
	c := f.conflicts[0]
	f.conflicts = f.conflicts[1:]
	return c
}

type connKey struct{}

// ConnContext puts the connection into its requests' contexts, so
// AmbiguousFraming finds what the connection's framing noted. Set it as
// the http.Server's ConnContext.
func (l *Listener) ConnContext(ctx context.Context, c net.Conn) context.Context {
	if pc, ok := c.(*conn); ok {
		return context.WithValue(ctx, connKey{}, pc)
	}
	return ctx
}

// AmbiguousFraming reports whether r named both Content-Length and
// Transfer-Encoding, for a server that answers it 400 and closes the
// connection. Call it exactly once for each request served: the
// connection notes its requests in order, and each call takes the oldest
// note. Requests that did not come through a Listener (and its
// ConnContext) are never ambiguous.
func AmbiguousFraming(r *http.Request) bool {
	c, ok := r.Context().Value(connKey{}).(*conn)
	return ok && c.framing.next()
}
