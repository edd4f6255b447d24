// app.js starts the review console: it finds out how the server
// authenticates, signs the user in, and routes /ui/... paths to views.
// Each view renders into <main> and returns a cleanup function that
// closes its event stream when the user navigates away.

import { request, getToken, setToken, setCSRF, onUnauthenticated, ApiError } from './api.js';
import { h, clear } from './dom.js';
import { watch } from './sse.js';
import { inboxView } from './views/inbox.js';
import { sessionsView, sessionView } from './views/session.js';
import { reviewView } from './views/review.js';
import { plansView, planView } from './views/plans.js';
import { webhooksView, webhookView } from './views/webhooks.js';
import { signinsView } from './views/signins.js';

const main = document.getElementById('main');
const who = document.getElementById('who');
const feed = document.getElementById('feed');

const routes = [
  [/^\/ui\/?$/, inboxView, 'inbox'],
  [/^\/ui\/sessions\/?$/, sessionsView, 'sessions'],
  [/^\/ui\/sessions\/([^/]+)\/review\/?$/, reviewView, 'inbox'],
  [/^\/ui\/sessions\/([^/]+)\/?$/, sessionView, 'sessions'],
  [/^\/ui\/plans\/?$/, plansView, 'plans'],
  [/^\/ui\/plans\/([^/]+)\/?$/, planView, 'plans'],
  [/^\/ui\/webhooks\/?$/, webhooksView, 'webhooks'],
  [/^\/ui\/webhooks\/([^/]+)\/?$/, webhookView, 'webhooks'],
  [/^\/ui\/signins\/?$/, signinsView, 'signins'],
];

// app is what views get: who is signed in and helpers.
const app = {
  // role is admin, viewer, agent or reviewer; authNone when the server has
  // no tokens. person is who signed in through the identity provider
  // (GET /v1/me), null for a token.
  role: null,
  authNone: false,
  person: null,
  // signIn is where people sign in (the 401's sign_in), '' when the
  // server takes tokens only.
  signIn: '',
  get canWrite() {
    return this.role === 'admin' || this.role === 'reviewer';
  },
  navigate,
  // watch follows the event feed for the current view and shows its state
  // in the header.
  watch(params, opts) {
    const w = watch(params, {
      ...opts,
      onState: (state) => setFeedState(state),
      onUnauthorized: () => signedOut(expiredMessage()),
    });
    return w;
  },
  errorBox,
};

let cleanup = null;
let renderSeq = 0;

function setFeedState(state) {
  const text = {
    connecting: 'connecting…', live: 'live', retrying: 'reconnecting…', stopped: 'not live',
  }[state] || state;
  feed.dataset.state = state;
  feed.textContent = text;
  feed.title = state === 'live' ? 'Changes appear as they happen' : 'Live updates are not flowing';
}

// errorBox shows an error in words a reviewer can act on.
export function errorBox(err) {
  if (err instanceof ApiError) {
    return h('div', { class: 'error', role: 'alert' },
      h('strong', {}, err.status ? `${err.problem.title || 'Error'} (${err.status})` : err.problem.title),
      ' ', err.problem.detail || err.message);
  }
  return h('div', { class: 'error', role: 'alert' }, String(err && err.message ? err.message : err));
}

function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

