// The inbox: every session whose plan waits for a human's review, newest
// request first, kept current by the event feed.

import { request, listAll, enc, ApiError } from '../api.js';
import { h, clear, time, ago, announce } from '../dom.js';

// Events that can start or end a pending review.
const TYPES = [
  'session.review_requested', 'session.review_approved', 'session.review_rejected',
  'session_plan.updated', 'session.mode_changed', 'session.deleted', 'session.updated',
].join(',');

export async function inboxView(main, _params, app) {
  document.title = 'Inbox · planserver';
  const list = h('ul', { class: 'inbox', 'aria-label': 'Plans waiting for review' });
  const empty = h('p', { class: 'empty' }, 'No plans are waiting for review. New requests appear here as agents ask.');
  main.append(
    h('h1', {}, 'Plans waiting for review'),
    h('p', { class: 'muted' }, 'Newest request first. Open one to read the plan and approve or reject that revision.'),
    list, empty);

  const pending = new Map();

  // The server may filter by review state itself (a later version does);
  // this version ignores the parameter, so the list is filtered here too.
  const { items, seq } = await listAll('/v1/sessions?review_state=pending', 'sessions');
  for (const s of items) if (s.review?.state === 'pending') pending.set(s.id, s);
  draw();

  function draw() {
    clear(list);
    const sorted = [...pending.values()].sort((a, b) =>
      (b.review.requested_at || '').localeCompare(a.review.requested_at || '') || a.id.localeCompare(b.id));
    for (const s of sorted) list.appendChild(card(s));
    empty.hidden = sorted.length > 0;
  }

  function card(s) {
    const r = s.review;
    const href = `/ui/sessions/${enc(s.id)}/review?revision=${r.plan_revision}`;
    return h('li', { class: 'card', 'data-session': s.id },
      h('h2', {}, h('a', { href }, s.title || s.id)),
      h('p', { class: 'meta' },
        h('span', {}, 'session ', h('code', {}, s.id)),
        s.agent ? h('span', {}, `agent ${s.agent}`) : null,
        h('span', {}, `plan revision ${r.plan_revision}`),
        h('span', {}, 'asked ', time(r.requested_at), ` (${ago(r.requested_at)})`)),
      r.rationale ? h('p', { class: 'rationale' }, r.rationale) : null,
      h('p', { class: 'actions' },
        h('a', { class: 'button primary', href }, `Review revision ${r.plan_revision}`),
        h('a', { class: 'button', href: `/ui/sessions/${enc(s.id)}` }, 'Session')));
  }

  // refresh re-reads one session after an event about it.
  async function refresh(id, type) {
    let s = null;
    try {
      s = (await request(`/v1/sessions/${enc(id)}`)).data;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err;
    }
    const was = pending.get(id);
    if (s && s.review?.state === 'pending') {
      pending.set(id, s);
      if (!was || was.review.plan_revision !== s.review.plan_revision) {
        announce(`Review requested: ${s.title || s.id}, plan revision ${s.review.plan_revision}`);
      }
    } else if (was) {
      pending.delete(id);
      const why = {
        'session.review_approved': `approved by ${s?.review?.decided_by || 'someone'}`,
        'session.review_rejected': `rejected by ${s?.review?.decided_by || 'someone'}`,
        'session_plan.updated': 'withdrawn: the plan was rewritten',
        'session.mode_changed': 'cancelled: the session left plan mode',
        'session.deleted': 'gone: the session was deleted',
      }[type] || 'no longer pending';
      announce(`Review of ${was.title || was.id} ${why}`);
    }
    draw();
  }

  let queue = Promise.resolve();
  const w = app.watch({ types: TYPES }, {
    after: seq,
    onEvent: (ev) => {
      if (!ev.session_id) return;
      if (ev.type === 'session.updated' && !pending.has(ev.session_id)) return;
      // One at a time, in feed order, so an older read never wins.
      queue = queue.then(() => refresh(ev.session_id, ev.type)).catch((err) => console.error(err));
    },
    onExpired: () => app.navigate(location.pathname + location.search, { replace: true }),
  });
  return () => w.close();
}
