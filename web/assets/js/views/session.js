// Sessions: the list of every session, and one session's page: the tree
// around it with each session's own and effective mode, the mode switch,
// its plan and review, its todos and its event history, all live.

import { request, listAll, enc, ApiError } from '../api.js';
import { h, clear, time, announce, debounce } from '../dom.js';
import { loadReviewHistory, renderReviewHistory } from '../reviews.js';
import { renderBuildScope } from '../scope.js';

export function modeBadge(s) {
  return h('span', { class: `mode mode-${s.effective_mode}` }, s.effective_mode === 'plan' ? 'plan mode' : 'build mode');
}

// modeSource says where a session's effective mode comes from.
export function modeSource(s) {
  if (s.effective_mode !== 'plan') return 'build: no session in its chain is in plan mode';
  if (s.mode_source === s.id) return 'plan mode is its own setting';
  return h('span', {}, 'plan mode comes from ', h('a', { href: `/ui/sessions/${enc(s.mode_source)}` }, s.mode_source));
}

function reviewText(r) {
  switch (r.state) {
    case 'pending': return `review of plan revision ${r.plan_revision} pending`;
    case 'approved': return `plan revision ${r.plan_revision} approved by ${r.decided_by}`;
    case 'rejected': return `plan revision ${r.plan_revision} rejected by ${r.decided_by}`;
    default: return 'no review';
  }
}

export async function sessionsView(main, _params, app) {
  document.title = 'Sessions · planserver';
  const body = h('tbody');
  main.append(h('h1', {}, 'Sessions'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Session'), h('th', { scope: 'col' }, 'Parent'),
        h('th', { scope: 'col' }, 'Own mode'), h('th', { scope: 'col' }, 'Effective mode'),
        h('th', { scope: 'col' }, 'Review'), h('th', { scope: 'col' }, 'Updated'))),
      body)));
  const load = async () => {
    const { items, seq } = await listAll('/v1/sessions', 'sessions');
    clear(body);
    for (const s of items) {
      body.appendChild(h('tr', {},
        h('th', { scope: 'row' }, h('a', { href: `/ui/sessions/${enc(s.id)}` }, s.title || s.id),
          s.title ? h('div', { class: 'muted' }, h('code', {}, s.id)) : null),
        h('td', {}, s.parent_id ? h('a', { href: `/ui/sessions/${enc(s.parent_id)}` }, s.parent_id) : '—'),
        h('td', {}, s.mode),
        h('td', {}, modeBadge(s), s.mode_source && s.mode_source !== s.id ? h('div', { class: 'muted' }, `from ${s.mode_source}`) : null),
        h('td', {}, s.review.state === 'pending'
          ? h('a', { href: `/ui/sessions/${enc(s.id)}/review?revision=${s.review.plan_revision}` }, reviewText(s.review))
          : reviewText(s.review)),
        h('td', {}, time(s.updated_at))));
    }
    if (!items.length) body.appendChild(h('tr', {}, h('td', { colspan: 6 }, 'No sessions yet.')));
    return seq;
  };
  const seq = await load();
  const reload = debounce(() => load().catch((err) => console.error(err)), 200);
  const w = app.watch({}, {
    after: seq,
    onEvent: (ev) => { if (ev.session_id) reload(); },
    onExpired: () => app.navigate(location.pathname, { replace: true }),
  });
  return () => w.close();
}

