// markdown.js renders plan Markdown as DOM nodes, safely: plans are
// written by models, so nothing in them is ever parsed as HTML. Every
// piece of text becomes a text node; raw HTML in a plan is shown as the
// text it is; links keep only http:, https: and relative targets, open in
// a new tab with rel="noopener noreferrer"; images become links to the
// image and are never loaded. Block elements carry data-line, the source
// line they start on, so comments can be anchored to lines of the plan.
//
// Supported: ATX and setext headings, paragraphs, emphasis, strong,
// strikethrough, code spans, fenced and indented code, block quotes,
// nested bullet, ordered and task lists, GFM tables, thematic breaks,
// links, autolinks, images (as links), hard line breaks and backslash
// escapes. Anything else stays text.

import { h } from './dom.js';

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)?.*$/;
const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const LIST = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)(.*)$/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
const TABLE_DELIM = /^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$/;
const INDENTED = /^(?: {4}|\t)/;

// renderMarkdown returns a <div class="markdown"> for source.
export function renderMarkdown(source) {
  const lines = String(source).replace(/\r\n?/g, '\n').split('\n').map((text, i) => ({ text, n: i + 1 }));
  return h('div', { class: 'markdown' }, blocks(lines));
}

function blank(line) {
  return /^[ \t]*$/.test(line.text);
}

function startsBlock(text) {
  return FENCE.test(text) || ATX.test(text) || HR.test(text) || QUOTE.test(text) || LIST.test(text);
}

// blocks parses a run of lines into block nodes.
function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const text = line.text;
    if (blank(line)) { i += 1; continue; }
    let m;
    if ((m = FENCE.exec(text))) {
      const fence = m[1];
      const body = [];
      i += 1;
      while (i < lines.length) {
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(lines[i].text);
        if (close && close[1][0] === fence[0] && close[1].length >= fence.length) { i += 1; break; }
        body.push(lines[i].text);
        i += 1;
      }
      const lang = m[2] && /^[\w+#.-]{1,32}$/.test(m[2]) ? m[2] : null;
      out.push(h('pre', { 'data-line': line.n, 'data-lang': lang }, h('code', {}, body.join('\n'))));
      continue;
    }
    if ((m = ATX.exec(text))) {
      // Plan headings sit under the page's own h1, one level down.
      const level = Math.min(6, m[1].length + 1);
      out.push(h(`h${level}`, { 'data-line': line.n }, inline(m[2] || '')));
      i += 1;
      continue;
    }
    if (HR.test(text)) {
      out.push(h('hr', { 'data-line': line.n }));
      i += 1;
      continue;
    }
    if (QUOTE.test(text)) {
      const inner = [];
      while (i < lines.length && !blank(lines[i]) && (QUOTE.test(lines[i].text) || inner.length)) {
        if (!QUOTE.test(lines[i].text) && startsBlock(lines[i].text)) break;
        inner.push({ text: lines[i].text.replace(QUOTE, ''), n: lines[i].n });
        i += 1;
      }
      out.push(h('blockquote', { 'data-line': line.n }, blocks(inner)));
      continue;
    }
    if (LIST.test(text)) {
      const [node, next] = list(lines, i);
      out.push(node);
      i = next;
      continue;
    }
    if (INDENTED.test(text)) {
      const body = [];
      while (i < lines.length && (INDENTED.test(lines[i].text) || blank(lines[i]))) {
        body.push(lines[i].text.replace(INDENTED, ''));
        i += 1;
      }
      while (body.length && body[body.length - 1].trim() === '') body.pop();
      out.push(h('pre', { 'data-line': line.n }, h('code', {}, body.join('\n'))));
      continue;
    }
    if (text.includes('|') && i + 1 < lines.length && TABLE_DELIM.test(lines[i + 1].text) &&
        lines[i + 1].text.includes('-')) {
      const [node, next] = table(lines, i);
      out.push(node);
      i = next;
      continue;
    }
    // A paragraph, or a setext heading when underlined.
    const para = [text];
    i += 1;
    let heading = 0;
    while (i < lines.length && !blank(lines[i])) {
      const t = lines[i].text;
      const s = SETEXT.exec(t);
      if (s) { heading = s[1][0] === '=' ? 1 : 2; i += 1; break; }
      if (startsBlock(t)) break;
      para.push(t);
      i += 1;
    }
    const content = para.map((p) => p.replace(/^[ \t]+/, '')).join('\n');
    if (heading) out.push(h(`h${heading + 1}`, { 'data-line': line.n }, inline(content.trim())));
    else out.push(h('p', { 'data-line': line.n }, inline(content.replace(/\s+$/, ''))));
  }
  return out;
}