async function render() {
  const seq = ++renderSeq;
  if (cleanup) {
    try { cleanup(); } catch (err) { console.error(err); }
    cleanup = null;
  }
  setFeedState('stopped');
  const path = location.pathname;
  let view = null;
  let params = [];
  let nav = null;
  for (const [re, fn, section] of routes) {
    const m = re.exec(path);
    if (m) {
      view = fn;
      params = m.slice(1).map((p) => decodeURIComponent(p));
      nav = section;
      break;
    }
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  clear(main);
  if (!view) {
    document.title = 'Not found · planserver';
    main.appendChild(h('h1', { tabindex: -1 }, 'Not found'));
    main.appendChild(h('p', {}, 'The console has no page at this address. ', h('a', { href: '/ui/' }, 'Go to the inbox')));
    focusHeading();
    return;
  }
  try {
    const done = await view(main, params, app, new URLSearchParams(location.search));
    if (seq !== renderSeq) {
      if (done) done();
      return;
    }
    cleanup = done || null;
  } catch (err) {
    if (seq !== renderSeq) return;
    if (err instanceof ApiError && err.status === 401) return; // the sign-in screen is up
    clear(main);
    main.appendChild(h('h1', { tabindex: -1 }, 'Something went wrong'));
    main.appendChild(errorBox(err));
  }
  if (seq === renderSeq) focusHeading();
}

// focusHeading moves focus to the new page's heading after navigation, so
// keyboard and screen-reader users start at the top of what changed.
let firstRender = true;
function focusHeading() {
  if (firstRender) { firstRender = false; return; }
  const h1 = main.querySelector('h1');
  if (h1) {
    if (!h1.hasAttribute('tabindex')) h1.setAttribute('tabindex', '-1');
    h1.focus({ preventScroll: false });
  }
}

// Links inside the console navigate without reloading the page.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest('a');
  if (!a || a.target || a.origin !== location.origin || !a.pathname.startsWith('/ui')) return;
  if (a.hash && a.pathname === location.pathname) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
});
window.addEventListener('popstate', render);

function expiredMessage() {
  return app.person
    ? 'Your sign-in has ended (signed out, ended by an admin, no longer allowed by the rules, idle too long, or expired). Sign in again.'
    : 'Your token is no longer valid (expired or revoked). Sign in again.';
}

// adminNav offers the admin's pages (sign-ins) to admins only.
// adminNav shows the navigation a reader can use: none before anyone is
// signed in (every page would answer with the sign-in form), the admin's
// pages only to an admin.
function adminNav() {
  const signedIn = app.authNone || app.person !== null || app.role !== null;
  document.querySelector('header.top nav').hidden = !signedIn;
  for (const a of document.querySelectorAll('[data-admin-only]')) a.closest('li').hidden = app.role !== 'admin';
}

function showWho() {
  clear(who);
  adminNav();
  if (app.authNone) {
    who.appendChild(h('span', { class: 'badge' }, 'no authentication (loopback)'));
    return;
  }
  if (app.person) {
    const p = app.person;
    who.appendChild(h('span', { class: 'signed-in', id: 'signed-in-as' },
      'Signed in as ', h('strong', {}, p.name || p.email || p.subject),
      p.email && p.name ? ` (${p.email})` : '', ` · ${app.role}`));
    who.appendChild(h('button', { type: 'button', class: 'link', onclick: signOutPerson }, 'Sign out'));
    return;
  }
  const label = {
    admin: 'admin', viewer: 'viewer · read-only', agent: 'agent · read-only',
  }[app.role] || 'read-only token';
  who.appendChild(h('span', { class: 'badge' }, label));
  who.appendChild(h('button', { type: 'button', class: 'link', onclick: () => signedOut('Signed out.') }, 'Sign out'));
}

// roleOf finds out what the token may do. Only admins may list tokens, so
// that read tells an admin from the rest without changing anything.
//
// Viewers and agents both get 403 there. The contract tells them apart
// another way: an action a role lacks is 403, and a session outside an
// agent's scope is answered exactly as a missing one, 404, before
// anything else is looked at. Filtering tools (which changes nothing) is
// an agent's action and not a viewer's, so asking it for a session that
// does not exist is 403 for a viewer and 404 for an agent. Anything else
// leaves the token labelled only as read-only.
async function roleOf() {
  try {
    await request('/v1/tokens');
    return 'admin';
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err;
  }
  const nowhere = `console-role-probe-${Math.random().toString(36).slice(2, 12)}`;
  try {
    await request(`/v1/sessions/${nowhere}/tools/filter`, { method: 'POST', body: { tools: [] } });
    return 'agent'; // only in the agent's own tree could it exist
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) return 'viewer';
    if (err instanceof ApiError && err.status === 404) return 'agent';
    if (err instanceof ApiError && err.status === 401) throw err;
    return 'read-only';
  }
}

