// dom.js builds the page from nodes, never from markup strings: text goes
// in as text nodes, so nothing a model wrote can become HTML. The server's
// Content-Security-Policy (Trusted Types) makes any innerHTML assignment
// throw, which keeps it that way.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, '');
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

// append adds children: strings and numbers as text, nodes as they are,
// arrays flattened, null and false skipped.
export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

// h creates an HTML element: h('a', {href: '/ui/'}, 'Inbox').
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// svg creates an SVG element.
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// clear empties an element.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// timeText shows an RFC 3339 time as local date and time, in a <time>.
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h('span', {}, iso);
  return h('time', { datetime: iso, title: iso }, formatTime(d));
}

export function formatTime(d) {
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// ago says how long ago an RFC 3339 time was, roughly.
export function ago(iso, now = Date.now()) {
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  if (!Number.isFinite(s)) return '';
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

// announce tells screen-reader users about a live change.
export function announce(text) {
  const region = document.getElementById('announce');
  if (!region) return;
  region.textContent = '';
  // A fresh text node in a new task is read even when it repeats.
  setTimeout(() => { region.textContent = text; }, 30);
}

// debounce calls fn once after a burst of calls has settled.
export function debounce(fn, ms = 150) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