// list parses the list starting at lines[start]; returns [node, next index].
function list(lines, start) {
  const first = LIST.exec(lines[start].text);
  const ordered = /\d/.test(first[2]);
  const delim = ordered ? first[2].slice(-1) : first[2];
  const items = [];
  let i = start;
  let tight = true;
  let sawBlank = false;
  while (i < lines.length) {
    const m = LIST.exec(lines[i].text);
    if (!m) break;
    const itemOrdered = /\d/.test(m[2]);
    if (itemOrdered !== ordered || (itemOrdered ? m[2].slice(-1) : m[2]) !== delim) break;
    if (sawBlank) tight = false;
    sawBlank = false;
    const indent = m[1].length;
    const pad = m[3].length > 4 || m[3].length === 0 ? 1 : m[3].length;
    const contentIndent = indent + m[2].length + pad;
    const body = [{ text: m[4], n: lines[i].n }];
    const number = itemOrdered ? Number(m[2].slice(0, -1)) : null;
    i += 1;
    while (i < lines.length) {
      const line = lines[i];
      if (blank(line)) {
        body.push({ text: '', n: line.n });
        i += 1;
        continue;
      }
      const lead = line.text.match(/^ */)[0].length;
      if (lead >= contentIndent) {
        if (body.length && body[body.length - 1].text === '' && body.length > 1) tight = false;
        body.push({ text: line.text.slice(contentIndent), n: line.n });
        i += 1;
        continue;
      }
      const prevBlank = body[body.length - 1].text === '';
      if (!prevBlank && !startsBlock(line.text)) {
        body.push({ text: line.text.trim(), n: line.n }); // lazy continuation
        i += 1;
        continue;
      }
      break;
    }
    while (body.length && body[body.length - 1].text === '') {
      body.pop();
      sawBlank = true;
    }
    items.push({ body, number, n: body[0].n });
  }
  const node = h(ordered ? 'ol' : 'ul', { 'data-line': lines[start].n });
  if (ordered && items.length && items[0].number !== 1) node.setAttribute('start', String(items[0].number));
  for (const item of items) {
    let task = null;
    const t = /^\[([ xX])\][ \t]+/.exec(item.body[0].text);
    if (t) {
      task = t[1] !== ' ';
      item.body[0] = { text: item.body[0].text.slice(t[0].length), n: item.body[0].n };
    }
    let content = blocks(item.body);
    if (tight) {
      // Tight lists hold their text directly, without paragraphs.
      content = content.flatMap((b) => (b.tagName === 'P' ? [...b.childNodes] : [b]));
    }
    const li = h('li', { 'data-line': item.n });
    if (task !== null) {
      li.classList.add('task');
      li.appendChild(h('span', {
        class: task ? 'check done' : 'check',
        role: 'img',
        'aria-label': task ? 'done' : 'not done',
      }, task ? '☑' : '☐'));
      li.appendChild(document.createTextNode(' '));
    }
    for (const c of content) li.appendChild(c);
    node.appendChild(li);
  }
  return [node, i];
}

function splitRow(text) {
  let t = text.trim();
  if (t.startsWith('|')) t = t.slice(1);
  if (t.endsWith('|') && !t.endsWith('\\|')) t = t.slice(0, -1);
  const cells = [];
  let cur = '';
  for (let k = 0; k < t.length; k += 1) {
    if (t[k] === '\\' && t[k + 1] === '|') { cur += '|'; k += 1; continue; }
    if (t[k] === '|') { cells.push(cur.trim()); cur = ''; continue; }
    cur += t[k];
  }
  cells.push(cur.trim());
  return cells;
}

