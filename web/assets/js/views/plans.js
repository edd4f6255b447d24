// Shared plans: the list with status, author and progress, and one plan's
// page with its step graph, reports per step, content and revisions, all
// live.

import { request, listAll, enc, ApiError } from '../api.js';
import { h, clear, time, formatTime, announce, debounce } from '../dom.js';
import { renderMarkdown } from '../markdown.js';
import { renderGraph, fitGraph, fitText, leaseText, leaseOver, isReady } from '../dag.js';
import { renderDiff, comparePicker } from '../diff.js';

function progressBar(p) {
  const total = p.total || 0;
  const text = total
    ? `${p.complete}/${total} complete${p.in_progress ? `, ${p.in_progress} in progress` : ''}${p.blocked ? `, ${p.blocked} blocked` : ''}${p.ready ? `, ${p.ready} ready` : ''}`
    : 'no steps';
  return h('div', { class: 'progress-cell' }, progressSVG(p), h('span', {}, text));
}

// progressSVG draws the progress bar as an SVG, whose geometry is
// attributes (allowed) rather than inline styles (refused by the CSP).
function progressSVG(p) {
  const total = p.total || 0;
  const root = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  root.setAttribute('viewBox', '0 0 100 8');
  root.setAttribute('preserveAspectRatio', 'none');
  root.setAttribute('class', 'progress');
  root.setAttribute('aria-hidden', 'true');
  let x = 0;
  const bg = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
  bg.setAttribute('width', '100');
  bg.setAttribute('height', '8');
  bg.setAttribute('class', 'track');
  root.append(bg);
  for (const [k, n] of [['complete', p.complete], ['in_progress', p.in_progress], ['blocked', p.blocked]]) {
    if (!n || !total) continue;
    const w = (100 * n) / total;
    const r = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    r.setAttribute('x', String(x));
    r.setAttribute('width', String(w));
    r.setAttribute('height', '8');
    r.setAttribute('class', `st-${k}`);
    root.append(r);
    x += w;
  }
  return root;
}

export async function plansView(main, _params, app) {
  document.title = 'Shared plans · planserver';
  const body = h('tbody');
  main.append(h('h1', {}, 'Shared plans'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Plan'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Author'),
        h('th', { scope: 'col' }, 'Progress'), h('th', { scope: 'col' }, 'Revision'), h('th', { scope: 'col' }, 'Updated'))),
      body)));
  const load = async () => {
    const { items, seq } = await listAll('/v1/plans', 'plans');
    clear(body);
    for (const p of items) {
      body.append(h('tr', { 'data-plan': p.name },
        h('th', { scope: 'row' }, h('a', { href: `/ui/plans/${enc(p.name)}` }, p.title || p.name),
          p.title ? h('div', { class: 'muted' }, h('code', {}, p.name)) : null),
        h('td', {}, p.status ? h('span', { class: 'badge' }, p.status) : h('span', { class: 'muted' }, '—')),
        h('td', {}, p.author || '—'),
        h('td', {}, progressBar(p.progress)),
        h('td', {}, String(p.revision)),
        h('td', {}, time(p.updated_at))));
    }
    if (!items.length) body.append(h('tr', {}, h('td', { colspan: 6 }, 'No shared plans yet.')));
    return seq;
  };
  const seq = await load();
  const reload = debounce(() => load().catch((err) => console.error(err)), 200);
  const w = app.watch({}, {
    after: seq,
    onEvent: (ev) => { if (ev.plan) reload(); },
    onExpired: () => app.navigate(location.pathname, { replace: true }),
  });
  return () => w.close();
}

const STATUS_WORD = { pending: 'pending', in_progress: 'in progress', complete: 'complete', blocked: 'blocked' };

// The fields of a plan and of a step that a comparison shows, in order.
const PLAN_FIELDS = [['title', 'title'], ['status', 'status'], ['author', 'author']];
const STEP_FIELDS = [
  ['description', 'description'], ['owner', 'owner'], ['deps', 'depends on'], ['status', 'status'],
  ['parallel', 'parallel'], ['criteria', 'done when'], ['commands', 'commands'], ['files', 'files'],
  ['risk_notes', 'risks'], ['claimed_by', 'claimed by'], ['claim_expires_at', 'lease until'],
];

function shown(v) {
  if (v === null || v === undefined || v === '' || v === false || (Array.isArray(v) && !v.length)) return '—';
  if (v === true) return 'yes';
  if (Array.isArray(v)) return v.join(', ');
  return typeof v === 'string' && Object.hasOwn(STATUS_WORD, v) ? STATUS_WORD[v] : String(v);
}

