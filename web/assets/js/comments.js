// comments.js lets a reviewer comment on lines of a rendered plan. Every
// block the Markdown renderer draws knows the source lines it came from
// (data-line, data-line-end); the leaf blocks (paragraphs, headings, code,
// list items, table rows, rules) are the targets. Clicking one, or moving
// to it with the arrow keys and pressing Enter, opens a comment box under
// it, anchored to the block's first line or to any other line it was
// drawn from. Comments are shown under the block they belong to.
//
// The plan takes one stop in the Tab order (a roving tabindex): Tab into
// it, ↑/↓ (or Home/End) to move between blocks, Enter to comment, Escape
// to close the box.

import { h } from './dom.js';

const TARGET_TAGS = new Set(['P', 'H2', 'H3', 'H4', 'H5', 'H6', 'PRE', 'HR', 'LI', 'TR']);

// isTarget says whether el is a block a comment can be anchored to: a
// leaf block with source lines. A loose list item's paragraphs are the
// targets, not the item.
function isTarget(el) {
  if (!el.hasAttribute('data-line') || !TARGET_TAGS.has(el.tagName)) return false;
  if (el.tagName === 'LI') return ![...el.children].some((c) => c.tagName === 'P');
  return true;
}

function range(el) {
  const first = Number(el.dataset.line);
  return [first, Number(el.dataset.lineEnd || first)];
}

