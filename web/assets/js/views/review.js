// The review page, /ui/sessions/{id}/review?revision=N: the stable link a
// human gets to read a plan and decide. It shows what changed since the
// last revision a human decided on (the server's diff), the plan with
// line comments, and the review history. Approval is bound to the
// revision on screen: it sends If-Match with that revision, so if the
// agent rewrote the plan in the meantime the server refuses it (412) and
// nothing is approved. The page also watches the feed: when the plan
// changes while the human reads, it says so at once, shows the server's
// diff to the new revision, and turns the stale approve and reject
// buttons off. It never re-applies a decision to a revision the human
// has not read.

import { request, enc, ApiError } from '../api.js';
import { h, append, clear, time, announce } from '../dom.js';
import { renderMarkdown } from '../markdown.js';
import { renderDiff, comparePicker } from '../diff.js';
import { lineComments, commentHint } from '../comments.js';
import { loadReviewHistory, renderReviewHistory } from '../reviews.js';
import { modeBadge, modeSource } from './session.js';
import { renderScope, changeSummary, scopeLine } from '../scope.js';

const DECIDED = new Set(['approved', 'rejected']);

// planLines numbers a plan's lines as the server does: a final newline
// ends the last line rather than starting another.
// CONFIRM_KEY holds "off" when the human chose to approve with one click.
const CONFIRM_KEY = 'planserver.confirm-approve';

function confirmApprovals() {
  try {
    return localStorage.getItem(CONFIRM_KEY) !== 'off';
  } catch {
    return true; // storage refused: ask, the safe default
  }
}

function setConfirmApprovals(on) {
  try {
    if (on) localStorage.removeItem(CONFIRM_KEY);
    else localStorage.setItem(CONFIRM_KEY, 'off');
  } catch {
    // Storage refused: the setting lasts until the page closes.
  }
}