// stepChanges lists what differs between two revisions of a plan beyond
// its content: [{what, before, after}], the plan's own fields first, then
// each step in the newer revision's order, then the steps it removed.
export function stepChanges(a, b) {
  const out = [];
  for (const [key, word] of PLAN_FIELDS) {
    if (shown(a[key]) !== shown(b[key])) out.push({ what: `plan ${word}`, before: shown(a[key]), after: shown(b[key]) });
  }
  const before = new Map((a.steps || []).map((s) => [s.id, s]));
  const after = new Map((b.steps || []).map((s) => [s.id, s]));
  for (const [id, s] of after) {
    const old = before.get(id);
    if (!old) {
      out.push({ step: id, what: `step ${id}`, before: '—', after: `added: ${s.description}` });
      continue;
    }
    for (const [key, word] of STEP_FIELDS) {
      if (shown(old[key]) === shown(s[key])) continue;
      const show = key === 'claim_expires_at' ? (v) => (v ? formatTime(new Date(v)) : '—') : shown;
      out.push({ step: id, what: `step ${id} · ${word}`, before: show(old[key]), after: show(s[key]) });
    }
  }
  for (const [id, s] of before) {
    if (!after.has(id)) out.push({ step: id, what: `step ${id}`, before: s.description, after: 'removed' });
  }
  return out;
}

function renderStepChanges(from, to, changes) {
  const title = `Status and steps from revision ${from} to revision ${to}`;
  if (!changes.length) return h('p', { class: 'diff-empty step-changes' }, `${title}: no changes.`);
  return h('figure', { class: 'step-changes' },
    h('figcaption', {}, `${title}: ${changes.length} ${changes.length === 1 ? 'change' : 'changes'}`),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'What'), h('th', { scope: 'col' }, `Revision ${from}`), h('th', { scope: 'col' }, `Revision ${to}`))),
      h('tbody', {}, changes.map((c) => h('tr', { 'data-step-change': c.step || '' },
        h('th', { scope: 'row' }, c.what), h('td', { class: 'del' }, c.before), h('td', { class: 'add' }, c.after)))))));
}

