// dag.js draws a plan's steps as a directed acyclic graph in SVG. The
// layout is dagre's (the layered Sugiyama layout, vendored under
// assets/vendor/dagre: scripts/update-vendor): a step sits below its deps,
// steps in a layer are ordered to cross few edges, and an edge that skips
// layers runs through a lane of its own between the nodes it passes. Each
// node shows the step's id, status, description, owner, who holds its
// claim and until when, and its reports. Nodes are buttons: Tab reaches them, Enter or
// Space selects one.

import dagre from '../vendor/dagre/dagre.esm.js';
import { svg } from './dom.js';

const NODE_W = 240;
const NODE_H = 112;
const GAP_X = 28;
const GAP_Y = 56;
const PAD = 16;
// INSET keeps an edge's ends this far from a node's corners.
const INSET = 16;

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

// layout places the steps with dagre: pos maps a step id to its node's top
// left corner, routes maps "dep\u0000id" to the points of its edge, from
// the dep's bottom edge to the step's top edge.
//
// dagre routes an edge that skips layers through dummy nodes that it keeps
// clear of the real ones, but it joins its points with straight lines that
// may clip a neighbour's corner where they leave a node's side. So the
// route is rebuilt from dagre's lanes: every node of a layer has the same
// height, an edge crosses a layer only vertically, at its lane's x, and
// bends only in the gaps between layers, where no node is. It leaves its
// dep from the bottom and enters its step from the top.
export function layout(steps) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: GAP_X, ranksep: GAP_Y / 2, edgesep: GAP_X / 2, marginx: PAD, marginy: PAD });
  g.setDefaultEdgeLabel(() => ({}));
  const known = new Set(steps.map((s) => s.id));
  for (const s of steps) g.setNode(s.id, { width: NODE_W, height: NODE_H });
  for (const s of steps) {
    for (const dep of s.deps || []) if (known.has(dep)) g.setEdge(dep, s.id);
  }
  dagre.layout(g);
  const pos = new Map();
  const bands = new Set();
  for (const s of steps) {
    const n = g.node(s.id);
    pos.set(s.id, { x: n.x - NODE_W / 2, y: n.y - NODE_H / 2 });
    bands.add(n.y);
  }
  const inBand = (y) => [...bands].find((c) => Math.abs(y - c) < NODE_H / 2);
  const clampX = (x, id) => {
    const left = pos.get(id).x;
    return Math.min(Math.max(x, left + INSET), left + NODE_W - INSET);
  };
  const routes = new Map();
  for (const e of g.edges()) {
    const pts = g.edge(e).points;
    const from = pos.get(e.v);
    const to = pos.get(e.w);
    const route = [{ x: clampX(pts[0].x, e.v), y: from.y + NODE_H }];
    for (const p of pts.slice(1, -1)) {
      const band = inBand(p.y);
      if (band === undefined) {
        route.push({ x: p.x, y: p.y });
      } else {
        route.push({ x: p.x, y: band - NODE_H / 2 }, { x: p.x, y: band + NODE_H / 2 });
      }
    }
    route.push({ x: clampX(pts[pts.length - 1].x, e.w), y: to.y });
    routes.set(`${e.v}\u0000${e.w}`, route);
  }
  const { width, height } = g.graph();
  return { pos, routes, width: Math.max(width, NODE_W + 2 * PAD), height: Math.max(height, NODE_H + 2 * PAD) };
}

// pathOf is the SVG path of a route: straight runs, with the corners
// rounded a little so that lanes read as lines, not zigzags.
function pathOf(route) {
  const r = 8;
  let d = `M${route[0].x},${route[0].y}`;
  for (let i = 1; i < route.length; i += 1) {
    const p = route[i];
    const next = route[i + 1];
    if (!next) {
      d += ` L${p.x},${p.y}`;
      break;
    }
    const prev = route[i - 1];
    const inLen = Math.hypot(p.x - prev.x, p.y - prev.y);
    const outLen = Math.hypot(next.x - p.x, next.y - p.y);
    const k = Math.min(r, inLen / 2, outLen / 2);
    if (k < 1) {
      d += ` L${p.x},${p.y}`;
      continue;
    }
    const a = { x: p.x - ((p.x - prev.x) / inLen) * k, y: p.y - ((p.y - prev.y) / inLen) * k };
    const b = { x: p.x + ((next.x - p.x) / outLen) * k, y: p.y + ((next.y - p.y) / outLen) * k };
    d += ` L${a.x},${a.y} Q${p.x},${p.y} ${b.x},${b.y}`;
  }
  return d;
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
  const { pos, routes, width, height } = layout(steps);

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
    for (const dep of s.deps || []) {
      const route = routes.get(`${dep}\u0000${s.id}`);
      if (!route) continue;
      const done = byId.get(dep)?.status === 'complete';
      edges.appendChild(svg('path', {
        d: pathOf(route),
        class: done ? 'edge done' : 'edge',
        'marker-end': 'url(#arrow)',
        'data-from': dep,
        'data-to': s.id,
        'data-route': route.map((p) => `${p.x},${p.y}`).join(' '),
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
        s.description,
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
      svg('text', { x: 14, y: 40, class: 'description', 'data-fit': TEXT_W }, truncate(s.description, 34)),
      svg('text', { x: 14, y: 60, class: 'owner', 'data-fit': TEXT_W }, truncate(s.owner, 30)),
      svg('text', { x: 14, y: 80, class: expired ? 'lease expired' : 'lease', 'data-lease': s.id, 'data-fit': TEXT_W },
        truncate(lease || 'unclaimed', 34)),
      svg('text', { x: 14, y: 100, class: `reports${last ? ` out-${last.outcome}` : ''}`, 'data-fit': TEXT_W },
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