function table(lines, start) {
  const head = splitRow(lines[start].text);
  const aligns = splitRow(lines[start + 1].text).map((c) => {
    if (c.startsWith(':') && c.endsWith(':')) return 'center';
    if (c.endsWith(':')) return 'right';
    if (c.startsWith(':')) return 'left';
    return null;
  });
  const cls = (k) => (aligns[k] ? `align-${aligns[k]}` : null);
  const thead = h('thead', {}, h('tr', {}, head.map((c, k) => h('th', { scope: 'col', class: cls(k) }, inline(c)))));
  const tbody = h('tbody');
  let i = start + 2;
  while (i < lines.length && !blank(lines[i]) && lines[i].text.includes('|')) {
    const cells = splitRow(lines[i].text);
    tbody.appendChild(h('tr', { 'data-line': lines[i].n },
      head.map((_, k) => h('td', { class: cls(k) }, inline(cells[k] || '')))));
    i += 1;
  }
  return [h('div', { class: 'table-wrap', 'data-line': lines[start].n }, h('table', {}, thead, tbody)), i];
}

// safeHref returns the absolute URL of a link target when it is http:,
// https: or relative to the page (which is http(s) too); null otherwise
// (javascript:, data:, vbscript:, file:, ... however spelled: the
// browser's own URL parser decides).
export function safeHref(url) {
  let u;
  try {
    u = new URL(url, document.baseURI);
  } catch {
    return null;
  }
  return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
}

const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

function decodeEntities(text) {
  return text.replace(/&(#\d{1,7}|#x[0-9a-f]{1,6}|[a-z]+);/gi, (all, name) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : all;
    }
    return ENTITIES[name.toLowerCase()] ?? all;
  });
}

function link(text, href, title, cls) {
  const safe = safeHref(href);
  if (!safe) {
    return h('span', { class: 'unsafe-link', title: `link removed: ${href.slice(0, 200)}` }, text);
  }
  return h('a', {
    href: safe, class: cls, title: title || null, target: '_blank', rel: 'noopener noreferrer',
  }, text);
}

// parseLinkTail reads "(dest "title")" at text[i]; returns
// {href, title, end} or null.
function parseLinkTail(text, i) {
  if (text[i] !== '(') return null;
  let k = i + 1;
  while (text[k] === ' ') k += 1;
  let href = '';
  if (text[k] === '<') {
    const close = text.indexOf('>', k);
    if (close < 0) return null;
    href = text.slice(k + 1, close);
    k = close + 1;
  } else {
    let depth = 0;
    while (k < text.length) {
      const c = text[k];
      if (c === '\\' && k + 1 < text.length) { href += text[k + 1]; k += 2; continue; }
      if (c === '(') depth += 1;
      if (c === ')') { if (depth === 0) break; depth -= 1; }
      if (/\s/.test(c)) break;
      href += c;
      k += 1;
    }
  }
  while (text[k] === ' ') k += 1;
  let title = '';
  if (text[k] === '"' || text[k] === "'") {
    const q = text[k];
    const close = text.indexOf(q, k + 1);
    if (close < 0) return null;
    title = text.slice(k + 1, close);
    k = close + 1;
    while (text[k] === ' ') k += 1;
  }
  if (text[k] !== ')') return null;
  return { href: decodeEntities(href), title: decodeEntities(title), end: k + 1 };
}

