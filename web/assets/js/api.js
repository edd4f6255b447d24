// api.js talks to /v1. The token lives in sessionStorage (gone when the
// tab closes) and travels only in the Authorization header: never in a URL,
// where logs, history and Referer headers would keep it.

const TOKEN_KEY = 'planserver.token';

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

// ApiError is a problem+json answer (RFC 9457), or a network failure
// (status 0).
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || (status === 0 ? 'network' : 'unknown');
    this.problem = problem;
  }
  get currentRevision() {
    return this.problem.current_revision;
  }
}

// onUnauthenticated is called when a request is answered 401: the token
// expired or was revoked. The app replaces it with its sign-in screen.
let unauthenticatedHandler = () => {};
export function onUnauthenticated(fn) {
  unauthenticatedHandler = fn;
}

// csrf is the CSRF token of a person signed in through the identity
// provider (GET /v1/me): the browser sends the sign-in cookie by itself,
// and every request that changes anything must carry this token too.
let csrf = '';
export function setCSRF(token) {
  csrf = token || '';
}

export function authHeaders(headers = new Headers()) {
  const token = getToken();
  if (token) headers.set('Authorization', `Bearer ${token}`);
  return headers;
}

// etagRevision reads a revision from an ETag header ("7" → 7).
export function etagRevision(etag) {
  const m = /^"?(\d+)"?$/.exec(etag || '');
  return m ? Number(m[1]) : null;
}

// request sends one call. body is sent as JSON. It resolves to
// {status, data, etag, revision, seq} and rejects with ApiError.
export async function request(path, { method = 'GET', body, headers = {}, signal, token } = {}) {
  const h = new Headers(headers);
  if (!h.has('Accept')) h.set('Accept', 'application/json');
  if (token !== undefined) {
    if (token) h.set('Authorization', `Bearer ${token}`);
  } else {
    authHeaders(h);
  }
  if (csrf && method !== 'GET' && method !== 'HEAD') h.set('X-CSRF-Token', csrf);
  let payload;
  if (body !== undefined) {
    h.set('Content-Type', 'application/json');
    payload = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, { method, headers: h, body: payload, signal, cache: 'no-store', redirect: 'error' });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, { title: 'The server cannot be reached', detail: String(err.message || err) });
  }
  const ct = res.headers.get('Content-Type') || '';
  let data = null;
  if (res.status !== 204 && res.status !== 304) {
    const text = await res.text();
    if (ct.includes('json') && text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = null;
      }
    } else {
      data = text;
    }
  }
  if (!res.ok && res.status !== 304) {
    const problem = data && typeof data === 'object' ? data : { title: `HTTP ${res.status}` };
    const err = new ApiError(res.status, problem);
    if (res.status === 401 && token === undefined) unauthenticatedHandler(err);
    throw err;
  }
  const etag = res.headers.get('ETag');
  const seq = res.headers.get('X-Event-Seq');
  return {
    status: res.status,
    data,
    etag,
    revision: etagRevision(etag),
    seq: seq === null ? null : Number(seq),
  };
}

export const get = (path, opts) => request(path, opts);

// listAll follows next_page_token until the end (or max items) and
// returns {items, seq}: seq is the X-Event-Seq of the first page, read
// before any of the snapshot, so watching the feed after it misses nothing.
export async function listAll(path, key, { max = 5000, pageSize = 200, signal } = {}) {
  const items = [];
  let seq = null;
  let token = '';
  const sep = path.includes('?') ? '&' : '?';
  do {
    const url = `${path}${sep}limit=${pageSize}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`;
    const res = await request(url, { signal });
    if (seq === null) seq = res.seq;
    items.push(...(res.data[key] || []));
    token = res.data.next_page_token || '';
  } while (token && items.length < max);
  return { items, seq };
}

export const enc = encodeURIComponent;
