// A plan's scope, as a person reads it in ten seconds: the files and
// folders it may change, the commands it will run, the network it needs.
// The review page shows the scope a human grants (with what it adds to
// and removes from the last revision decided on); the session page shows
// the scope in force.

import { h, time } from './dom.js';

const ROWS = [
  ['files', 'Files it may change'],
  ['commands', 'Commands it will run'],
  ['connect', 'Network it may reach'],
];

// renderScope lists a scope's three lists. change, when given, is the
// server's {added, removed} against an earlier revision: added entries are
// marked, removed ones listed struck through.
export function renderScope(scope, change) {
  const dl = h('dl', { class: 'scope-lists', 'data-scope': '' });
  for (const [key, label] of ROWS) {
    const items = scope?.[key] ?? [];
    const added = new Set(change?.added?.[key] ?? []);
    const removed = change?.removed?.[key] ?? [];
    const list = h('ul', { class: 'scope-items', 'data-scope-field': key });
    for (const item of items) {
      const isNew = added.has(item);
      list.append(h('li', { class: isNew ? 'added' : '', 'data-scope-item': item },
        isNew ? h('span', { class: 'scope-mark', title: 'new in this revision' }, '+ ') : null,
        h('code', {}, item),
        isNew ? h('span', { class: 'visually-hidden' }, ' (added)') : null));
    }
    for (const item of removed) {
      list.append(h('li', { class: 'removed', 'data-scope-removed': item },
        h('span', { class: 'scope-mark', title: 'removed in this revision' }, '− '),
        h('del', {}, h('code', {}, item)),
        h('span', { class: 'visually-hidden' }, ' (removed)')));
    }
    if (!items.length && !removed.length) list.append(h('li', { class: 'muted' }, 'none'));
    dl.append(h('dt', {}, label), h('dd', {}, list));
  }
  return dl;
}

// changeSummary says in words what a revision's scope adds and removes.
export function changeSummary(change) {
  const count = (side) => ROWS.reduce((n, [key]) => n + (change?.[side]?.[key]?.length ?? 0), 0);
  const added = count('added');
  const removed = count('removed');
  if (!added && !removed) return 'The same scope as before.';
  const parts = [];
  if (added) parts.push(`${added} ${added === 1 ? 'entry' : 'entries'} added`);
  if (removed) parts.push(`${removed} removed`);
  return `${parts.join(', ')}.`;
}

// scopeLine is a scope in one line, for confirmations.
export function scopeLine(scope) {
  const list = (l) => (l?.length ? l.join(', ') : 'none');
  return `files ${list(scope.files)}; commands ${list(scope.commands)}; network ${list(scope.connect)}`;
}

// renderBuildScope is the scope in force for a session: where it comes
// from (which session's plan, which revision), who granted it and when,
// the lists, and the ancestors' scopes that limit it too.
export function renderBuildScope(b, sessionId) {
  const from = b.session_id === sessionId
    ? 'its own plan declares'
    : h('span', {}, 'the plan of ', h('a', { href: `/ui/sessions/${encodeURIComponent(b.session_id)}` }, b.session_id), ' declares');
  const out = h('div', { class: 'build-scope', 'data-field': 'build_scope' },
    h('p', {}, h('strong', {}, 'Scoped build: '), 'the agent may change only what ', from, ` (revision ${b.plan_revision}). Granted by `,
      b.granted_by, ' ', time(b.granted_at), '.'),
    renderScope(b));
  if (b.also_limited_by?.length) {
    out.append(h('p', { class: 'muted', 'data-field': 'also_limited_by' }, 'Also limited by the scope of ',
      b.also_limited_by.map((g, i) => h('span', {}, i ? ', ' : '', h('a', { href: `/ui/sessions/${encodeURIComponent(g.session_id)}` }, g.session_id),
        ` (revision ${g.plan_revision})`)), ': a path must be inside every one.'));
  }
  return out;
}
