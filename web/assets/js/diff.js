// diff.js draws the server's diffs and the form that picks two revisions
// to compare. The diff itself is computed only by the server (GET
// …/plan/diff, GET /v1/plans/{name}/diff: {from, to, hunks: [{old_start,
// old_lines, new_start, new_lines, lines: [{op: " "|"-"|"+", text}]}]}),
// so the console and every other client see the same rule.

import { h, clear } from './dom.js';

// renderDiff draws a diff ({from, to, hunks}) as a table of lines with old
// and new line numbers. Every line also says in words whether it was added
// or removed, for screen readers and for colour-blind readers. caption
// replaces the default "Changes from revision A to revision B".
export function renderDiff(d, { caption } = {}) {
  const from = d.from === 0 ? 'the empty plan' : `revision ${d.from}`;
  const to = `revision ${d.to}`;
  const title = caption || `Changes from ${from} to ${to}`;
  if (!d.hunks.length) {
    return h('p', { class: 'diff-empty', 'data-diff': `${d.from}-${d.to}` }, `${title}: none, the two are the same.`);
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
  return h('figure', { class: 'diff', 'data-diff': `${d.from}-${d.to}` },
    h('figcaption', {}, `${title}: `,
      h('span', { class: 'add-count' }, `+${added}`), ' ', h('span', { class: 'del-count' }, `−${removed}`)),
    h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', { class: 'visually-hidden' }, h('tr', {},
        h('th', { scope: 'col' }, 'old line'), h('th', { scope: 'col' }, 'new line'), h('th', { scope: 'col' }, 'text'))),
      body)));
}

// comparePicker is the form that chooses two kept revisions ("Compare
// revision A with revision B") and the region that shows what show(from,
// to) draws for them. id prefixes the form's element ids. revisions are
// numbers, newest first; label(n) names one in the lists; defaults(nums)
// is the pair chosen until the user picks. The picker is built once per
// page: across live updates (setRevisions) a list the user changed keeps
// the user's choice, and one they did not follows defaults. What it shows
// is redrawn only when asked, since kept revisions never change.
export function comparePicker({ id, revisions, defaults, label = (n) => `revision ${n}`, show, errorBox }) {
  let nums = [...revisions];
  const touched = { from: false, to: false };
  const fromSel = h('select', { id: `${id}-from` });
  const toSel = h('select', { id: `${id}-to` });
  const out = h('div', { class: 'diff-out', 'aria-live': 'polite', 'data-compare': id });
  const fill = (sel, value) => {
    clear(sel).append(...nums.map((n) => h('option', { value: String(n), selected: n === value }, label(n))));
    if (!nums.includes(value) && nums.length) sel.value = String(nums[0]);
  };
  let chosen = defaults(nums);
  fill(fromSel, chosen.from);
  fill(toSel, chosen.to);
  fromSel.addEventListener('change', () => { touched.from = true; });
  toSel.addEventListener('change', () => { touched.to = true; });
  const form = h('form', { class: 'compare', novalidate: true },
    h('label', { for: `${id}-from` }, 'Compare'), fromSel,
    h('label', { for: `${id}-to` }, 'with'), toSel,
    h('button', { type: 'submit' }, 'Show changes'));
  let gen = 0;
  async function run(pair = chosen) {
    chosen = pair;
    fromSel.value = String(pair.from);
    toSel.value = String(pair.to);
    const mine = ++gen;
    out.setAttribute('aria-busy', 'true');
    let node;
    try {
      node = await show(pair.from, pair.to);
    } catch (err) {
      node = errorBox(err);
    }
    if (mine !== gen) return;
    out.removeAttribute('aria-busy');
    clear(out).append(node);
  }
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    run({ from: Number(fromSel.value), to: Number(toSel.value) });
  });
  return {
    form,
    out,
    run,
    get chosen() { return chosen; },
    // setRevisions replaces the lists (a revision was written or pruned),
    // keeping what the user chose where it is still kept.
    setRevisions(list) {
      nums = [...list];
      const d = defaults(nums);
      fill(fromSel, touched.from ? Number(fromSel.value) : d.from);
      fill(toSel, touched.to ? Number(toSel.value) : d.to);
    },
  };
}
