// sse.js reads GET /v1/events as Server-Sent Events with fetch(), not
// EventSource: fetch can send the token in the Authorization header (an
// EventSource could only put it in the URL) and can see the status of a
// failed connection (401, 410) that an EventSource hides.

import { authHeaders } from './api.js';

// SSEParser turns chunks of an event stream into events, per the HTML
// standard's parsing rules: lines end in CR, LF or CRLF; "field: value";
// a blank line dispatches; comments start with ":"; an id line without
// data still moves the cursor.
//
// It stays hand-written, measured against eventsource-parser 4.1.3 (a
// maintained parser whose dist/ is plain ES modules a page can load as
// they are): fed the stream of e2e/feed.test.mjs, whole or byte by byte,
// that library gives the same events and retry, but its ids are
// ["7", "8", "12"] where this parser's are ["7", "8", "12", "13"]. It
// reports an id when its event is dispatched, at the blank line; this one
// reports it on its own line, and the feed test holds it to that. Moving
// to the library changes when the cursor moves, a behaviour of its own
// to decide on, not part of swapping a parser.
export class SSEParser {
  constructor(onEvent, onId, onRetry) {
    this.onEvent = onEvent;
    this.onId = onId;
    this.onRetry = onRetry;
    this.buf = '';
    this.reset();
  }

  reset() {
    this.type = '';
    this.data = [];
    this.hasData = false;
  }

  push(text) {
    this.buf += text;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      // A CR at the very end may be the first half of CRLF: wait for more.
      if (m[0] === '\r' && m.index === this.buf.length - 1) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') {
      if (this.hasData) this.onEvent({ type: this.type || 'message', data: this.data.join('\n') });
      this.reset();
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event': this.type = value; break;
      case 'data': this.data.push(value); this.hasData = true; break;
      case 'id': if (!value.includes('\0')) this.onId(value); break;
      case 'retry': if (/^\d+$/.test(value)) this.onRetry(Number(value)); break;
      default: break;
    }
  }
}

// outcomeOf says what a refusal means for the watch: its status when it
// came as an HTTP answer, or the problem's when it came as the stream's
// last event (`event: error`, sent when the token is revoked or expires
// while the stream is open, or when the cursor was pruned).
function outcomeOf(status) {
  if (status === 410) return 'expired';
  if (status === 401) return 'unauthorized';
  return status >= 500 || status === 429 || !status ? 'retry' : 'fatal';
}

// watch follows the feed with the given filters after cursor `after`,
// calling onEvent(event) for each event (the parsed JSON Event), and
// reconnecting with backoff, resuming with Last-Event-ID. onState gets
// 'connecting', 'live', 'retrying' or 'stopped'. onExpired is called
// (and the watch ends) when the cursor is older than the retained log
// (410): the page re-reads its state and watches again from there. A 401
// ends the watch too (onUnauthorized), whether the stream is refused at
// open or ends with an error event. An error event is never passed to
// onEvent: it is a problem document, not an Event. Returns {close}.
export function watch(params, { after, onEvent, onState = () => {}, onExpired = () => {}, onUnauthorized = () => {} }) {
  const ctl = new AbortController();
  let cursor = after === null || after === undefined ? null : String(after);
  let retryMs = 3000;
  let failures = 0;
  let attempts = 0;
  let closed = false;
  let idleTimer = null;

  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v) query.set(k, v);

  const sleep = (ms) => new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    ctl.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });

  async function connectOnce() {
    const headers = authHeaders(new Headers({ Accept: 'text/event-stream' }));
    const q = new URLSearchParams(query);
    if (cursor !== null) {
      // The first connection names its cursor in the query; reconnects
      // send the last id seen as Last-Event-ID, which the server prefers.
      if (attempts === 0) q.set('after', cursor);
      else headers.set('Last-Event-ID', cursor);
    }
    attempts += 1;
    // A stream that stops sending (not even its 15 s heartbeat) is dead:
    // abort it and reconnect.
    const conn = new AbortController();
    const abortConn = () => conn.abort();
    ctl.signal.addEventListener('abort', abortConn, { once: true });
    const armIdle = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => conn.abort(), 45000);
    };
    try {
      const res = await fetch(`/v1/events?${q}`, { headers, signal: conn.signal, cache: 'no-store' });
      if (!res.ok) return outcomeOf(res.status);
      onState('live');
      failures = 0;
      armIdle();
      let ended = null; // the outcome an error event named
      const parser = new SSEParser(
        (msg) => {
          if (!msg.data || ended) return;
          if (msg.type === 'error') {
            let problem = {};
            try {
              problem = JSON.parse(msg.data);
            } catch {
              // not a problem document: retry
            }
            ended = outcomeOf(Number(problem.status) || 0);
            return;
          }
          let ev;
          try {
            ev = JSON.parse(msg.data);
          } catch {
            return;
          }
          try {
            onEvent(ev);
          } catch (err) {
            console.error('event handler', err);
          }
        },
        (id) => { cursor = id; },
        (ms) => { retryMs = ms; },
      );
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        armIdle();
        parser.push(value);
        if (ended) {
          conn.abort();
          return ended;
        }
      }
      return 'retry';
    } catch (err) {
      if (ctl.signal.aborted) return 'closed';
      return 'retry';
    } finally {
      clearTimeout(idleTimer);
      ctl.signal.removeEventListener('abort', abortConn);
    }
  }

  (async () => {
    onState('connecting');
    while (!closed) {
      const outcome = await connectOnce();
      if (closed || outcome === 'closed') break;
      if (outcome === 'expired') { onState('stopped'); onExpired(); break; }
      if (outcome === 'unauthorized') { onState('stopped'); onUnauthorized(); break; }
      if (outcome === 'fatal') { onState('stopped'); break; }
      failures += 1;
      onState('retrying');
      // Exponential backoff from the server's retry, with jitter, at most 30 s.
      const delay = Math.min(30000, retryMs * 2 ** Math.min(failures - 1, 4));
      await sleep(delay / 2 + Math.random() * (delay / 2));
    }
  })();

  return {
    close() {
      closed = true;
      ctl.abort();
    },
  };
}
