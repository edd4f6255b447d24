// dag.js draws a plan's steps as a directed acyclic graph in SVG: one row
// per dependency depth (a step sits one row below its deepest dep), steps
// in a row ordered to keep edges short, an arrow from each dep to the step
// that waits for it. Each node shows the step's id, status, owner, who
// holds its claim and until when, and its reports. Nodes are buttons:
// Tab reaches them, Enter or Space selects one.

import { svg } from './dom.js';

const NODE_W = 240;
const NODE_H = 92;
const GAP_X = 28;
const GAP_Y = 56;
const PAD = 16;

// layers assigns each step its depth: 0 without deps, else one more than
// its deepest dep. Unknown deps are ignored (the server refuses them).
export function layers(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const depth = new Map();
  const visiting = new Set();
  const depthOf = (s) => {
    if (depth.has(s.id)) return depth.get(s.id);
    if (visiting.has(s.id)) return 0; // a cycle cannot be stored; be safe anyway
    visiting.add(s.id);
    let d = 0;
    for (const dep of s.deps || []) {
      const t = byId.get(dep);
      if (t) d = Math.max(d, depthOf(t) + 1);
    }
    visiting.delete(s.id);
    depth.set(s.id, d);
    return d;
  };
  const rows = [];
  for (const s of steps) {
    const d = depthOf(s);
    (rows[d] ||= []).push(s);
  }
  return rows.map((r) => r || []);
}