export async function sessionView(main, [id], app) {
  document.title = `${id} · planserver`;
  const first = await request(`/v1/sessions/${enc(id)}`);
  const heading = h('h1', {});
  const summary = h('div', { class: 'summary' });
  const modeBox = h('section', { class: 'panel', 'aria-labelledby': 'mode-h' });
  const tree = h('section', { class: 'panel', 'aria-labelledby': 'tree-h' });
  const planBox = h('section', { class: 'panel', 'aria-labelledby': 'plan-h' });
  const todosBox = h('section', { class: 'panel', 'aria-labelledby': 'todos-h' });
  const historyList = h('ol', { class: 'history', reversed: true });
  const historyBox = h('section', { class: 'panel wide', 'aria-labelledby': 'history-h' },
    h('h2', { id: 'history-h' }, 'Event history'),
    h('p', { class: 'muted' }, 'Every change to this session and its sub-sessions, newest first.'),
    historyList);
  const reviewsBox = h('section', { class: 'panel wide', 'aria-labelledby': 'reviews-h' });
  // The tool calls refused against the scope, newest first.
  const deniedList = h('ol', { class: 'denials', reversed: true });
  const deniedBox = h('section', { class: 'panel wide', 'aria-labelledby': 'denials-h', 'data-field': 'out-of-scope' },
    h('h2', { id: 'denials-h' }, 'Refused against the scope'),
    h('p', { class: 'muted' }, 'Tool calls of this session and its sub-sessions that reached outside the approved scope, newest first.'),
    deniedList);
  main.append(heading, summary, h('div', { class: 'grid' }, modeBox, tree, planBox, todosBox), deniedBox, reviewsBox, historyBox);

  let session = first.data;
  let confirming = false;
  let lifting = false;
  let modeError = null;

  async function loadSession() {
    session = (await request(`/v1/sessions/${enc(id)}`)).data;
  }

  function drawHeader() {
    clear(heading).append(session.title || session.id);
    clear(summary).append(h('p', { class: 'meta' },
      h('span', {}, 'session ', h('code', {}, session.id)),
      session.agent ? h('span', {}, `agent ${session.agent}`) : null,
      session.harness ? h('span', { class: 'badge' }, 'harness') : null,
      h('span', {}, `revision ${session.revision}`),
      h('span', {}, 'updated ', time(session.updated_at))));
  }

  // drawEnforcement lists the host hooks that decided this session's tool
  // calls lately (and when their after-tool hooks last reported a run),
  // raises a red alarm for tool runs nobody judged, and warns when plan
  // mode has no hook deciding, or an adapter reports runs while its
  // before-tool hook sends no decisions (docs/hosts.md).
  function drawEnforcement(s) {
    const seen = s.enforcement ?? [];
    const last = (e) => [
      e.last_decision_at ? h('span', {}, 'last decision ', time(e.last_decision_at)) : h('span', {}, 'no decision'),
      e.last_report_at ? h('span', {}, ', last report ', time(e.last_report_at)) : null];
    modeBox.append(h('dl', { class: 'facts' },
      h('dt', {}, 'Enforced by'),
      h('dd', { 'data-field': 'enforcement' }, seen.length === 0 ? 'no host hook seen'
        : seen.map((e, i) => h('span', { 'data-host': e.host }, i > 0 ? '; ' : '', `${e.host} (${e.adapter}: `, ...last(e), ')')))));
    const unjudged = seen.filter((e) => e.unjudged_runs > 0);
    if (unjudged.length > 0) {
      const runs = unjudged.reduce((n, e) => n + e.unjudged_runs, 0);
      modeBox.append(h('div', { class: 'notice error', role: 'alert', 'data-field': 'unjudged-alarm' },
        h('p', {}, h('strong', {}, `${runs} tool ${runs === 1 ? 'run' : 'runs'} nobody judged`)),
        ...unjudged.map((e) => {
          const u = e.last_unjudged;
          return h('p', {}, `${e.host} (${e.adapter}): ${e.unjudged_runs}; the last, `, h('code', {}, u?.tool ?? '?'),
            u?.agent ? ` by sub-agent ${u.agent_type || u.agent}` : '', ', ', u ? time(u.at) : '',
            u?.reason === 'denied' ? ', ran although planserver denied it' : ', ran with no decision of planserver\'s',
            u?.effective_mode === 'plan' ? ' in plan mode.' : '.');
        }),
        h('p', {}, 'The host\'s after-tool hook reported these runs; its before-tool hook did not ask, or the host ignored the answer. Run ',
          ...[...new Set(unjudged.map((e) => e.host))].flatMap((host, i) => [i > 0 ? ' and ' : '', h('code', {}, `planserver hook doctor ${host}`)]),
          ' on the machine that runs it.')));
    }
    const warnings = [];
    if (s.effective_mode === 'plan' && !seen.some((e) => e.last_decision_at)) {
      warnings.push(h('p', {}, h('strong', {}, 'No host hook has been seen enforcing plan mode for this session.')),
        h('p', {}, 'Its MCP tools follow the mode, but the host\'s own shell and file tools may not: install the hook with ',
          h('code', {}, 'planserver hook install HOST'), ' (see docs/hosts.md).'));
    } else if (s.effective_mode === 'plan' && unjudged.length > 0) {
      warnings.push(h('p', {}, h('strong', {}, 'Plan mode did not hold every tool run of this session:'),
        ' see the runs nobody judged above.'));
    }
    // Reports and decisions are each stamped at most once a minute; two
    // minutes apart is a before-tool hook that stopped deciding.
    for (const e of seen) {
      const report = e.last_report_at ? Date.parse(e.last_report_at) : NaN;
      const decided = e.last_decision_at ? Date.parse(e.last_decision_at) : NaN;
      if (!Number.isNaN(report) && (Number.isNaN(decided) || report - decided > 120000)) {
        warnings.push(h('p', { 'data-host': e.host }, `${e.host} (${e.adapter}) reports tool runs, but its before-tool hook sends no decisions: `,
          'it is missing or failing, so the host runs its tools unjudged. Run ', h('code', {}, `planserver hook doctor ${e.host}`), '.'));
      }
    }
    if (warnings.length > 0) {
      modeBox.append(h('div', { class: 'notice warn', role: 'note', 'data-field': 'enforcement-warning' }, ...warnings));
    }
  }

  function drawMode() {
    clear(modeBox).append(h('h2', { id: 'mode-h' }, 'Mode'));
    const s = session;
    modeBox.append(h('dl', { class: 'facts' },
      h('dt', {}, 'Own mode'), h('dd', { 'data-field': 'mode' }, s.mode),
      h('dt', {}, 'Effective mode'), h('dd', { 'data-field': 'effective_mode' }, modeBadge(s)),
      h('dt', {}, 'Where it comes from'), h('dd', { 'data-field': 'mode_source' }, modeSource(s))));
    drawScope(s);
    if (s.effective_mode === 'plan' && s.mode_source !== s.id) {
      modeBox.append(h('p', { class: 'muted' },
        `Its own mode is ${s.mode}, but an ancestor keeps it in plan mode: switch that ancestor to change what its tools may do.`));
    }
    drawEnforcement(s);
    if (!app.canWrite) {
      modeBox.append(h('p', { class: 'muted' }, 'Read-only: only an admin changes modes.'));
      return;
    }
    const target = s.mode === 'plan' ? 'build' : 'plan';
    const pending = s.review.state === 'pending';
    if (modeError) modeBox.append(app.errorBox(modeError));
    if (!confirming) {
      modeBox.append(h('button', {
        type: 'button', class: target === 'build' ? 'danger' : '', 'data-action': 'toggle-mode',
        onclick: () => {
          modeError = null;
          if (target === 'build') { confirming = true; drawMode(); modeBox.querySelector('[data-action=confirm-mode]')?.focus(); } else setMode(target);
        },
      }, target === 'build' ? 'Leave plan mode…' : 'Switch to plan mode'));
      if (target === 'plan') {
        modeBox.append(h('p', { class: 'muted' }, 'In plan mode the agent (and every sub-session) sees only read-only tools until a human approves its plan.'));
      }
      return;
    }
    modeBox.append(h('div', { class: 'confirm', role: 'alertdialog', 'aria-labelledby': 'confirm-h' },
      h('p', { id: 'confirm-h' }, h('strong', {}, 'Leave plan mode without approving a plan?')),
      h('p', {}, 'The agent gets all its tools back at once.',
        pending ? ` The pending review of plan revision ${s.review.plan_revision} is cancelled.` : '',
        ' To let it act on a plan you read, approve that plan instead.'),
      h('p', { class: 'actions' },
        h('button', { type: 'button', class: 'danger', 'data-action': 'confirm-mode', onclick: () => setMode('build') },
          pending ? 'Leave plan mode and cancel the review' : 'Leave plan mode'),
        h('button', { type: 'button', onclick: () => { confirming = false; drawMode(); } }, 'Keep plan mode'))));
  }

  // drawScope shows what limits the session in build mode: the scope a
  // human approved, where it comes from, and (for an admin) the way to
  // lift it.
  function drawScope(s) {
    const b = s.build_scope;
    if (s.effective_mode === 'plan') {
      modeBox.append(h('p', { class: 'muted', 'data-field': 'scope-state' }, 'Scope: none in force while in plan mode; an approval of a plan with a scope block grants one.'));
      return;
    }
    if (!b) {
      modeBox.append(h('p', { 'data-field': 'scope-state' }, h('strong', {}, 'Full build: '), 'no approved scope limits what the agent changes.'));
      return;
    }
    modeBox.append(renderBuildScope(b, s.id));
    if (app.role !== 'admin') return;
    if (b.session_id !== s.id) {
      modeBox.append(h('p', { class: 'muted' }, 'To lift it, lift the scope of ', h('a', { href: `/ui/sessions/${enc(b.session_id)}` }, b.session_id), '.'));
      return;
    }
    if (!lifting) {
      modeBox.append(h('button', {
        type: 'button', class: 'danger', 'data-action': 'lift-scope',
        onclick: () => { lifting = true; modeError = null; drawMode(); modeBox.querySelector('[data-action=confirm-lift]')?.focus(); },
      }, 'Lift the scope…'));
      return;
    }
    modeBox.append(h('div', { class: 'confirm', role: 'alertdialog', 'aria-labelledby': 'lift-h' },
      h('p', { id: 'lift-h' }, h('strong', {}, 'Lift the scope: full build?')),
      h('p', {}, 'The agent may then change anything in the project, not only what the approved plan names. The decision is recorded with your name.'),
      h('p', { class: 'actions' },
        h('button', { type: 'button', class: 'danger', 'data-action': 'confirm-lift', onclick: () => liftScope() }, 'Lift the scope'),
        h('button', { type: 'button', onclick: () => { lifting = false; drawMode(); } }, 'Keep the scope'))));
  }

  async function liftScope() {
    lifting = false;
    try {
      session = (await request(`/v1/sessions/${enc(id)}/scope`, { method: 'DELETE', headers: { 'If-Match': `"${session.revision}"` } })).data;
      announce(`The scope of session ${id} is lifted: full build`);
    } catch (err) {
      modeError = err;
      if (err instanceof ApiError && err.status === 412) await loadSession();
    }
    drawHeader();
    drawMode();
  }

  async function setMode(mode) {
    confirming = false;
    try {
      const res = await request(`/v1/sessions/${enc(id)}/mode`, {
        method: 'PATCH', body: { mode }, headers: { 'If-Match': `"${session.revision}"` },
      });
      session = res.data;
      announce(`Session ${id} is now in ${session.effective_mode} mode`);
    } catch (err) {
      modeError = err;
      if (err instanceof ApiError && err.status === 412) {
        modeError = new ApiError(412, { title: 'The session changed', detail: 'It changed while you looked; here is how it is now. Try again if you still want to.' });
        await loadSession();
      }
    }
    drawHeader();
    drawMode();
    await Promise.all([drawTree(), drawPlan(), drawReviews()]);
    modeBox.querySelector('[data-action=toggle-mode]')?.focus();
  }

  function treeRow(s, rel) {
    return h('li', { class: s.id === id ? 'current' : '', 'data-session': s.id },
      s.id === id ? h('strong', { 'aria-current': 'page' }, s.title || s.id) : h('a', { href: `/ui/sessions/${enc(s.id)}` }, s.title || s.id),
      ' ', h('span', { class: 'muted' }, rel), ' ',
      h('span', { class: 'modes' }, `own ${s.mode} · effective `, modeBadge(s),
        s.effective_mode === 'plan' ? h('span', { class: 'muted' }, ` from ${s.mode_source}`) : null));
  }

  // Each panel reads first and then replaces its content in one go, so
  // it never shows half-drawn; a read overtaken by a newer one is dropped.
  const gens = { tree: 0, plan: 0, todos: 0, reviews: 0 };

  async function drawTree() {
    const gen = ++gens.tree;
    const chain = [];
    let cur = session;
    while (cur.parent_id && chain.length < 64) {
      try {
        cur = (await request(`/v1/sessions/${enc(cur.parent_id)}`)).data;
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) break;
        throw err;
      }
      chain.unshift(cur);
    }
    const { items: children } = await listAll(`/v1/sessions?parent_id=${enc(id)}`, 'sessions');
    if (gen !== gens.tree) return;
    const ol = h('ol', { class: 'tree', 'aria-label': 'Ancestors, this session and its children' });
    chain.forEach((s, k) => ol.append(treeRow(s, k === chain.length - 1 ? 'parent' : 'ancestor')));
    ol.append(treeRow(session, 'this session'));
    if (children.length) {
      const sub = h('ol', { class: 'children' });
      for (const c of children) sub.append(treeRow(c, 'child'));
      ol.lastChild.append(sub);
    }
    clear(tree).append(h('h2', { id: 'tree-h' }, 'Session tree'), ol);
    if (!children.length) tree.append(h('p', { class: 'muted' }, 'No sub-sessions.'));
  }

  async function drawPlan() {
    const gen = ++gens.plan;
    let plan = null;
    try {
      plan = (await request(`/v1/sessions/${enc(id)}/plan`)).data;
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err;
    }
    if (gen !== gens.plan) return;
    const r = session.review;
    clear(planBox).append(h('h2', { id: 'plan-h' }, 'Plan and review'),
      h('p', { 'data-field': 'review' }, reviewText(r),
        r.decided_at ? h('span', { class: 'muted' }, ' at ', time(r.decided_at)) : null));
    if (r.feedback) planBox.append(h('blockquote', { class: 'feedback' }, r.feedback));
    if (!plan) {
      planBox.append(h('p', { class: 'muted' }, 'No plan written yet.'));
      return;
    }
    planBox.append(h('p', {}, `Plan revision ${plan.revision} by ${plan.author}, `, time(plan.updated_at), '. ',
      h('a', { href: `/ui/sessions/${enc(id)}/review?revision=${plan.revision}` },
        r.state === 'pending' ? `Review revision ${plan.revision}` : `Read revision ${plan.revision}`)));
  }

  // The review history: every decision on this session's plan, with its
  // feedback and line comments, and the reviews withdrawn or cancelled.
  const texts = new Map();
  async function drawReviews() {
    const gen = ++gens.reviews;
    const { history } = await loadReviewHistory(id, texts);
    if (gen !== gens.reviews) return;
    clear(reviewsBox).append(h('h2', { id: 'reviews-h' }, 'Review history'),
      h('p', { class: 'muted' }, 'Every review of this session\'s plan, newest first.'),
      renderReviewHistory(history, texts));
  }

  async function drawTodos() {
    const gen = ++gens.todos;
    const list = (await request(`/v1/sessions/${enc(id)}/todos`)).data;
    if (gen !== gens.todos) return;
    clear(todosBox).append(h('h2', { id: 'todos-h' }, 'Todos'));
    if (!list.todos.length) {
      todosBox.append(h('p', { class: 'muted' }, 'No todos.'));
      return;
    }
    const marks = { pending: '☐', in_progress: '◐', completed: '☑' };
    todosBox.append(h('ul', { class: 'todos' }, list.todos.map((t) => h('li', { class: `todo-${t.status}` },
      h('span', { 'aria-hidden': 'true' }, marks[t.status] || '·'), ' ', t.content,
      ' ', h('span', { class: 'muted' }, `(${t.status.replace('_', ' ')})`)))));
  }

  const seen = new Set();
  const lineComments = (r) => {
    const n = r?.comments?.length || 0;
    return n ? ` (${n} line ${n === 1 ? 'comment' : 'comments'})` : '';
  };
  function eventRow(ev) {
    const d = ev.data || {};
    let what = '';
    switch (ev.type) {
      case 'session.mode_changed':
        what = d.changed_by
          ? `effective mode now ${d.effective_mode}, because ${d.changed_by} changed its mode`
          : `mode ${d.previous_mode ?? '?'} → ${d.mode}, effective ${d.effective_mode}`;
        if (d.review_cancelled) what += '; pending review cancelled';
        break;
      case 'session_plan.updated': what = `plan revision ${ev.revision}${d.review_withdrawn ? '; pending review withdrawn' : ''}`; break;
      case 'session.review_requested': what = `review of plan revision ${d.review?.plan_revision}`; break;
      case 'session.review_approved': what = `plan revision ${d.review?.plan_revision} approved${lineComments(d.review)}`; break;
      case 'session.review_rejected': what = `plan revision ${d.review?.plan_revision} rejected${d.review?.feedback ? `: ${d.review.feedback}` : ''}${lineComments(d.review)}`; break;
      case 'tool_call.denied': what = `tool ${d.tool ?? d.name ?? ''} denied`; break;
      case 'tool_call.unjudged': what = `tool ${d.tool ?? ''} ran ${d.reason === 'denied' ? 'although denied' : 'with no decision'} (${d.host ?? ''})`; break;
      case 'tool_call.out_of_scope': what = `${d.tool} refused outside the scope: ${d.path || d.command || ''}`; break;
      case 'session.scope_changed':
        what = { approved: `scope of plan revision ${d.grant?.plan_revision} granted`, lifted: 'scope lifted: full build',
          inherited: `scope now ${d.build_scope ? `that of ${d.build_scope.session_id}` : 'none'}, because ${d.changed_by} changed` }[d.reason] || '';
        break;
      case 'todos.updated': what = `${(d.todos || []).length} todos`; break;
      default: what = '';
    }
    return h('li', { 'data-seq': ev.seq },
      h('span', { class: 'seq' }, `#${ev.seq}`), ' ', time(ev.time), ' ',
      h('code', {}, ev.type), ' ',
      ev.session_id && ev.session_id !== id ? h('span', {}, 'on ', h('a', { href: `/ui/sessions/${enc(ev.session_id)}` }, ev.session_id), ' ') : null,
      what ? h('span', {}, what, ' ') : null,
      h('span', { class: 'muted' }, `by ${ev.actor}`));
  }
  function denialRow(ev) {
    const d = ev.data || {};
    return h('li', { 'data-denial': ev.seq },
      time(ev.time), ' ', h('strong', {}, d.tool), ' ',
      d.path ? h('code', { 'data-field': 'path' }, d.path) : null,
      d.command ? h('code', { 'data-field': 'command' }, d.command) : null,
      ' ', h('span', { class: 'muted' },
        ev.session_id !== id ? `in ${ev.session_id}, ` : '',
        d.agent_id ? `by a sub-agent (${d.agent_type || d.agent_id}), ` : '',
        `${d.host}, against plan revision ${d.scope_revision}${d.scope_session && d.scope_session !== id ? ` of ${d.scope_session}` : ''}`));
  }
  function addEvent(ev) {
    if (seen.has(ev.seq)) return;
    seen.add(ev.seq);
    historyList.prepend(eventRow(ev));
    if (ev.type === 'tool_call.out_of_scope') {
      deniedList.querySelector('.none')?.remove();
      deniedList.prepend(denialRow(ev));
    }
  }

  drawHeader();
  drawMode();
  await Promise.all([drawTree(), drawPlan(), drawTodos(), drawReviews()]);

  // History: the log's JSON pages for this session's subtree, oldest
  // first, then the live stream from the first read's X-Event-Seq (so
  // nothing between the reads and the stream is missed; seen drops
  // repeats).
  let after = 0;
  for (let pages = 0; pages < 50; pages += 1) {
    const page = (await request(`/v1/events?session_id=${enc(id)}&after=${after}&limit=1000`)).data;
    page.events.forEach(addEvent);
    after = page.next_after;
    if (page.events.length < 1000) break;
  }
  if (!deniedList.children.length) deniedList.append(h('li', { class: 'none muted' }, 'None.'));

  const refresh = debounce(async () => {
    try {
      await loadSession();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        clear(main).append(h('h1', {}, `Session ${id} was deleted`), h('p', {}, h('a', { href: '/ui/sessions' }, 'All sessions')));
        return;
      }
      throw err;
    }
    drawHeader();
    if (!confirming && !lifting) drawMode();
    await Promise.all([drawTree(), drawPlan(), drawTodos(), drawReviews()]);
  }, 150);
  const w = app.watch({ session_id: id }, {
    after: first.seq,
    onEvent: (ev) => {
      addEvent(ev);
      if (ev.session_id === id && ev.type !== 'tool_call.denied' && ev.type !== 'tool_call.out_of_scope') announce(`${ev.type} on ${id}`);
      refresh();
    },
    onExpired: () => app.navigate(location.pathname, { replace: true }),
  });
  return () => w.close();
}
