// diff.js compares two texts line by line in the browser and renders
// diffs. Its output has the JSON shape the server's diff routes use
// ({from, to, hunks: [{old_start, old_lines, new_start, new_lines,
// lines: [{op: " "|"-"|"+", text}]}]}), so a page renders a diff the same
// way whether the server computed it or the browser did.

import { h } from './dom.js';

// lineDiff returns [{op, text}] for every line of a and b.
export function lineDiff(aText, bText) {
  const a = splitLines(aText);
  const b = splitLines(bText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre += 1;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf += 1;
  const am = a.slice(pre, a.length - suf);
  const bm = b.slice(pre, b.length - suf);
  const ops = a.slice(0, pre).map((text) => ({ op: ' ', text }));
  if (am.length * bm.length > 4e6) {
    // Too large to align in the browser: show the middle as replaced.
    for (const text of am) ops.push({ op: '-', text });
    for (const text of bm) ops.push({ op: '+', text });
  } else {
    ops.push(...lcs(am, bm));
  }
  for (const text of a.slice(a.length - suf)) ops.push({ op: ' ', text });
  return ops;
}

function splitLines(text) {
  const s = String(text ?? '');
  if (s === '') return [];
  const lines = s.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// lcs aligns a and b by their longest common subsequence of lines.
function lcs(a, b) {
  const n = a.length;
  const m = b.length;
  const w = m + 1;
  const t = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i -= 1) {
    for (let j = m - 1; j >= 0; j -= 1) {
      t[i * w + j] = a[i] === b[j] ? t[(i + 1) * w + j + 1] + 1 : Math.max(t[(i + 1) * w + j], t[i * w + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push({ op: ' ', text: a[i] }); i += 1; j += 1; } else if (t[(i + 1) * w + j] >= t[i * w + j + 1]) { out.push({ op: '-', text: a[i] }); i += 1; } else { out.push({ op: '+', text: b[j] }); j += 1; }
  }
  while (i < n) { out.push({ op: '-', text: a[i] }); i += 1; }
  while (j < m) { out.push({ op: '+', text: b[j] }); j += 1; }
  return out;
}

// hunks groups a line diff into hunks with `context` unchanged lines
// around each change, as a unified diff does.
export function hunks(ops, context = 3) {
  const out = [];
  let oldLine = 1;
  let newLine = 1;
  const pos = ops.map((o) => {
    const p = { ...o, oldLine, newLine };
    if (o.op !== '+') oldLine += 1;
    if (o.op !== '-') newLine += 1;
    return p;
  });
  let k = 0;
  while (k < pos.length) {
    if (pos[k].op === ' ') { k += 1; continue; }
    let start = Math.max(0, k - context);
    let end = k;
    // Extend over changes closer than 2 * context to each other.
    for (;;) {
      while (end < pos.length && pos[end].op !== ' ') end += 1;
      let next = end;
      while (next < pos.length && pos[next].op === ' ') next += 1;
      if (next < pos.length && next - end <= 2 * context) { end = next; continue; }
      end = Math.min(pos.length, end + context);
      break;
    }
    if (out.length && start < out[out.length - 1].endIndex) start = out[out.length - 1].endIndex;
    const slice = pos.slice(start, end);
    out.push({
      old_start: slice[0].oldLine,
      old_lines: slice.filter((l) => l.op !== '+').length,
      new_start: slice[0].newLine,
      new_lines: slice.filter((l) => l.op !== '-').length,
      lines: slice.map((l) => ({ op: l.op, text: l.text })),
      endIndex: end,
    });
    k = end;
  }
  return out.map(({ endIndex, ...hunk }) => hunk);
}

// diff returns the server's diff shape for two texts.
export function diff(from, to, aText, bText) {
  return { from, to, hunks: hunks(lineDiff(aText, bText)) };
}

// renderDiff draws a diff ({from, to, hunks}) as a table of lines with old
// and new line numbers. Every line also says in words whether it was added
// or removed, for screen readers and for colour-blind readers.
export function renderDiff(d, { fromLabel, toLabel } = {}) {
  const from = fromLabel || `revision ${d.from}`;
  const to = toLabel || `revision ${d.to}`;
  if (!d.hunks.length) {
    return h('p', { class: 'diff-empty' }, `No changes between ${from} and ${to}.`);
  }
  let added = 0;
  let removed = 0;
  for (const hunk of d.hunks) {
    for (const l of hunk.lines) {
      if (l.op === '+') added += 1;
      if (l.op === '-') removed += 1;
    }
  }
  const body = h('tbody');
  for (const hunk of d.hunks) {
    body.appendChild(h('tr', { class: 'hunk' }, h('td', { colspan: 3 },
      `@@ -${hunk.old_start},${hunk.old_lines} +${hunk.new_start},${hunk.new_lines} @@`)));
    let o = hunk.old_start;
    let n = hunk.new_start;
    for (const l of hunk.lines) {
      const cls = l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx';
      const word = l.op === '+' ? 'added' : l.op === '-' ? 'removed' : '';
      body.appendChild(h('tr', { class: cls },
        h('td', { class: 'ln' }, l.op === '+' ? '' : String(o)),
        h('td', { class: 'ln' }, l.op === '-' ? '' : String(n)),
        h('td', { class: 'code' },
          h('span', { class: 'op', 'aria-hidden': 'true' }, l.op === ' ' ? ' ' : l.op),
          word ? h('span', { class: 'visually-hidden' }, `${word}: `) : null,
          l.text)));
      if (l.op !== '+') o += 1;
      if (l.op !== '-') n += 1;
    }
  }
  return h('figure', { class: 'diff' },
    h('figcaption', {}, `Changes from ${from} to ${to}: `,
      h('span', { class: 'add-count' }, `+${added}`), ' ', h('span', { class: 'del-count' }, `−${removed}`)),
    h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', { class: 'visually-hidden' }, h('tr', {},
        h('th', { scope: 'col' }, 'old line'), h('th', { scope: 'col' }, 'new line'), h('th', { scope: 'col' }, 'text'))),
      body)));
}