// signOutPerson ends the sign-in on the server (every replica), then
// follows the server's redirect: the provider's logout when it has one.
async function signOutPerson() {
  let to = '/ui/';
  try {
    const res = await request('/auth/logout', { method: 'POST' });
    if (res.data && typeof res.data.redirect === 'string') to = res.data.redirect;
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) {
      clear(main);
      main.appendChild(h('h1', {}, 'Sign-out failed'));
      main.appendChild(errorBox(err));
      return;
    }
  }
  app.person = null;
  setCSRF('');
  location.assign(to);
}

function signedOut(message) {
  setToken('');
  setCSRF('');
  app.person = null;
  app.role = null;
  if (cleanup) {
    try { cleanup(); } catch (err) { console.error(err); }
    cleanup = null;
  }
  renderSeq += 1;
  setFeedState('stopped');
  showSignIn(message);
}

function showSignIn(message) {
  clear(who);
  adminNav();
  clear(main);
  document.title = 'Sign in · planserver';
  const input = h('input', {
    id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true,
    'aria-describedby': 'token-help',
  });
  const status = h('div', { 'aria-live': 'assertive' });
  const form = h('form', { class: 'signin', novalidate: true },
    h('label', { for: 'token' }, 'Token'),
    input,
    h('p', { id: 'token-help', class: 'muted' },
      'An admin token can approve and reject plans; a viewer token sees everything read-only; ',
      'an agent token sees its own session tree read-only. ',
      'Create one with ', h('code', {}, 'planserver token create --role admin'), '. ',
      'It is kept in this tab only (sessionStorage) and sent in the Authorization header, never in a URL.'),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    status);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const token = input.value.trim();
    clear(status);
    if (!token) {
      status.appendChild(h('p', { class: 'error' }, 'Paste a token first.'));
      input.focus();
      return;
    }
    try {
      await request('/v1/sessions?limit=1', { token });
    } catch (err) {
      status.appendChild(err instanceof ApiError && err.status === 401
        ? h('p', { class: 'error' }, `That token was refused: ${err.problem.detail || err.message}`)
        : errorBox(err));
      input.focus();
      return;
    }
    setToken(token);
    input.value = '';
    app.role = await roleOf();
    showWho();
    render();
  });
  main.appendChild(h('h1', {}, 'Sign in to the review console'));
  if (message) main.appendChild(h('p', { class: 'notice', role: 'status' }, message));
  if (app.signIn) {
    // The way back is this page: a review deep link survives the round
    // trip through the provider (the server accepts only paths here).
    const back = location.pathname + location.search;
    const href = `${app.signIn}?return_to=${encodeURIComponent(back)}`;
    main.appendChild(h('p', {}, h('a', { class: 'button primary', id: 'sign-in-oidc', href },
      'Sign in with your organisation')));
    main.appendChild(h('p', { class: 'muted' }, 'Or, for a token (scripts and agents):'));
  }
  main.appendChild(form);
  if (!app.signIn) input.focus();
}

async function start() {
  onUnauthenticated((err) => {
    const hint = err && err.problem && err.problem.sign_in;
    if (typeof hint === 'string' && hint.startsWith('/')) app.signIn = hint;
    signedOut(expiredMessage());
  });
  // Without a token in this tab: a server without tokens answers who the
  // anonymous admin is, and one with sign-in answers who signed in (the
  // browser sends the cookie) or where to sign in.
  if (!getToken()) {
    try {
      const me = (await request('/v1/me', { token: '' })).data;
      if (me.kind === 'person') {
        app.person = me;
        app.role = me.role;
        setCSRF(me.csrf_token);
        // A person signed in here, so when their sign-in ends (signed
        // out elsewhere, ended by an admin, timed out) the sign-in screen
        // offers the organisation's sign-in again.
        app.signIn = '/auth/login';
      } else {
        app.authNone = true;
        app.role = 'admin';
      }
      showWho();
      render();
      return;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401) {
        clear(main);
        main.appendChild(h('h1', {}, 'The server cannot be reached'));
        main.appendChild(errorBox(err));
        return;
      }
      app.signIn = typeof err.problem.sign_in === 'string' && err.problem.sign_in.startsWith('/') ? err.problem.sign_in : '';
      showSignIn();
      return;
    }
  }
  try {
    app.role = await roleOf();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // signedOut ran
    clear(main);
    main.appendChild(errorBox(err));
    return;
  }
  showWho();
  render();
}

start();