function truncate(text, max) {
  const t = String(text ?? '');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

// TEXT_W is the room a node's text lines have: from x = 14 to 10 px
// short of its right edge.
const TEXT_W = NODE_W - 24;

// fitText shortens an SVG text line with an ellipsis until it fits its
// data-fit width in pixels. Counting characters is not enough (bold text
// and wide letters ran past the box), so it measures, which needs the
// text in the document: renderGraph's caller runs fitGraph once the graph
// is on the page.
export function fitText(el) {
  const max = Number(el.getAttribute('data-fit'));
  if (!max || typeof el.getComputedTextLength !== 'function' || !el.isConnected) return;
  const full = el.textContent;
  let n = full.length;
  while (n > 1 && el.getComputedTextLength() > max) {
    n -= 1;
    el.textContent = `${full.slice(0, n).trimEnd()}…`;
  }
}

// fitGraph fits every text line of a drawn graph into its node; a step
// id gets what its status line leaves of the top line.
export function fitGraph(root) {
  for (const g of root.querySelectorAll('g.node')) {
    const status = g.querySelector('text.status');
    const id = g.querySelector('text.id');
    if (status && id && status.isConnected) {
      id.setAttribute('data-fit', String(Math.max(20, TEXT_W - status.getComputedTextLength() - 8)));
    }
  }
  for (const t of root.querySelectorAll('text[data-fit]')) fitText(t);
}

// leaseOver reports whether a step's lease has run out: the server said so
// when it answered, or the clock has passed the lease's end since. Leases
// end without an event, so the page judges the time between answers.
export function leaseOver(step, now = Date.now()) {
  return Boolean(step.claimed_by) &&
    (step.claim_expired || (Boolean(step.claim_expires_at) && new Date(step.claim_expires_at).getTime() <= now));
}

// leaseText describes a claim: who holds it and until when.
export function leaseText(step, now = Date.now()) {
  if (!step.claimed_by) return '';
  if (!step.claim_expires_at) return `claimed by ${step.claimed_by}`;
  const left = Math.round((new Date(step.claim_expires_at).getTime() - now) / 1000);
  if (leaseOver(step, now)) return `lease of ${step.claimed_by} expired`;
  const span = left >= 3600 ? `${Math.floor(left / 3600)} h` : left >= 60 ? `${Math.floor(left / 60)} min` : `${left} s`;
  return `${step.claimed_by}, lease ${span} left`;
}

const STATUS_LABEL = { pending: 'pending', in_progress: 'in progress', complete: 'complete', blocked: 'blocked' };

// isReady reports whether a step can be claimed now (the server's Ready).
export function isReady(step, byId, now = Date.now()) {
  const open = step.status === 'pending' || (step.status === 'in_progress' && leaseOver(step, now));
  return open && (step.deps || []).every((d) => byId.get(d)?.status === 'complete');
}

// renderGraph returns the <svg>. reports maps step ids to their reports;
// onSelect(id) is called when a node is chosen; selected is the chosen id.
export function renderGraph(steps, { reports = new Map(), onSelect = () => {}, selected = null, now = Date.now() } = {}) {
  const rows = layers(steps);
  const byId = new Map(steps.map((s) => [s.id, s]));
  // Order each row by the mean position of its deps (barycentre), so
  // edges cross less.
  const x = new Map();
  rows.forEach((row, r) => {
    if (r > 0) {
      const bary = (s) => {
        const xs = (s.deps || []).filter((d) => x.has(d)).map((d) => x.get(d));
        return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Infinity;
      };
      row.sort((a, b) => bary(a) - bary(b));
    }
    row.forEach((s, k) => x.set(s.id, k));
  });
  const widest = Math.max(1, ...rows.map((r) => r.length));
  const width = PAD * 2 + widest * NODE_W + (widest - 1) * GAP_X;
  const height = PAD * 2 + rows.length * NODE_H + Math.max(0, rows.length - 1) * GAP_Y;
  const pos = new Map();
  rows.forEach((row, r) => {
    const rowWidth = row.length * NODE_W + (row.length - 1) * GAP_X;
    const left = (width - rowWidth) / 2;
    row.forEach((s, k) => pos.set(s.id, { x: left + k * (NODE_W + GAP_X), y: PAD + r * (NODE_H + GAP_Y) }));
  });

  const root = svg('svg', {
    class: 'dag',
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: 'group',
    'aria-label': `Step graph: ${steps.length} steps in ${rows.length} levels`,
  });
  root.appendChild(svg('defs', {}, svg('marker', {
    id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto-start-reverse',
  }, svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))));

  const edges = svg('g', { class: 'edges', 'aria-hidden': 'true' });
  for (const s of steps) {
    const to = pos.get(s.id);
    for (const dep of s.deps || []) {
      const from = pos.get(dep);
      if (!from) continue;
      const x1 = from.x + NODE_W / 2;
      const y1 = from.y + NODE_H;
      const x2 = to.x + NODE_W / 2;
      const y2 = to.y - 2;
      const my = (y1 + y2) / 2;
      const done = byId.get(dep)?.status === 'complete';
      edges.appendChild(svg('path', {
        d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`,
        class: done ? 'edge done' : 'edge',
        'marker-end': 'url(#arrow)',
        'data-from': dep,
        'data-to': s.id,
      }));
    }
  }
  root.appendChild(edges);

  for (const row of rows) {
    for (const s of row) {
      const p = pos.get(s.id);
      const ready = isReady(s, byId, now);
      const rs = reports.get(s.id) || [];
      const last = rs[rs.length - 1];
      const lease = leaseText(s, now);
      const expired = leaseOver(s, now);
      const label = [
        `Step ${s.id}: ${STATUS_LABEL[s.status] || s.status}${ready ? ', ready' : ''}`,
        `owner ${s.owner}`,
        lease,
        rs.length ? `${rs.length} report${rs.length > 1 ? 's' : ''}, last ${last.outcome}` : 'no reports',
        (s.deps || []).length ? `depends on ${s.deps.join(', ')}` : 'no dependencies',
      ].filter(Boolean).join('; ');
      const g = svg('g', {
        class: `node st-${s.status}${ready ? ' ready' : ''}${s.id === selected ? ' selected' : ''}`,
        transform: `translate(${p.x},${p.y})`,
        tabindex: 0,
        role: 'button',
        'aria-pressed': s.id === selected ? 'true' : 'false',
        'aria-label': label,
        'data-step': s.id,
      },
      svg('title', {}, `${s.id}: ${s.description}`),
      svg('rect', { width: NODE_W, height: NODE_H, rx: 8, class: 'box' }),
      svg('rect', { width: 6, height: NODE_H, rx: 3, class: 'bar' }),
      svg('text', { x: 14, y: 20, class: 'id' }, truncate(s.id, 14)),
      svg('text', { x: NODE_W - 10, y: 20, class: 'status', 'text-anchor': 'end' },
        `${STATUS_LABEL[s.status] || s.status}${ready ? ' · ready' : ''}`),
      svg('text', { x: 14, y: 40, class: 'owner', 'data-fit': TEXT_W }, truncate(s.owner, 30)),
      svg('text', { x: 14, y: 60, class: expired ? 'lease expired' : 'lease', 'data-lease': s.id, 'data-fit': TEXT_W },
        truncate(lease || 'unclaimed', 34)),
      svg('text', { x: 14, y: 80, class: `reports${last ? ` out-${last.outcome}` : ''}`, 'data-fit': TEXT_W },
        rs.length ? truncate(`${rs.length} report${rs.length > 1 ? 's' : ''} · last ${last.outcome}`, 34) : 'no reports'));
      const choose = () => onSelect(s.id);
      g.addEventListener('click', choose);
      g.addEventListener('keydown', (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          choose();
        }
      });
      root.appendChild(g);
    }
  }
  return root;
}