export async function planView(main, [name], app) {
  document.title = `${name} · planserver`;
  const heading = h('h1', {});
  const meta = h('div', { class: 'summary' });
  const graphBox = h('section', { class: 'panel wide', 'aria-labelledby': 'graph-h' });
  const stepBox = h('section', { class: 'panel', 'aria-labelledby': 'step-h', 'aria-live': 'polite' });
  const tableBox = h('section', { class: 'panel', 'aria-labelledby': 'steps-h' });
  const contentBox = h('section', { class: 'panel wide', 'aria-labelledby': 'content-h' });
  const revBox = h('section', { class: 'panel wide', 'aria-labelledby': 'revs-h' });
  // The step and steps panels only mean something when there are steps:
  // drawGraph hides them for a plan without any.
  const stepPanels = h('div', { class: 'grid', 'data-panels': 'steps' }, stepBox, tableBox);
  main.append(heading, meta, graphBox, stepPanels, contentBox, revBox);

  let plan = null;
  let reports = new Map();
  let revisions = [];
  let selected = null;
  let picker = null; // the revisions panel's compare form, made once

  async function load() {
    const res = await request(`/v1/plans/${enc(name)}`);
    plan = res.data;
    const [reps, revs] = await Promise.all([
      request(`/v1/plans/${enc(name)}/reports`),
      request(`/v1/plans/${enc(name)}/revisions`),
    ]);
    reports = new Map();
    for (const r of reps.data.reports) {
      if (!reports.has(r.step_id)) reports.set(r.step_id, []);
      reports.get(r.step_id).push(r);
    }
    revisions = revs.data.revisions;
    if (selected && !plan.steps.some((s) => s.id === selected)) selected = null;
    return res.seq;
  }

  function drawHeader() {
    clear(heading).append(plan.title || plan.name);
    clear(meta).append(h('p', { class: 'meta' },
      h('span', {}, 'plan ', h('code', {}, plan.name)),
      plan.status ? h('span', { class: 'badge' }, plan.status) : null,
      h('span', {}, `by ${plan.author || '—'}`),
      h('span', {}, `revision ${plan.revision}`),
      h('span', {}, 'updated ', time(plan.updated_at))),
    h('div', { class: 'progress-line' }, progressBar(plan.progress)));
  }

  function drawGraph() {
    clear(graphBox).append(h('h2', { id: 'graph-h' }, 'Step graph'));
    stepPanels.hidden = !plan.steps.length;
    if (!plan.steps.length) {
      graphBox.append(h('p', { class: 'muted' }, 'This plan has no structured steps.'));
      return;
    }
    graphBox.append(h('p', { class: 'muted legend' },
      'Arrows run from a step to the steps that wait for it. ',
      ...['pending', 'in_progress', 'complete', 'blocked'].map((s) => h('span', { class: `key st-${s}` }, STATUS_WORD[s])),
      h('span', { class: 'key ready' }, 'ready to claim')));
    graphBox.append(h('div', { class: 'dag-wrap' }, renderGraph(plan.steps, {
      reports,
      selected,
      onSelect: (id) => {
        selected = id;
        drawGraph();
        drawStep();
        graphBox.querySelector(`[data-step="${CSS.escape(id)}"]`)?.focus();
      },
    })));
    fitGraph(graphBox);
  }

  function list(title, items) {
    if (!items || !items.length) return null;
    return [h('dt', {}, title), h('dd', {}, h('ul', {}, items.map((x) => h('li', {}, h('code', {}, x)))))];
  }

  function drawStep() {
    clear(stepBox).append(h('h2', { id: 'step-h' }, selected ? `Step ${selected}` : 'Step'));
    const s = plan.steps.find((x) => x.id === selected);
    if (!s) {
      stepBox.append(h('p', { class: 'muted' }, 'Choose a step in the graph (Tab to it, then Enter) to see its details and reports.'));
      return;
    }
    const byId = new Map(plan.steps.map((x) => [x.id, x]));
    stepBox.append(
      h('p', {}, s.description),
      h('dl', { class: 'facts' },
        h('dt', {}, 'Status'), h('dd', {}, STATUS_WORD[s.status] || s.status, isReady(s, byId) ? ' (ready to claim)' : ''),
        h('dt', {}, 'Owner'), h('dd', {}, s.owner),
        h('dt', {}, 'Depends on'), h('dd', {}, s.deps.length ? s.deps.join(', ') : 'nothing'),
        h('dt', {}, 'Claim'), h('dd', { 'data-lease': s.id }, s.claimed_by ? leaseText(s) : 'unclaimed',
          s.claim_expires_at ? h('span', { class: 'muted' }, ' (until ', time(s.claim_expires_at), ')') : null),
        s.criteria ? [h('dt', {}, 'Done when'), h('dd', {}, s.criteria)] : null,
        list('Commands', s.commands),
        list('Files', s.files),
        s.risk_notes ? [h('dt', {}, 'Risks'), h('dd', {}, s.risk_notes)] : null));
    const rs = reports.get(s.id) || [];
    stepBox.append(h('h3', {}, `Reports (${rs.length})`));
    if (!rs.length) {
      stepBox.append(h('p', { class: 'muted' }, 'No reports yet.'));
      return;
    }
    stepBox.append(h('ol', { class: 'reports' }, rs.map((r) => h('li', { class: `out-${r.outcome}` },
      h('p', {}, h('strong', {}, r.outcome), ` by ${r.worker || r.actor} `, time(r.time), ` (plan revision ${r.plan_revision})`),
      r.details ? h('p', {}, r.details) : null,
      r.artifacts.length ? h('ul', { class: 'artifacts' }, r.artifacts.map((a) => h('li', {},
        a.file ? h('code', {}, a.file) : null, a.status ? ` ${a.status}` : '',
        a.test ? h('code', {}, a.test) : null, a.result ? ` ${a.result}` : ''))) : null))));
  }

  function drawTable() {
    clear(tableBox).append(h('h2', { id: 'steps-h' }, 'Steps'));
    if (!plan.steps.length) return;
    const byId = new Map(plan.steps.map((x) => [x.id, x]));
    tableBox.append(h('div', { class: 'table-wrap' }, h('table', { class: 'list steps' },
      h('thead', {}, h('tr', {}, ['Step', 'Status', 'Owner', 'Deps', 'Claim', 'Reports'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, plan.steps.map((s) => h('tr', { 'data-step-row': s.id },
        h('th', { scope: 'row' }, h('button', { type: 'button', class: 'link', onclick: () => { selected = s.id; drawGraph(); drawStep(); } }, s.id)),
        h('td', {}, h('span', { class: `pill st-${s.status}` }, STATUS_WORD[s.status] || s.status), isReady(s, byId) ? ' ready' : ''),
        h('td', {}, s.owner),
        h('td', {}, s.deps.join(', ') || '—'),
        h('td', { 'data-lease': s.id }, s.claimed_by ? leaseText(s) : '—'),
        h('td', {}, String((reports.get(s.id) || []).length))))))));
  }

  function drawContent() {
    clear(contentBox).append(h('h2', { id: 'content-h' }, 'Content'));
    if (!plan.content) {
      contentBox.append(h('p', { class: 'muted' }, 'No Markdown content.'));
      return;
    }
    contentBox.append(renderMarkdown(plan.content));
  }

  const revTable = h('div', { class: 'table-wrap' });
  function drawRevisions() {
    clear(revTable).append(h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['Revision', 'Author', 'Status', 'Written'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, revisions.map((r) => h('tr', {},
        h('td', {}, String(r.revision), r.revision === plan.revision ? h('span', { class: 'muted' }, ' (current)') : ''),
        h('td', {}, r.author || '—'), h('td', {}, r.status || '—'), h('td', {}, time(r.updated_at)))))));
    const nums = revisions.map((r) => r.revision);
    if (picker) {
      picker.setRevisions(nums);
    } else if (nums.length >= 2) {
      // Until the user picks, the choice is the newest change.
      picker = comparePicker({
        id: 'diff', revisions: nums, defaults: (ns) => ({ from: ns[1], to: ns[0] }), show: compareRevisions, errorBox: app.errorBox,
        label: (n) => (n === plan.revision ? `revision ${n} (current)` : `revision ${n}`),
      });
    }
    clear(revBox).append(h('h2', { id: 'revs-h' }, 'Revisions'), revTable);
    if (picker) {
      revBox.append(h('p', { class: 'muted' },
        'Content changes are shown line by line; the plan\'s status and its steps field by field.'),
      picker.form, picker.out);
    }
  }

  // compareRevisions shows how revision `to` differs from `from`: the
  // content as the server's diff, then the plan's status and each step's
  // fields side by side (steps are structured data, not lines).
  async function compareRevisions(from, to) {
    const [d, a, b] = await Promise.all([
      request(`/v1/plans/${enc(name)}/diff?from=${from}&to=${to}`),
      request(`/v1/plans/${enc(name)}/revisions/${from}`),
      request(`/v1/plans/${enc(name)}/revisions/${to}`),
    ]);
    return h('div', {}, renderDiff(d.data, { caption: `Content from revision ${from} to revision ${to}` }),
      renderStepChanges(from, to, stepChanges(a.data, b.data)));
  }

  function drawAll() {
    drawHeader();
    drawGraph();
    drawStep();
    drawTable();
    drawContent();
    drawRevisions();
  }

  const seq = await load();
  drawAll();

  // Leases run out without an event: the lease texts count down here (a
  // clock, not a request), and when a lease runs out the graph, the step
  // and the table are drawn again, its step now ready to claim as the
  // server would answer. Keyboard focus stays on the node it was on.
  const leasesOver = () => plan.steps.filter((s) => leaseOver(s)).map((s) => s.id).join(' ');
  let drawnOver = leasesOver();
  const tick = setInterval(() => {
    if (!plan) return;
    const over = leasesOver();
    if (over !== drawnOver) {
      drawnOver = over;
      const focused = graphBox.contains(document.activeElement) ? document.activeElement.dataset.step : null;
      drawGraph();
      drawStep();
      drawTable();
      if (focused) graphBox.querySelector(`[data-step="${CSS.escape(focused)}"]`)?.focus();
      return;
    }
    for (const el of main.querySelectorAll('[data-lease]')) {
      const s = plan.steps.find((x) => x.id === el.dataset.lease);
      if (!s || !s.claimed_by || el.tagName === 'DD') continue;
      const text = leaseText(s);
      if (el.tagName !== 'text') {
        if (el.textContent !== text) el.textContent = text;
      } else if (el.dataset.full !== text) {
        el.dataset.full = text;
        el.textContent = text;
        fitText(el);
      }
    }
  }, 1000);

  const reload = debounce(async () => {
    try {
      await load();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        clear(main).append(h('h1', {}, `Plan ${name} was deleted`), h('p', {}, h('a', { href: '/ui/plans' }, 'All shared plans')));
        return;
      }
      console.error(err);
      return;
    }
    const focused = document.activeElement?.dataset?.step;
    drawAll();
    if (focused) graphBox.querySelector(`[data-step="${CSS.escape(focused)}"]`)?.focus();
  }, 150);
  const w = app.watch({ plan: name }, {
    after: seq,
    onEvent: (ev) => {
      const what = {
        'step.claimed': 'claimed', 'step.report_added': 'reported on', 'step.updated': 'updated',
        'step.claim_expired': `lease of ${ev.data?.claimed_by} ran out`,
      }[ev.type];
      announce(what ? `Step ${ev.data?.step_id} ${what}` : `Plan ${name}: ${ev.type}`);
      reload();
    },
    onExpired: () => app.navigate(location.pathname, { replace: true }),
  });
  return () => {
    clearInterval(tick);
    w.close();
  };
}
