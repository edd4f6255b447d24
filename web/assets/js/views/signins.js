// Sign-ins: the people signed in through the identity provider, and the
// way to end their access at once (admin only). The role shown is what
// --oidc-roles, as the server runs with them now, give each person: the
// server matches the rules again on every request. Ending a sign-in
// refuses its cookie on every replica from the next request, ends its
// live updates and its MCP calls. Sign-ins make no events, so the list is
// re-read every few seconds while the page is open.

import { request, enc, ApiError } from '../api.js';
import { h, clear, append, time, ago, announce } from '../dom.js';

// REFRESH is how often the open page re-reads the list.
const REFRESH = 5000;

function who(s) {
  const main = s.name || s.email || s.subject;
  return [h('strong', {}, main), s.email && s.email !== main ? h('span', { class: 'muted' }, ` ${s.email}`) : null];
}

function roleBadge(s) {
  if (s.role === null) {
    return h('span', { class: 'badge signin-refused', title: 'No rule of --oidc-roles lets this person in any more: every request with this sign-in is refused.' }, 'no access');
  }
  const text = s.session_id ? `${s.role} of ${s.session_id}` : s.role;
  const changed = s.role !== s.role_at_sign_in
    ? h('span', { class: 'muted' }, ` (was ${s.role_at_sign_in})`) : null;
  return [h('span', { class: `badge role-${s.role}` }, text), changed];
}

export async function signinsView(main, _params, app) {
  document.title = 'Sign-ins · planserver';
  const msg = h('p', { class: 'error-text', role: 'alert' });
  const body = h('div');
  main.append(h('h1', {}, 'Sign-ins'),
    h('p', { class: 'muted' }, 'People signed in through your identity provider. ',
      'Their role follows --oidc-roles as the server runs with them now, on every request. ',
      'Ending a sign-in refuses it at once on every replica, and stops its live updates and MCP calls; ',
      'the person may sign in again while the rules and the provider let them.'),
    msg, body);

  async function load() {
    const signins = [];
    let token = '';
    do {
      const { data } = await request(`/v1/signins?limit=1000${token ? `&page_token=${enc(token)}` : ''}`);
      signins.push(...data.signins);
      token = data.next_page_token;
    } while (token);
    const perPerson = new Map();
    for (const s of signins) perPerson.set(s.subject, (perPerson.get(s.subject) || 0) + 1);
    const mine = app.person && app.person.signin_id;
    if (!signins.length) {
      append(clear(body), [h('p', { class: 'empty' }, 'Nobody is signed in through the identity provider.')]);
      return;
    }
    append(clear(body), [h('table', { class: 'list signins' },
      h('thead', {}, h('tr', {}, ['Person', 'Subject', 'Role now', 'Signed in', 'Last seen', 'Ends', ''].map((c) => h('th', {}, c)))),
      h('tbody', {}, signins.map((s) => {
        const ends = s.idle_expires_at < s.expires_at ? s.idle_expires_at : s.expires_at;
        const n = perPerson.get(s.subject);
        return h('tr', { 'data-signin': s.id, 'data-subject': s.subject },
          h('th', {}, who(s), s.id === mine ? h('span', { class: 'badge this-browser' }, 'this browser') : null,
            s.groups.length ? h('div', { class: 'muted' }, `groups: ${s.groups.join(', ')}`) : null),
          h('td', {}, h('code', {}, s.subject)),
          h('td', {}, roleBadge(s)),
          h('td', {}, time(s.created_at)),
          h('td', {}, h('span', { title: s.last_seen_at }, ago(s.last_seen_at))),
          h('td', {}, time(ends)),
          h('td', { class: 'signin-actions' },
            h('button', {
              type: 'button', class: 'danger', 'data-action': 'end',
              'aria-label': `End the sign-in ${s.id} of ${s.email || s.subject}`,
              onclick: () => act(() => request(`/v1/signins/${enc(s.id)}`, { method: 'DELETE' }),
                `Ended the sign-in of ${s.email || s.subject}.`),
            }, s.id === mine ? 'End (signs you out)' : 'End'),
            n > 1 ? h('button', {
              type: 'button', class: 'link', 'data-action': 'end-all',
              onclick: () => act(() => request(`/v1/signins?subject=${enc(s.subject)}`, { method: 'DELETE' }),
                `Ended all ${n} sign-ins of ${s.email || s.subject}.`),
            }, `End all ${n} of this person's`) : null));
      })))]);
  }

  async function act(fn, done) {
    msg.textContent = '';
    try {
      await fn();
      announce(done);
      await load();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return; // the sign-in screen is up
      msg.textContent = err.message;
    }
  }

  try {
    await load();
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) {
      append(clear(body), [h('p', { class: 'notice' }, 'Only an admin sees and ends sign-ins. ', err.problem.detail || '')]);
      return null;
    }
    throw err;
  }
  const timer = setInterval(() => { load().catch((err) => { msg.textContent = err.message; }); }, REFRESH);
  return () => clearInterval(timer);
}
