package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sseEvent is one event read from a stream.
type sseEvent struct {
	Seq       int64  `json:"seq"`
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Plan      string `json:"plan"`
	Revision  int64  `json:"revision"`
}

// sseStream is an open event stream of a server, for the process tests.
type sseStream struct {
	resp   *http.Response
	br     *bufio.Reader
	cancel context.CancelFunc
}

// openSSE opens base's event stream with query and header pairs; it fails
// unless the server answers 200.
func openSSE(base, query string, header ...string) (*sseStream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/events"+query, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("stream %s: %d %s", query, resp.StatusCode, body)
	}
	return &sseStream{resp: resp, br: bufio.NewReader(resp.Body), cancel: cancel}, nil
}

func (s *sseStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next event, skipping comments and id-only blocks, or
// an error when the stream ends or within passes without one.
func (s *sseStream) next(within time.Duration) (sseEvent, error) {
	timer := time.AfterFunc(within, s.cancel)
	defer timer.Stop()
	var id, typ, data string
	for {
		line, err := s.br.ReadString('\n')
		if err != nil {
			return sseEvent{}, fmt.Errorf("no event within %s: %w", within, err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if data != "" {
				var e sseEvent
				if typ == "error" {
					return e, fmt.Errorf("error event: %s", data)
				}
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					return e, err
				}
				if strconv.FormatInt(e.Seq, 10) != id || e.Type != typ {
					return e, fmt.Errorf("id %s, event %s for %s", id, typ, data)
				}
				return e, nil
			}
			id, typ, data = "", "", ""
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
}
