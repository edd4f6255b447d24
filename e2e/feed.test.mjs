// The console's event-feed client (web/assets/js/sse.js) on its own, in
// Node: the streaming parser against the corner cases of the SSE format,
// and watch() against the real server across a restart, where it must
// resume with Last-Event-ID and neither miss nor repeat an event.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, eventually } from './harness.mjs';

// sse.js reads the token from sessionStorage, a browser global.
const store = new Map();
globalThis.sessionStorage = {
  getItem: (k) => (store.has(k) ? store.get(k) : null),
  setItem: (k, v) => store.set(k, String(v)),
  removeItem: (k) => store.delete(k),
};
const { SSEParser, watch } = await import('../web/assets/js/sse.js');

// The console's fetches are relative to its page; in Node they resolve
// against the server under test.
let base = 'http://127.0.0.1/';
const nodeFetch = globalThis.fetch;
globalThis.fetch = (url, opts) => nodeFetch(new URL(url, base), opts);

function parse(chunks) {
  const events = [];
  const ids = [];
  const retries = [];
  const p = new SSEParser((e) => events.push(e), (id) => ids.push(id), (ms) => retries.push(ms));
  for (const c of chunks) p.push(c);
  return { events, ids, retries };
}

test('SSEParser: fields, comments, multi-line data, every line ending, any chunking', () => {
  const stream = 'retry: 3000\n\n: heartbeat\n\nid: 7\nevent: session.created\ndata: {"seq":7}\n\n' +
    'id: 8\r\nevent: plan.updated\r\ndata: line one\r\ndata: line two\r\n\r\n' +
    ': heartbeat\rid: 12\r\r' +
    'data:no space\n\nevent: x\nid: 13\n';
  const whole = parse([stream]);
  assert.deepEqual(whole.events, [
    { type: 'session.created', data: '{"seq":7}' },
    { type: 'plan.updated', data: 'line one\nline two' },
    { type: 'message', data: 'no space' },
  ]);
  // An id line without data (the heartbeat that moves the cursor past
  // filtered events) moves the cursor and fires nothing; an event left
  // without its blank line is not dispatched yet.
  assert.deepEqual(whole.ids, ['7', '8', '12', '13']);
  assert.deepEqual(whole.retries, [3000]);
  // Byte by byte (a CRLF split in two included) gives the same.
  const bytes = parse([...stream]);
  assert.deepEqual(bytes.events, whole.events);
  assert.deepEqual(bytes.ids, whole.ids);
});

test('watch() resumes after a server restart with Last-Event-ID: nothing missed, nothing repeated', async () => {
  let srv = await startServer();
  const { dir, addr } = srv;
  base = srv.url;
  const api = () => srv.api();
  await api().must(201, 'POST', '/v1/sessions', { id: 'before-1' });
  const seen = [];
  const states = [];
  // Start after the first event, as a page does from its X-Event-Seq.
  const w = watch({ types: 'session.created' }, {
    after: 1,
    onEvent: (ev) => seen.push(`${ev.seq} ${ev.session_id}`),
    onState: (s) => states.push(s),
  });
  try {
    await api().must(201, 'POST', '/v1/sessions', { id: 'before-2' });
    await eventually(() => assert.deepEqual(seen, ['2 before-2']));
    // SIGTERM ends the stream; the watcher retries with backoff while the
    // server is down, and reconnects to the new one on the same database.
    await srv.stop({ keep: true });
    await eventually(() => assert.equal(states.at(-1), 'retrying'));
    srv = await startServer({ dir, addr });
    await api().must(201, 'POST', '/v1/sessions', { id: 'after' });
    await eventually(() => assert.deepEqual(seen, ['2 before-2', '3 after']), 20000);
    assert.ok(states.includes('live'));
  } finally {
    w.close();
    await srv.stop();
  }
});
