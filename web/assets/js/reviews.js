// reviews.js reads and draws a session's review history (GET
// /v1/sessions/{id}/reviews): the review pending now, if any, and every
// review that ended, newest first: who decided, when, on which plan
// revision, with what feedback and which line comments. A comment is
// shown with the line it is about, read from that plan revision.

import { request, enc, ApiError } from './api.js';
import { h, time } from './dom.js';

// loadReviewHistory reads the history and the text of every revision its
// comments refer to. texts caches revision → lines across calls (a kept
// revision never changes); a revision no longer kept maps to null.
export async function loadReviewHistory(id, texts = new Map()) {
  const history = (await request(`/v1/sessions/${enc(id)}/reviews`)).data;
  const wanted = new Set(history.reviews.filter((r) => r.comments.length).map((r) => r.plan_revision));
  await Promise.all([...wanted].filter((r) => !texts.has(r)).map(async (r) => {
    try {
      const res = await request(`/v1/sessions/${enc(id)}/plan/revisions/${r}`);
      texts.set(r, res.data.content.split('\n'));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err;
      texts.set(r, null);
    }
  }));
  return { history, texts };
}

const ENDED = {
  approved: 'Approved',
  rejected: 'Rejected',
  withdrawn: 'Withdrawn',
  cancelled: 'Cancelled',
};

function why(r) {
  switch (r.state) {
    case 'approved': return `by ${r.ended_by}: the session went back to build mode` +
      ({ plan: ', limited to the plan\'s scope', full: ' (full build)' }[r.scope] ?? '');
    case 'rejected': return `by ${r.ended_by}: the agent plans again`;
    case 'withdrawn': return `by ${r.ended_by}, who rewrote the plan while the review was pending`;
    case 'cancelled': return `by ${r.ended_by}, who took the session out of plan mode`;
    default: return `by ${r.ended_by}`;
  }
}

// renderComments lists line comments, each with its line when known.
export function renderComments(comments, lines) {
  return h('ol', { class: 'review-comments' }, [...comments].sort((a, b) => a.line - b.line).map((c) => {
    const text = lines ? (lines[c.line - 1] ?? '').trim() : '';
    return h('li', { 'data-comment-line': c.line },
      h('p', { class: 'comment-anchor' }, h('span', { class: 'note-line' }, `Line ${c.line}`),
        text ? [' ', h('code', {}, text.length > 100 ? `${text.slice(0, 99)}…` : text)] : null),
      h('p', { class: 'note-body' }, c.body));
  }));
}

// renderReviewHistory draws {current, reviews}; texts maps a plan
// revision to its lines, for the comments.
export function renderReviewHistory({ current, reviews }, texts = new Map()) {
  const items = [];
  if (current.state === 'pending') {
    items.push(h('li', { class: 'rh-pending', 'data-review-state': 'pending', 'data-plan-revision': current.plan_revision },
      h('p', { class: 'rh-head' }, h('span', { class: 'rh-state rs-pending' }, 'Pending'), ' ',
        h('strong', {}, `plan revision ${current.plan_revision}`), ' · asked ', time(current.requested_at)),
      current.rationale ? h('p', { class: 'rationale' }, h('span', { class: 'muted' }, 'The agent says: '), current.rationale) : null));
  }
  for (const r of reviews) {
    items.push(h('li', { class: `rh-${r.state}`, 'data-review-state': r.state, 'data-plan-revision': r.plan_revision },
      h('p', { class: 'rh-head' }, h('span', { class: `rh-state rs-${r.state}` }, ENDED[r.state] || r.state), ' ',
        h('strong', {}, `plan revision ${r.plan_revision}`), ' ', time(r.ended_at)),
      h('p', { class: 'muted rh-who' }, why(r), r.requested_at ? ['; review asked ', time(r.requested_at)] : null),
      r.rationale ? h('p', { class: 'rationale' }, h('span', { class: 'muted' }, 'The agent said: '), r.rationale) : null,
      r.feedback ? h('blockquote', { class: 'feedback' }, r.feedback) : null,
      r.comments.length ? renderComments(r.comments, texts.get(r.plan_revision)) : null));
  }
  if (!items.length) return h('p', { class: 'muted', 'data-field': 'no-reviews' }, 'No review has been asked for yet.');
  return h('ol', { class: 'review-history' }, items);
}