// closingBracket finds the "]" that closes the "[" at text[i].
function closingBracket(text, i) {
  let depth = 0;
  for (let k = i; k < text.length; k += 1) {
    const c = text[k];
    if (c === '\\') { k += 1; continue; }
    if (c === '`') {
      const run = /^`+/.exec(text.slice(k))[0];
      const close = text.indexOf(run, k + run.length);
      if (close > 0) { k = close + run.length - 1; continue; }
    }
    if (c === '[') depth += 1;
    if (c === ']') { depth -= 1; if (depth === 0) return k; }
  }
  return -1;
}

const PUNCT = /[!-/:-@[-`{-~]/;
const DELIMS = [
  ['**', 'strong'], ['__', 'strong'], ['~~', 'del'], ['*', 'em'], ['_', 'em'],
];

// inline parses the text of one block into nodes.
export function inline(text) {
  const out = [];
  let buf = '';
  const flush = () => {
    if (buf) out.push(document.createTextNode(decodeEntities(buf)));
    buf = '';
  };
  let i = 0;
  outer: while (i < text.length) {
    const c = text[i];
    if (c === '\\') {
      if (text[i + 1] === '\n') { flush(); out.push(h('br')); i += 2; continue; }
      if (i + 1 < text.length && PUNCT.test(text[i + 1])) {
        flush();
        out.push(document.createTextNode(text[i + 1])); // literal, no entity decoding
        i += 2;
        continue;
      }
    }
    if (c === '\n') {
      if (/ {2,}$/.test(buf)) { buf = buf.replace(/ +$/, ''); flush(); out.push(h('br')); } else { buf += '\n'; }
      i += 1;
      continue;
    }
    if (c === '`') {
      const run = /^`+/.exec(text.slice(i))[0];
      const close = text.indexOf(run, i + run.length);
      // The closing run must be exactly as long.
      if (close > 0 && text[close + run.length] !== '`') {
        let code = text.slice(i + run.length, close).replace(/\n/g, ' ');
        if (/^ .*[^ ].* $/.test(code)) code = code.slice(1, -1);
        flush();
        out.push(h('code', {}, code));
        i = close + run.length;
        continue;
      }
      buf += run;
      i += run.length;
      continue;
    }
    if (c === '!' && text[i + 1] === '[') {
      const close = closingBracket(text, i + 1);
      const tail = close > 0 ? parseLinkTail(text, close + 1) : null;
      if (tail) {
        flush();
        const alt = text.slice(i + 2, close);
        // Images are never loaded: a model's plan must not make the
        // reviewer's browser fetch a URL it chose.
        out.push(link(`[image: ${decodeEntities(alt) || tail.href}]`, tail.href, tail.title, 'image-link'));
        i = tail.end;
        continue;
      }
    }
    if (c === '[') {
      const close = closingBracket(text, i);
      const tail = close > 0 ? parseLinkTail(text, close + 1) : null;
      if (tail) {
        flush();
        const label = inline(text.slice(i + 1, close));
        out.push(link(label, tail.href, tail.title));
        i = tail.end;
        continue;
      }
    }
    if (c === '<') {
      const m = /^<(https?:\/\/[^\s<>]+)>/i.exec(text.slice(i));
      if (m) {
        flush();
        out.push(link(m[1], m[1]));
        i += m[0].length;
        continue;
      }
    }
    if ((c === 'h' || c === 'H') && (i === 0 || !/[\w/]/.test(text[i - 1]))) {
      const m = /^https?:\/\/[^\s<]*[^\s<.,:;"')\]!?*_~]/i.exec(text.slice(i));
      if (m) {
        flush();
        out.push(link(m[0], m[0]));
        i += m[0].length;
        continue;
      }
    }
    for (const [d, tag] of DELIMS) {
      if (!text.startsWith(d, i)) continue;
      const after = text[i + d.length];
      if (after === undefined || /\s/.test(after)) continue;
      // Intraword underscores (snake_case) are not emphasis.
      if (d[0] === '_' && i > 0 && /\w/.test(text[i - 1])) continue;
      let close = i + d.length;
      for (;;) {
        close = text.indexOf(d, close + 1);
        if (close < 0) break;
        if (/\s/.test(text[close - 1])) continue;
        if (d === '*' && text[close + 1] === '*') { close += 1; continue; }
        if (d[0] === '_' && /\w/.test(text[close + d.length] || '')) continue;
        break;
      }
      if (close < 0) continue;
      flush();
      out.push(h(tag, {}, inline(text.slice(i + d.length, close))));
      i = close + d.length;
      continue outer;
    }
    buf += c;
    i += 1;
  }
  flush();
  return out;
}