function planLines(content) {
  if (!content) return [];
  const lines = content.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((l) => l.replace(/\r$/, ''));
}

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
  const changes = h('section', { class: 'panel changes', 'aria-labelledby': 'changes-h' });
  const planArticle = h('article', { class: 'plan', 'aria-labelledby': 'plan-h' });
  const source = h('details', { class: 'source' });
  const historyBox = h('section', { class: 'panel history-panel', 'aria-labelledby': 'reviews-h' });
  // The history comes after the decision, in reading and Tab order, and
  // spans the page under both columns.
  main.append(heading, meta, notices, h('div', { class: 'review-layout' },
    h('div', { class: 'review-main' }, changes, planArticle, source), decision), historyBox);

  // shown is the plan revision on screen: the only one a decision made
  // here can apply to.
  const shown = planRes
    ? {
      revision: planRes.revision, content: planRes.data.content, author: planRes.data.author,
      updated_at: planRes.data.updated_at, scope: planRes.data.scope ?? null,
    }
    : null;
  const lines = shown ? planLines(shown.content) : [];
  // newer is a later revision the page learnt about while shown was on
  // screen (from the feed, or from a 412 answer), with the server's diff.
  let newer = null;
  let outcome = null; // the result of a decision made on this page
  let busy = false;
  let confirming = false; // the approval waits for its confirmation
  let fullBuild = false; // an admin chose to approve without the scope
  // scopeDiff is what the scope on screen adds to and removes from the
  // baseline revision's (the server's diff), with that revision.
  let scopeDiff = null;
  let formError = null;
  let revisions = []; // kept revisions, newest first
  let reviewLog = { current: session.review, reviews: [] }; // GET …/reviews
  const texts = new Map(); // plan revision → its lines, for comments in the history
  if (shown) texts.set(shown.revision, lines);
  // drafts are the comments written here and not sent yet.
  let drafts = [];
  let picker = null;
  let comments = null;
  const hint = commentHint();
  const feedback = h('textarea', { id: 'feedback', rows: 4, 'aria-describedby': 'feedback-help' });

  const wanted = Number(query.get('revision'));
  if (shown && !query.get('revision')) {
    // Pin the link to what is on screen, so it stays a stable reference.
    window.history.replaceState(null, '', `${location.pathname}?revision=${shown.revision}`);
  }

  async function loadRevisions() {
    if (!shown) return;
    revisions = (await request(`/v1/sessions/${enc(id)}/plan/revisions`)).data.revisions;
  }

  async function loadHistory() {
    ({ history: reviewLog } = await loadReviewHistory(id, texts));
  }

  // loadScopeDiff compares the scope on screen with the baseline's (or
  // with none, for a first revision).
  async function loadScopeDiff() {
    if (!shown) return;
    const from = baseline().revision ?? 0;
    const d = (await request(`/v1/sessions/${enc(id)}/plan/diff?from=${from}&to=${shown.revision}`)).data;
    scopeDiff = { from, change: d.scope ?? null };
  }

  // scopeSection is the scope the human grants by approving the revision
  // on screen, beside the plan: what the agent may change, run and reach,
  // and what that adds to the last revision decided on.
  function scopeSection() {
    const box = h('section', { class: 'scope-grant', 'aria-labelledby': 'scope-h', 'data-field': 'scope-grant' });
    if (!shown.scope) {
      box.append(h('h3', { id: 'scope-h' }, 'No scope declared'),
        h('p', { 'data-field': 'no-scope' }, `Revision ${shown.revision} has no scope block: approving it is a full build, `,
          'and the agent may change anything in the project.'));
      return box;
    }
    box.append(h('h3', { id: 'scope-h' }, 'The scope you grant'),
      h('p', { class: 'muted' }, `Approving revision ${shown.revision} with its scope, the agent may change only these files, `,
        'run these commands and reach this network; anything else is refused.'),
      renderScope(shown.scope, scopeDiff?.change));
    if (scopeDiff?.change) {
      box.append(h('p', { class: 'scope-change', 'data-field': 'scope-change' },
        scopeDiff.from ? `Against revision ${scopeDiff.from}: ` : 'The first scope: ', changeSummary(scopeDiff.change)));
    }
    return box;
  }

  // pendingHere: the review pending now is for the revision on screen,
  // and nothing newer has been written: only then can a decision apply.
  function pendingHere() {
    const r = session.review;
    return Boolean(shown) && r.state === 'pending' && r.plan_revision === shown.revision && !newer;
  }

  // baseline is what the revision on screen is compared with: the last
  // revision before it that a human approved or rejected, when the server
  // still keeps it; otherwise the revision just before it.
  function baseline() {
    const kept = new Set(revisions.map((r) => r.revision));
    let lost = null;
    for (const r of reviewLog.reviews) {
      if (!DECIDED.has(r.state) || r.plan_revision >= shown.revision) continue;
      if (kept.has(r.plan_revision)) return { revision: r.plan_revision, decided: r };
      lost = r;
      break;
    }
    const prev = revisions.find((r) => r.revision < shown.revision);
    return prev ? { revision: prev.revision, lost } : { revision: null, lost };
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

  // basisText says in words what the default comparison is.
  function basisText(base) {
    if (base.decided) {
      const d = base.decided;
      return [`Since revision ${base.revision}, the last revision a human decided on: ${d.state} by ${d.ended_by} `, time(d.ended_at), '.'];
    }
    const lost = base.lost ? `Revision ${base.lost.plan_revision}, which ${base.lost.ended_by} ${base.lost.state}, is no longer kept. ` : '';
    if (base.revision) return `${lost}Since revision ${base.revision}, the revision before this one (no earlier revision was approved or rejected).`;
    return `${lost}Revision ${shown.revision} is the first revision the server keeps: there is nothing earlier to compare it with.`;
  }

  function revisionLabel(n) {
    const tags = [];
    if (n === shown.revision) tags.push('on screen');
    if (newer && n === newer.revision) tags.push('newest');
    const d = reviewLog.reviews.find((r) => r.plan_revision === n && DECIDED.has(r.state));
    if (d) tags.push(d.state);
    return tags.length ? `revision ${n} (${tags.join(', ')})` : `revision ${n}`;
  }

  function drawChanges() {
    clear(changes).append(h('h2', { id: 'changes-h' }, 'What changed'));
    if (!shown) return;
    const base = baseline();
    changes.append(h('p', { class: 'basis', 'data-field': 'diff-basis' }, basisText(base)));
    const nums = revisions.map((r) => r.revision);
    if (nums.length < 2) {
      picker = null;
      return;
    }
    if (picker) {
      picker.setRevisions(nums);
    } else {
      picker = comparePicker({
        id: 'rev',
        revisions: nums,
        // With nothing before the revision on screen (a first revision
        // the agent has since rewritten), it is compared with the newest.
        defaults: (ns) => (base.revision ? { from: base.revision, to: shown.revision } : { from: shown.revision, to: ns[0] }),
        label: revisionLabel,
        errorBox: app.errorBox,
        show: async (from, to) => {
          const d = (await request(`/v1/sessions/${enc(id)}/plan/diff?from=${from}&to=${to}`)).data;
          const b = baseline();
          const caption = from === b.revision && to === shown.revision
            ? `Changes since revision ${from}${b.decided ? ` (${b.decided.state})` : ''}`
            : undefined;
          return renderDiff(d, { caption });
        },
      });
      if (base.revision) picker.run();
    }
    changes.append(picker.form, picker.out);
  }

  function notesForPlan() {
    const out = drafts.map((d, index) => ({ ...d, kind: 'draft', index }));
    for (const r of reviewLog.reviews) {
      if (r.plan_revision !== shown.revision || !DECIDED.has(r.state)) continue;
      for (const c of r.comments) out.push({ ...c, kind: 'sent', by: r.ended_by, state: r.state });
    }
    return out;
  }

  function drawPlan() {
    clear(planArticle);
    clear(source);
    if (!shown) {
      planArticle.append(h('p', {}, 'This session has no plan yet. The page updates when the agent writes one.'));
      return;
    }
    const md = renderMarkdown(shown.content);
    append(planArticle, [
      h('h2', { id: 'plan-h' }, `Plan revision ${shown.revision}`),
      h('p', { class: 'meta' }, h('span', {}, `by ${shown.author}`), h('span', {}, 'written ', time(shown.updated_at))),
      app.canWrite ? hint : null,
      md]);
    comments = lineComments(md, {
      lines,
      editable: () => app.canWrite && pendingHere() && !busy,
      notes: notesForPlan,
      onSave: (line, body, index) => {
        if (index === null) drafts.push({ line, body });
        else drafts[index] = { line, body };
        drafts.sort((a, b) => a.line - b.line);
        formError = null;
        drawDecision();
      },
      onRemove: (index) => {
        drafts.splice(index, 1);
        drawDecision();
      },
    });
    source.append(h('summary', {}, 'Markdown source, with line numbers'),
      h('pre', { class: 'numbered' }, lines.map((line, k) =>
        h('span', { class: 'line', 'data-line': k + 1 }, h('span', { class: 'ln', 'aria-hidden': 'true' }, String(k + 1)), line, '\n'))));
  }

  function drawHistory() {
    clear(historyBox).append(h('h2', { id: 'reviews-h' }, 'Review history'),
      h('p', { class: 'muted' }, 'Every review of this session\'s plan, newest first.'),
      renderReviewHistory(reviewLog, texts));
  }

  function drawNotices() {
    clear(notices);
    if (shown && wanted && wanted !== shown.revision && !newer) {
      const kept = revisions.some((r) => r.revision === wanted);
      notices.append(h('div', { class: 'notice warn', 'data-notice': 'link-revision' },
        h('p', {}, h('strong', {}, `This link is for plan revision ${wanted}; the plan is now at revision ${shown.revision}.`)),
        h('p', {}, `You are reading revision ${shown.revision}, and only it can be approved here. ` +
          'Rewriting a plan withdraws its pending review, so the agent asks again for the new revision.'),
        kept && picker ? h('p', { class: 'actions' }, h('button', {
          type: 'button', 'data-action': 'compare-link',
          onclick: () => {
            picker.run({ from: wanted, to: shown.revision });
            changes.scrollIntoView({ block: 'start' });
            picker.form.querySelector('select')?.focus();
          },
        }, `Show changes since revision ${wanted}`)) : null));
    }
    if (newer) {
      notices.append(h('div', { class: 'notice changed', role: 'alert', 'data-notice': 'plan-changed' },
        h('p', {}, h('strong', {}, `The plan changed while you were reading: revision ${shown.revision} → ${newer.revision}`),
          newer.author ? ` (written by ${newer.author})` : ''),
        h('p', {}, `Your decision cannot apply to revision ${shown.revision} any more: the server refuses it. ` +
          `Read revision ${newer.revision} before you decide.`),
        newer.diff ? renderDiff(newer.diff, { caption: `What changed from revision ${shown.revision} to ${newer.revision}` }) : null,
        h('p', { class: 'actions' }, h('button', {
          type: 'button', class: 'primary', 'data-action': 'read-newer',
          onclick: () => app.navigate(`${location.pathname}?revision=${newer.revision}`),
        }, `Read revision ${newer.revision}`))));
    }
  }

  function draftList() {
    if (!drafts.length) {
      return h('p', { class: 'muted', 'data-field': 'no-comments' },
        'None yet: click a line of the plan, or Tab into it and press Enter, to comment on it.');
    }
    const editable = app.canWrite && pendingHere() && !busy;
    return h('ol', { class: 'draft-comments' }, drafts.map((d, index) => h('li', { 'data-comment-line': d.line },
      h('p', { class: 'comment-anchor' },
        h('button', { type: 'button', class: 'link note-line', onclick: () => comments.focusLine(d.line) }, `Line ${d.line}`),
        ' ', h('code', {}, (lines[d.line - 1] ?? '').trim().slice(0, 60))),
      h('p', { class: 'note-body' }, d.body),
      editable ? h('p', { class: 'actions' },
        h('button', { type: 'button', class: 'link', 'data-action': 'edit-comment', onclick: () => comments.open(d.line, index) }, 'Edit'),
        h('button', {
          type: 'button', class: 'link', 'data-action': 'remove-comment',
          onclick: () => { drafts.splice(index, 1); comments.refresh(); drawDecision(); },
        }, 'Remove')) : null)));
  }

  function drawDecision() {
    clear(decision).append(h('h2', { id: 'decide-h' }, 'Decision'));
    const r = session.review;
    if (outcome) decision.append(outcome);
    comments?.refresh();
    hint.hidden = !(app.canWrite && pendingHere() && !busy);
    if (!shown) return;
    decision.append(scopeSection());
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
    if (r.state !== 'pending' && !newer && !drafts.length) return;
    const stale = !pendingHere();
    decision.append(h('p', {}, stale
      ? `Approve and Reject here apply to revision ${shown.revision}, the one on screen, which is no longer the revision under review.`
      : `Approving lets the agent act on revision ${shown.revision}: the session goes back to build mode` +
        (shown.scope && !fullBuild ? ', limited to the scope above. ' : '. ') +
        'Rejecting keeps it in plan mode and the agent plans again.'));
    if (!stale && shown.scope && app.role === 'admin') {
      decision.append(h('label', { class: 'setting full-build' },
        h('input', {
          type: 'checkbox', 'data-setting': 'full-build', checked: fullBuild, disabled: busy,
          onchange: (e) => { fullBuild = e.target.checked; confirming = false; drawDecision(); },
        }), ' Approve for a full build instead, without this scope (admin)'));
      if (fullBuild) {
        decision.append(h('p', { class: 'notice warn', role: 'note', 'data-field': 'full-build-warning' },
          h('strong', {}, 'Full build lifts the scope. '),
          'The agent may change anything in the project and reach any network its host allows, not only what the plan declares. ',
          'The decision is recorded with your name.'));
      }
    } else if (!stale && shown.scope) {
      decision.append(h('p', { class: 'muted', 'data-field': 'scope-only' }, 'Only an admin may approve this plan for a full build, without its scope.'));
    }
    if (!stale || drafts.length) decision.append(h('h3', { id: 'drafts-h' }, `Line comments (${drafts.length})`), draftList());
    if (stale && drafts.length) {
      decision.append(h('p', { class: 'notice warn', 'data-field': 'drafts-unsent' },
        `These comments were written on revision ${shown.revision} and were not sent.`));
    }
    feedback.disabled = stale || busy;
    append(decision, [
      h('label', { for: 'feedback' }, 'Feedback for the agent'),
      feedback,
      h('p', { id: 'feedback-help', class: 'muted' }, 'Sent with either decision, with the line comments; the agent reads them with its plan.'),
      formError ? h('p', { class: 'error', role: 'alert', 'data-field': 'decision-error' }, formError) : null,
      confirming && !stale ? approvalConfirm() : h('div', { class: 'decide-buttons' },
        h('button', {
          type: 'button', class: fullBuild ? 'danger' : 'primary', 'data-action': 'approve', disabled: stale || busy,
          onclick: () => askApproval(),
        }, approveLabel()),
        h('button', {
          type: 'button', class: 'danger', 'data-action': 'reject', disabled: stale || busy,
          onclick: () => decide('reject'),
        }, `Reject revision ${shown.revision}`)),
      h('label', { class: 'setting' },
        h('input', {
          type: 'checkbox', 'data-setting': 'confirm-approve', checked: confirmApprovals(),
          onchange: (e) => setConfirmApprovals(e.target.checked),
        }), ' Ask for confirmation before approving (remembered in this browser)')]);
  }

  // askApproval starts an approval: it asks first, unless the human
  // turned that off in this browser. The CLI asks y/N the same way.
  function askApproval() {
    if (commentOpen()) return;
    if (!confirmApprovals()) {
      decide('approve');
      return;
    }
    confirming = true;
    drawDecision();
    // The decision panel scrolls on its own (it sticks beside the plan):
    // bring the whole question into its view, so neither its words nor
    // its buttons are cut off at the panel's edge.
    decision.querySelector('[data-confirm=approve]')?.scrollIntoView({ block: 'nearest' });
    decision.querySelector('[data-action=confirm-approve]')?.focus({ preventScroll: true });
  }

  // approveLabel names what the approve button grants.
  function approveLabel() {
    if (shown.scope && !fullBuild) return 'Approve with this scope';
    if (shown.scope) return `Approve revision ${shown.revision} for a full build`;
    return `Approve revision ${shown.revision}`;
  }

  // approvalConfirm says what approving unlocks: the session leaves plan
  // mode, unless an ancestor keeps it there, limited to the scope unless
  // an admin chose a full build.
  function approvalConfirm() {
    const inherited = session.effective_mode === 'plan' && session.mode_source && session.mode_source !== session.id;
    let what = 'The agent leaves plan mode and can change files.';
    if (shown.scope && !fullBuild) what = `The agent leaves plan mode and may change only what the scope names: ${scopeLine(shown.scope)}.`;
    if (shown.scope && fullBuild) what = 'The agent leaves plan mode and can change any file: the scope is lifted.';
    return h('div', { class: 'confirm', role: 'alertdialog', 'aria-labelledby': 'approve-confirm-h', 'data-confirm': 'approve' },
      h('p', { id: 'approve-confirm-h' }, h('strong', {}, `Approve revision ${shown.revision}?`)),
      h('p', {}, inherited
        ? `The session's own mode becomes build, but it stays in plan mode while ${session.mode_source} is in plan mode.`
        : what),
      h('p', { class: 'actions' },
        h('button', {
          type: 'button', class: fullBuild ? 'danger' : 'primary', 'data-action': 'confirm-approve',
          onclick: () => { confirming = false; decide('approve'); },
        }, approveLabel()),
        h('button', {
          type: 'button', 'data-action': 'cancel-approve',
          onclick: () => { confirming = false; drawDecision(); decision.querySelector('[data-action=approve]')?.focus(); },
        }, 'Cancel')));
  }

  function drawAll() {
    drawHeader();
    drawChanges(); // before the notices, which may offer its picker
    drawNotices();
    drawDecision();
    drawHistory();
  }

  // learnNewer records that the plan moved past the revision on screen,
  // with the server's diff from that revision to the new one.
  async function learnNewer(revision, author) {
    if (!shown || revision <= shown.revision) return;
    if (newer && newer.revision >= revision && newer.diff) return;
    let d = null;
    try {
      d = (await request(`/v1/sessions/${enc(id)}/plan/diff?from=${shown.revision}&to=${revision}`)).data;
    } catch (err) {
      console.error(err);
    }
    if (newer && newer.revision > revision) return; // a later one came first
    newer = { revision, author, diff: d };
    announce(`The plan changed: revision ${shown.revision} is no longer current; revision ${revision} is.`);
    try {
      await loadRevisions();
    } catch (err) {
      console.error(err);
    }
    drawChanges();
    drawNotices();
    drawDecision();
  }

  // commentOpen holds a decision back while a comment is being written,
  // and says so.
  function commentOpen() {
    const open = comments.composing();
    if (!open) return false;
    formError = `You are writing a comment on line ${open}: add it or cancel it first.`;
    confirming = false;
    drawDecision();
    comments.focusComposer();
    return true;
  }

  // decide sends the approval or rejection of the revision on screen,
  // bound to it by If-Match, with the feedback and the line comments.
  async function decide(kind) {
    if (commentOpen()) return;
    formError = null;
    busy = true;
    drawDecision();
    const rev = shown.revision;
    const body = {};
    if (feedback.value.trim()) body.feedback = feedback.value.trim();
    if (drafts.length) body.comments = drafts.map(({ line, body: text }) => ({ line, body: text }));
    if (kind === 'approve' && shown.scope) body.scope = fullBuild ? 'full' : 'plan';
    const sent = drafts.length;
    try {
      const res = await request(`/v1/sessions/${enc(id)}/plan/${kind}`, {
        method: 'POST', body: Object.keys(body).length ? body : undefined, headers: { 'If-Match': `"${rev}"` },
      });
      session = res.data;
      const withComments = sent ? ` with ${sent} line ${sent === 1 ? 'comment' : 'comments'}` : '';
      const granted = res.data.scope === 'plan' ? ' with its scope: the agent may change only what it names'
        : (shown.scope ? ' for a full build: the scope is lifted' : '');
      outcome = kind === 'approve'
        ? h('p', { class: 'notice ok', role: 'status', 'data-outcome': 'approved' },
          `Approved revision ${rev}${withComments}${granted}. The session's own mode is now ${session.mode}; its effective mode is ${session.effective_mode}.`,
          res.data.note ? ` ${res.data.note}` : '')
        : h('p', { class: 'notice ok', role: 'status', 'data-outcome': 'rejected' },
          `Rejected revision ${rev}${withComments}. The session stays in plan mode and the agent gets your feedback.`);
      announce(`${kind === 'approve' ? 'Approved' : 'Rejected'} revision ${rev}`);
      drafts = [];
      feedback.value = '';
      try {
        await loadHistory();
      } catch (err) {
        console.error(err);
      }
    } catch (err) {
      outcome = refused(err, rev, kind === 'approve' ? 'approval' : 'rejection');
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
        h('strong', {}, 'No review is pending any more. '), err.problem.detail || '');
    }
    return h('div', { 'data-outcome': 'error' }, app.errorBox(err));
  }

  if (shown) {
    await Promise.all([loadRevisions(), loadHistory()]);
    await loadScopeDiff();
  }
  drawPlan();
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
          if (ev.data?.review_withdrawn) {
            session = { ...session, review: { ...session.review, state: 'none' } };
          }
          await learnNewer(ev.revision, ev.data?.author);
          break;
        case 'session.review_requested':
        case 'session.review_approved':
        case 'session.review_rejected':
        case 'session.mode_changed':
        case 'session.scope_changed':
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
      if (shown) {
        try {
          await loadHistory();
        } catch (err) {
          console.error(err);
        }
      }
      drawAll();
    },
    onExpired: () => app.navigate(location.pathname + location.search, { replace: true }),
  });
  return () => w.close();
}