// lineComments makes the rendered plan root commentable. lines are the
// plan's source lines (lines[0] is line 1). editable() says whether the
// user may comment now; notes() lists what to show: [{line, body, kind:
// 'draft' | 'sent', index (drafts), by, state (sent)}]. onSave(line, body,
// index) adds (index null) or changes a draft; onRemove(index) drops one.
export function lineComments(root, { lines, editable, notes, onSave, onRemove }) {
  const targets = [...root.querySelectorAll('[data-line]')].filter(isTarget);
  // own[k] are the lines of targets[k] that no target inside it covers,
  // without blank ones: what its comment box offers.
  const own = targets.map((t) => {
    const [a, b] = range(t);
    const inner = targets.filter((u) => u !== t && t.contains(u)).map(range);
    const out = [];
    for (let n = a; n <= b; n += 1) {
      if (inner.some(([x, y]) => n >= x && n <= y)) continue;
      if ((lines[n - 1] ?? '').trim() === '' && n !== a) continue;
      out.push(n);
    }
    return out.length ? out : [a];
  });
  const boxes = new Map(); // target → its notes container
  let active = 0;
  let composer = null; // {form, target, textarea, line}

  // targetFor finds the block a line belongs to: the one whose own lines
  // hold it, else the innermost one whose range does.
  function targetFor(line) {
    const k = own.findIndex((ls) => ls.includes(line));
    if (k >= 0) return targets[k];
    const covering = targets.filter((t) => {
      const [a, b] = range(t);
      return line >= a && line <= b;
    });
    return covering.length ? covering[covering.length - 1] : null;
  }

  function box(target) {
    if (boxes.has(target)) return boxes.get(target);
    const el = h('div', { class: 'line-notes' });
    if (target.tagName === 'TR') {
      const row = h('tr', { class: 'note-row' }, h('td', { colspan: target.children.length || 1 }, el));
      target.after(row);
      el.remover = () => row.remove();
    } else if (target.tagName === 'LI') {
      const nested = [...target.children].find((c) => c.matches('ul, ol, pre, blockquote, div.table-wrap'));
      if (nested) target.insertBefore(el, nested);
      else target.append(el);
    } else {
      target.after(el);
    }
    boxes.set(target, el);
    return el;
  }

  function dropBox(target) {
    const el = boxes.get(target);
    if (!el) return;
    if (el.remover) el.remover();
    else el.remove();
    boxes.delete(target);
  }

  function lineText(n) {
    const t = (lines[n - 1] ?? '').trim();
    return t.length > 80 ? `${t.slice(0, 79)}…` : t;
  }

  function note(n) {
    const head = n.kind === 'draft'
      ? [h('span', { class: 'note-line' }, `Line ${n.line}`), ' · your comment, not sent yet']
      : [h('span', { class: 'note-line' }, `Line ${n.line}`), ` · ${n.by}, with the ${n.state === 'approved' ? 'approval' : 'rejection'}`];
    return h('div', { class: `line-note ${n.kind}`, 'data-note-line': n.line, 'data-note-kind': n.kind },
      h('p', { class: 'note-head' }, head),
      h('p', { class: 'note-body' }, n.body),
      n.kind === 'draft' && editable()
        ? h('p', { class: 'actions' },
          h('button', { type: 'button', class: 'link', onclick: () => open(n.line, n.index) }, 'Edit'),
          h('button', { type: 'button', class: 'link', onclick: () => { onRemove(n.index); refresh(); focusLine(n.line); } }, 'Remove'))
        : null);
  }

  // refresh redraws every note and the blocks' focus order, leaving an
  // open comment box as it is.
  function refresh() {
    const can = editable();
    if (!can && composer) close();
    for (const [target, el] of [...boxes]) {
      for (const c of [...el.children]) if (!composer || c !== composer.form) c.remove();
      if (!el.children.length) dropBox(target);
    }
    const byTarget = new Map();
    const orphans = [];
    for (const n of [...notes()].sort((x, y) => x.line - y.line)) {
      const t = targetFor(n.line);
      if (!t) { orphans.push(n); continue; }
      if (!byTarget.has(t)) byTarget.set(t, []);
      byTarget.get(t).push(n);
    }
    targets.forEach((t, k) => {
      const list = byTarget.get(t) || [];
      t.classList.toggle('has-comments', list.length > 0);
      t.classList.toggle('commentable', can);
      if (can) {
        t.setAttribute('tabindex', k === active ? '0' : '-1');
        t.setAttribute('aria-describedby', 'comment-hint');
      } else {
        t.removeAttribute('tabindex');
        t.removeAttribute('aria-describedby');
      }
      if (!list.length) return;
      const el = box(t);
      for (const n of list) el.insertBefore(note(n), composer && composer.target === t ? composer.form : null);
    });
    // Comments on lines no block was drawn from (blank lines, say).
    root.querySelector(':scope > .orphan-notes')?.remove();
    if (orphans.length) root.append(h('div', { class: 'orphan-notes line-notes' }, orphans.map(note)));
  }

  function focusTarget(k) {
    if (k < 0 || k >= targets.length) return;
    targets[active]?.setAttribute('tabindex', '-1');
    active = k;
    targets[k].setAttribute('tabindex', '0');
    targets[k].focus();
  }

  function focusLine(line) {
    const t = targetFor(line);
    if (t) focusTarget(targets.indexOf(t));
  }

  function close({ focus = false } = {}) {
    if (!composer) return;
    const { target } = composer;
    composer.form.remove();
    composer = null;
    if (boxes.get(target) && !boxes.get(target).children.length) dropBox(target);
    if (focus) focusTarget(targets.indexOf(target));
  }

  // open shows the comment box under the block of line, for a new comment
  // (index null) or to edit draft index.
  function open(line, index = null) {
    if (!editable()) return;
    const target = targetFor(line);
    if (!target) return;
    close();
    const k = targets.indexOf(target);
    active = k;
    const choices = own[k].includes(line) ? own[k] : [line, ...own[k]].sort((x, y) => x - y);
    const existing = index === null ? null : notes().find((n) => n.kind === 'draft' && n.index === index);
    const textarea = h('textarea', { id: 'comment-body', rows: 3, required: true }, existing ? existing.body : '');
    const error = h('p', { class: 'error-text', role: 'alert' });
    let lineField;
    let lineOf;
    if (choices.length > 1) {
      lineField = h('select', { id: 'comment-line' }, choices.map((n) => h('option', { value: String(n), selected: n === line },
        `line ${n}: ${lineText(n) || '(blank)'}`)));
      lineOf = () => Number(lineField.value);
    } else {
      lineField = h('p', { class: 'comment-line', id: 'comment-line' }, h('code', {}, lineText(line) || '(blank)'));
      lineOf = () => line;
    }
    const form = h('form', { class: 'composer', novalidate: true, 'aria-label': `Comment on line ${line}` },
      h('label', { for: 'comment-line' }, choices.length > 1 ? 'Line' : `Line ${line}`),
      lineField,
      h('label', { for: 'comment-body' }, 'Comment'),
      textarea,
      error,
      h('p', { class: 'actions' },
        h('button', { type: 'submit', class: 'primary', 'data-action': 'save-comment' }, index === null ? 'Add comment' : 'Save comment'),
        h('button', { type: 'button', 'data-action': 'cancel-comment', onclick: () => close({ focus: true }) }, 'Cancel')));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = textarea.value.trim();
      if (!text) {
        error.textContent = 'Write the comment first, or Cancel.';
        textarea.focus();
        return;
      }
      const at = lineOf();
      close();
      onSave(at, text, index);
      refresh();
      focusLine(at);
    });
    form.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        close({ focus: true });
      } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    composer = { form, target, textarea, line };
    box(target).append(form);
    textarea.focus();
  }

  root.addEventListener('keydown', (e) => {
    const k = targets.indexOf(e.target);
    if (k < 0 || !editable()) return;
    const moves = { ArrowDown: k + 1, ArrowUp: k - 1, Home: 0, End: targets.length - 1 };
    if (e.key in moves) {
      e.preventDefault();
      focusTarget(Math.max(0, Math.min(targets.length - 1, moves[e.key])));
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      open(range(targets[k])[0]);
    }
  });
  root.addEventListener('focusin', (e) => {
    const k = targets.indexOf(e.target);
    if (k >= 0 && k !== active) {
      targets[active]?.setAttribute('tabindex', '-1');
      active = k;
      e.target.setAttribute('tabindex', '0');
    }
  });
  root.addEventListener('click', (e) => {
    if (!editable() || e.button !== 0) return;
    if (e.target.closest('a, button, input, textarea, select, label, .line-notes')) return;
    // Selecting text to copy it is not asking to comment.
    const sel = window.getSelection();
    if (sel && !sel.isCollapsed && root.contains(sel.anchorNode)) return;
    let el = e.target;
    while (el && el !== root && !targets.includes(el)) el = el.parentElement;
    if (!el || el === root) return;
    open(range(el)[0]);
  });

  refresh();
  return {
    refresh,
    open,
    focusLine,
    // composing names the line of a comment box with unsaved text.
    composing: () => (composer && composer.textarea.value.trim() ? composer.line : null),
    focusComposer: () => composer?.textarea.focus(),
    close,
  };
}

// hint is the line that tells a reviewer how to comment, which every
// block refers to (aria-describedby) while commenting is possible.
export function commentHint() {
  return h('p', { id: 'comment-hint', class: 'muted hint' },
    'To comment on a line, click it, or Tab into the plan, move with ↑ and ↓ and press Enter.');
}

