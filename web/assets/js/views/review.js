// The review page, /ui/sessions/{id}/review?revision=N: the stable link a
// human gets to read a plan and decide. Approval is bound to the revision
// on screen: it sends If-Match with that revision, so if the agent rewrote
// the plan in the meantime the server refuses it (412) and nothing is
// approved. The page also watches the feed: when the plan changes while
// the human reads, it says so at once, shows what changed, and turns the
// stale approve and reject buttons off. It never re-applies a decision to
// a revision the human has not read.

import { request, enc, ApiError } from '../api.js';
import { h, clear, time, announce } from '../dom.js';
import { renderMarkdown } from '../markdown.js';
import { diff, renderDiff } from '../diff.js';
import { modeBadge, modeSource } from './session.js';

export async function reviewView(main, [id], app, query) {
  document.title = `Review ${id} · planserver`;
  const first = await request(`/v1/sessions/${enc(id)}`);
  let session = first.data;
  let planRes;
  try {
    planRes = await request(`/v1/sessions/${enc(id)}/plan`);
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 404) throw err;
  }

  const heading = h('h1', {});
  const meta = h('div', { class: 'summary' });
  const notices = h('div', { class: 'notices', 'aria-live': 'assertive' });
  const decision = h('section', { class: 'panel decision', 'aria-labelledby': 'decide-h' });
  const planArticle = h('article', { class: 'plan', 'aria-labelledby': 'plan-h' });
  const source = h('details', { class: 'source' });
  main.append(heading, meta, notices, h('div', { class: 'review-layout' }, h('div', { class: 'review-main' }, planArticle, source), decision));

  if (!planRes) {
    clear(heading).append(`Review: ${session.title || session.id}`);
    planArticle.append(h('p', {}, 'This session has no plan yet. The page updates when the agent writes one.'));
  }

  // shown is the plan revision on screen: the only one a decision made
  // here can apply to.
  let shown = planRes ? { revision: planRes.revision, content: planRes.data.content, author: planRes.data.author, updated_at: planRes.data.updated_at } : null;
  // newer is a later revision the page learnt about while shown was on
  // screen (from the feed, or from a 412 answer).
  let newer = null;
  let outcome = null; // the result of a decision made on this page
  let busy = false;

  const wanted = Number(query.get('revision'));
  if (shown && !query.get('revision')) {
    // Pin the link to what is on screen, so it stays a stable reference.
    history.replaceState(null, '', `${location.pathname}?revision=${shown.revision}`);
  }

  function drawHeader() {
    clear(heading).append(`Review: ${session.title || session.id}`);
    const r = session.review;
    clear(meta).append(h('p', { class: 'meta' },
      h('span', {}, 'session ', h('a', { href: `/ui/sessions/${enc(id)}` }, h('code', {}, id))),
      session.agent ? h('span', {}, `agent ${session.agent}`) : null,
      h('span', {}, modeBadge(session), ' ', h('span', { class: 'muted' }, modeSource(session))),
      r.state === 'pending' ? h('span', {}, 'review asked ', time(r.requested_at)) : null));
    if (r.rationale && r.state === 'pending') {
      meta.append(h('div', { class: 'rationale' }, h('strong', {}, 'The agent says: '), r.rationale));
    }
  }

  function drawPlan() {
    clear(planArticle);
    clear(source);
    if (!shown) return;
    planArticle.append(
      h('h2', { id: 'plan-h' }, `Plan revision ${shown.revision}`),
      h('p', { class: 'meta' }, h('span', {}, `by ${shown.author}`), h('span', {}, 'written ', time(shown.updated_at))),
      renderMarkdown(shown.content));
    source.append(h('summary', {}, 'Markdown source'),
      h('pre', { class: 'numbered' }, shown.content.split('\n').map((line, k) =>
        h('span', { class: 'line', 'data-line': k + 1 }, h('span', { class: 'ln', 'aria-hidden': 'true' }, String(k + 1)), line, '\n'))));
  }

  function drawNotices() {
    clear(notices);
    if (shown && wanted && wanted !== shown.revision && !newer) {
      notices.append(h('div', { class: 'notice warn', 'data-notice': 'link-revision' },
        h('p', {}, h('strong', {}, `This link is for plan revision ${wanted}; the plan is now at revision ${shown.revision}.`)),
        h('p', {}, `You are reading revision ${shown.revision}, and only it can be approved here. ` +
          'Rewriting a plan withdraws its pending review, so the agent asks again for the new revision.')));
    }
    if (newer) {
      const d = diff(shown.revision, newer.revision, shown.content, newer.content);
      notices.append(h('div', { class: 'notice changed', role: 'alert', 'data-notice': 'plan-changed' },
        h('p', {}, h('strong', {}, `The plan changed while you were reading: revision ${shown.revision} → ${newer.revision}`),
          newer.author ? ` (written by ${newer.author})` : ''),
        h('p', {}, `Your decision cannot apply to revision ${shown.revision} any more: the server refuses it. ` +
          `Read revision ${newer.revision} before you decide.`),
        newer.content !== undefined ? renderDiff(d) : null,
        h('p', { class: 'actions' }, h('button', {
          type: 'button', class: 'primary', 'data-action': 'read-newer',
          onclick: () => app.navigate(`${location.pathname}?revision=${newer.revision}`),
        }, `Read revision ${newer.revision}`))));
    }
  }

  function drawDecision() {
    clear(decision).append(h('h2', { id: 'decide-h' }, 'Decision'));
    const r = session.review;
    if (outcome) decision.append(outcome);
    if (!shown) return;
    const pendingHere = r.state === 'pending' && r.plan_revision === shown.revision && !newer;
    if (r.state !== 'pending') {
      decision.append(h('p', { 'data-field': 'review-state' }, {
        none: 'No review is pending: the agent has not asked for one for this revision (or it was withdrawn).',
        approved: `Plan revision ${r.plan_revision} was approved by ${r.decided_by}.`,
        rejected: `Plan revision ${r.plan_revision} was rejected by ${r.decided_by}.`,
      }[r.state] || r.state, r.decided_at ? h('span', { class: 'muted' }, ' ', time(r.decided_at)) : null));
      if (r.feedback) decision.append(h('blockquote', { class: 'feedback' }, r.feedback));
    } else if (r.plan_revision !== shown.revision) {
      decision.append(h('p', {}, `The pending review is for plan revision ${r.plan_revision}.`));
    }
    if (!app.canWrite) {
      decision.append(h('p', { class: 'muted', 'data-field': 'read-only' }, 'Read-only: only an admin approves or rejects plans.'));
      return;
    }
    if (r.state !== 'pending' && !newer) return;
    const stale = !pendingHere;
    decision.append(
      h('p', {}, stale
        ? `Approve and Reject here apply to revision ${shown.revision}, the one on screen, which is no longer the revision under review.`
        : `Approving lets the agent act on revision ${shown.revision}: the session goes back to build mode.`),
      h('button', {
        type: 'button', class: 'primary', 'data-action': 'approve', disabled: stale || busy,
        onclick: approve,
      }, `Approve revision ${shown.revision}`));
    const feedback = h('textarea', { id: 'feedback', rows: 4, disabled: stale || busy, 'aria-describedby': 'feedback-help' });
    decision.append(h('form', { class: 'reject', novalidate: true, onsubmit: (e) => { e.preventDefault(); reject(feedback.value); } },
      h('label', { for: 'feedback' }, 'Feedback for the agent'),
      feedback,
      h('p', { id: 'feedback-help', class: 'muted' }, 'Rejecting keeps the session in plan mode; the agent reads this and plans again.'),
      h('button', { type: 'submit', class: 'danger', 'data-action': 'reject', disabled: stale || busy }, `Reject revision ${shown.revision}`)));
  }

  function drawAll() {
    drawHeader();
    drawPlan();
    drawNotices();
    drawDecision();
  }

  // learnNewer records that the plan moved past the revision on screen.
  async function learnNewer(revision, content, author) {
    if (!shown || revision <= shown.revision) return;
    if (newer && newer.revision >= revision && newer.content !== undefined) return;
    if (content === undefined) {
      try {
        const p = await request(`/v1/sessions/${enc(id)}/plan`);
        ({ revision } = p);
        ({ content, author } = p.data);
      } catch (err) {
        console.error(err);
      }
    }
    newer = { revision, content, author };
    announce(`The plan changed: revision ${shown.revision} is no longer current; revision ${revision} is.`);
    drawNotices();
    drawDecision();
  }

  async function approve() {
    busy = true;
    drawDecision();
    const rev = shown.revision;
    try {
      const res = await request(`/v1/sessions/${enc(id)}/plan/approve`, {
        method: 'POST', headers: { 'If-Match': `"${rev}"` },
      });
      session = res.data;
      outcome = h('p', { class: 'notice ok', role: 'status', 'data-outcome': 'approved' },
        `Approved revision ${rev}. The session's own mode is now ${session.mode}; its effective mode is ${session.effective_mode}.`,
        res.data.note ? ` ${res.data.note}` : '');
      announce(`Approved revision ${rev}`);
    } catch (err) {
      outcome = refused(err, rev, 'approval');
    }
    busy = false;
    drawAll();
  }

  async function reject(feedback) {
    busy = true;
    drawDecision();
    const rev = shown.revision;
    try {
      const body = feedback.trim() ? { feedback: feedback.trim() } : {};
      const res = await request(`/v1/sessions/${enc(id)}/plan/reject`, {
        method: 'POST', body, headers: { 'If-Match': `"${rev}"` },
      });
      session = res.data;
      outcome = h('p', { class: 'notice ok', role: 'status', 'data-outcome': 'rejected' },
        `Rejected revision ${rev}. The session stays in plan mode and the agent gets your feedback.`);
      announce(`Rejected revision ${rev}`);
    } catch (err) {
      outcome = refused(err, rev, 'rejection');
    }
    busy = false;
    drawAll();
  }

  // refused explains a refused decision; a 412 means the plan moved on.
  function refused(err, rev, what) {
    if (err instanceof ApiError && err.code === 'version_conflict') {
      learnNewer(err.currentRevision ?? rev + 1);
      return h('div', { class: 'notice error', role: 'alert', 'data-outcome': 'stale' },
        h('strong', {}, `Your ${what} of revision ${rev} was refused: `),
        `the plan is now at revision ${err.currentRevision}. Nothing was ${what === 'approval' ? 'approved' : 'rejected'}.`);
    }
    if (err instanceof ApiError && err.code === 'review_not_pending') {
      return h('div', { class: 'notice error', role: 'alert', 'data-outcome': 'not-pending' },
        h('strong', {}, `No review is pending any more. `), err.problem.detail || '');
    }
    return h('div', { 'data-outcome': 'error' }, app.errorBox(err));
  }

  drawAll();

  const w = app.watch({ session_id: id }, {
    after: first.seq,
    onEvent: async (ev) => {
      if (ev.session_id !== id) return;
      switch (ev.type) {
        case 'session_plan.updated':
          if (!shown) {
            app.navigate(`${location.pathname}?revision=${ev.revision}`, { replace: true });
            return;
          }
          // The event carries the whole plan, so the diff needs no read.
          await learnNewer(ev.revision, ev.data?.content, ev.data?.author);
          if (ev.data?.review_withdrawn) {
            session = { ...session, review: { ...session.review, state: 'none' } };
          }
          break;
        case 'session.review_requested':
        case 'session.review_approved':
        case 'session.review_rejected':
        case 'session.mode_changed':
        case 'session.updated':
          try {
            session = (await request(`/v1/sessions/${enc(id)}`)).data;
          } catch (err) {
            console.error(err);
            return;
          }
          if (ev.type === 'session.review_approved' || ev.type === 'session.review_rejected') {
            if (!outcome) announce(`Revision ${session.review.plan_revision} was ${session.review.state} by ${session.review.decided_by}`);
          }
          break;
        case 'session.deleted':
          clear(main).append(h('h1', {}, `Session ${id} was deleted`), h('p', {}, h('a', { href: '/ui/' }, 'Back to the inbox')));
          return;
        default:
          return;
      }
      drawHeader();
      drawNotices();
      drawDecision();
    },
    onExpired: () => app.navigate(location.pathname + location.search, { replace: true }),
  });
  return () => w.close();
}
