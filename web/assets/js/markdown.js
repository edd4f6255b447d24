// markdown.js renders plan Markdown as DOM nodes, safely: plans are
// written by models, so nothing in them is ever parsed as HTML. markdown-it
// (vendored under assets/vendor/markdown-it: scripts/update-vendor) parses
// the source, with raw HTML off, into tokens; this file builds the nodes
// from them with dom.js, never from markup, so every piece of text becomes
// a text node and raw HTML in a plan is shown as the text it is. Links are
// made only to http:, https: and relative targets (safeHref, as
// markdown-it's validateLink), open in a new tab with rel="noopener
// noreferrer"; images become links to the image and are never loaded.
// Block elements carry data-line and data-line-end, the first and last
// source lines they were drawn from (1-based, numbered as the server
// numbers a plan's lines: a final newline ends the last line), so comments
// can be anchored to lines of the plan.
//
// What markdown-it parses is CommonMark with GFM tables and
// strikethrough; bare http(s) URLs are linked too, and list items that
// start with [ ] or [x] are drawn as tasks.

import markdownit from '../vendor/markdown-it/markdown-it.esm.min.js';
import { h } from './dom.js';

// safeHref returns the absolute URL of a link target when it is http:,
// https: or relative to the page (which is http(s) too); null otherwise
// (javascript:, data:, vbscript:, file:, mailto:, ... however spelled: the
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

// validateLink is markdown-it's gate for every link, autolink and image
// it would make. markdown-it hands it the target percent-encoded
// (`jav&#x09;ascript:` arrives as `jav%09ascript:`), which a browser would
// read as a harmless relative path; the target as written, decoded, is
// what a reader is shown, so both must be http(s). markdown-it's own
// check refuses only javascript:, vbscript:, file: and most data: URLs.
function validateLink(url) {
  let decoded;
  try {
    decoded = decodeURI(url);
  } catch {
    return false;
  }
  return safeHref(url) !== null && safeHref(decoded) !== null;
}

const md = markdownit({ html: false, linkify: true });
md.validateLink = validateLink;
// Only URLs written out with http:// or https:// are linked, as in a
// plain-text plan: not "example.com", addresses, or //host.
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
for (const schema of ['ftp:', 'mailto:', '//']) md.linkify.add(schema, null);

// renderMarkdown returns a <div class="markdown"> for source.
export function renderMarkdown(source) {
  // Only LF ends a line, as on the server; a CR before it is dropped. A
  // lone CR, which markdown-it would take for a line end too, becomes the
  // space a browser shows it as.
  const text = String(source).replace(/\r\n/g, '\n').replace(/\r/g, ' ');
  const lines = text.split('\n');
  const tokens = md.parse(text, {});
  const root = h('div', { class: 'markdown' });
  new Builder(lines).blocks(tokens, 0, tokens.length, root);
  return root;
}

// Builder turns markdown-it's block tokens into nodes. lines are the
// source lines, to leave blank ones out of a block's span.
class Builder {
  constructor(lines) {
    this.lines = lines;
  }

  // span marks node as drawn from the source lines of map, markdown-it's
  // [first, end) of 0-based lines, without the blank lines it ends in.
  span(node, map, first = map[0], end = map[1]) {
    let last = end;
    while (last > first + 1 && /^[ \t]*$/.test(this.lines[last - 1] ?? '')) last -= 1;
    node.setAttribute('data-line', String(first + 1));
    node.setAttribute('data-line-end', String(Math.max(first + 1, last)));
    return node;
  }

  // close returns the index of the token that closes tokens[i].
  static close(tokens, i) {
    let depth = 0;
    for (let k = i; k < tokens.length; k += 1) {
      depth += tokens[k].nesting;
      if (depth === 0) return k;
    }
    return tokens.length - 1;
  }

  // blocks appends the nodes of tokens[from, to) to parent.
  blocks(tokens, from, to, parent) {
    for (let i = from; i < to; i += 1) {
      const t = tokens[i];
      const end = t.nesting === 1 ? Builder.close(tokens, i) : i;
      const node = this.block(tokens, i, end);
      if (Array.isArray(node)) parent.append(...node);
      else if (node) parent.appendChild(node);
      i = end;
    }
  }

  // block builds the node of tokens[i], which closes at tokens[end].
  block(tokens, i, end) {
    const t = tokens[i];
    switch (t.type) {
      case 'heading_open': {
        // Plan headings sit under the page's own h1, one level down.
        const level = Math.min(6, Number(t.tag.slice(1)) + 1);
        return this.span(h(`h${level}`, {}, inline(tokens[i + 1].children)), t.map);
      }
      case 'paragraph_open': {
        const content = inline(tokens[i + 1].children);
        // A tight list's items hold their text directly, without paragraphs.
        return t.hidden ? content : this.span(h('p', {}, content), t.map);
      }
      case 'fence': {
        const info = t.info.trim().split(/\s+/)[0];
        const lang = /^[\w+#.-]{1,32}$/.test(info) ? info : null;
        return this.span(h('pre', { 'data-lang': lang }, h('code', {}, t.content.replace(/\n$/, ''))), t.map);
      }
      case 'code_block':
        return this.span(h('pre', {}, h('code', {}, t.content.replace(/\n+$/, ''))), t.map);
      case 'hr':
        return this.span(h('hr'), t.map);
      case 'blockquote_open': {
        const node = this.span(h('blockquote'), t.map);
        this.blocks(tokens, i + 1, end, node);
        return node;
      }
      case 'bullet_list_open':
      case 'ordered_list_open': {
        const node = this.span(h(t.tag, { start: t.attrGet('start') }), t.map);
        this.blocks(tokens, i + 1, end, node);
        return node;
      }
      case 'list_item_open':
        return this.item(tokens, i, end);
      case 'table_open':
        return this.table(tokens, i, end);
      default:
        return null;
    }
  }

  // item builds a list item; one whose text starts with [ ] or [x] is a
  // task, drawn with its box.
  item(tokens, i, end) {
    const li = this.span(h('li'), tokens[i].map);
    const first = tokens[i + 1]?.type === 'paragraph_open' ? tokens[i + 2].children : null;
    const lead = first?.[0];
    const m = lead?.type === 'text' ? /^\[([ xX])\][ \t]+/.exec(lead.content) : null;
    if (m) {
      lead.content = lead.content.slice(m[0].length);
      const done = m[1] !== ' ';
      li.classList.add('task');
      li.append(h('span', {
        class: done ? 'check done' : 'check', role: 'img', 'aria-label': done ? 'done' : 'not done',
      }, done ? '☑' : '☐'), ' ');
    }
    this.blocks(tokens, i + 1, end, li);
    return li;
  }

  // table builds a GFM table; the header row owns the delimiter line
  // under it.
  table(tokens, i, end) {
    const t = tokens[i];
    const thead = h('thead');
    const tbody = h('tbody');
    let section = thead;
    let row = null;
    for (let k = i + 1; k < end; k += 1) {
      const c = tokens[k];
      if (c.type === 'tbody_open') section = tbody;
      if (c.type === 'tr_open') {
        row = section === thead ? this.span(h('tr'), c.map, c.map[0], c.map[0] + 2) : this.span(h('tr'), c.map);
        section.appendChild(row);
      }
      if (c.type === 'th_open' || c.type === 'td_open') {
        const align = /text-align:(\w+)/.exec(c.attrGet('style') || '');
        row.appendChild(h(c.tag, {
          scope: c.tag === 'th' ? 'col' : null, class: align ? `align-${align[1]}` : null,
        }, inline(tokens[k + 1].children)));
      }
    }
    return this.span(h('div', { class: 'table-wrap' }, h('table', {}, thead, tbody)), t.map);
  }
}

// Inline tokens that open an element, and the element.
const INLINE_TAGS = { em_open: 'em', strong_open: 'strong', s_open: 'del' };

// inline builds the nodes of one block's inline tokens.
function inline(children) {
  const root = document.createDocumentFragment();
  const stack = [root];
  const top = () => stack[stack.length - 1];
  for (const t of children || []) {
    switch (t.type) {
      case 'text':
        top().append(t.content);
        break;
      case 'softbreak':
        top().append('\n');
        break;
      case 'hardbreak':
        top().appendChild(h('br'));
        break;
      case 'code_inline':
        top().appendChild(h('code', {}, t.content));
        break;
      case 'image': {
        // Images are never loaded: a model's plan must not make the
        // reviewer's browser fetch a URL it chose.
        const src = t.attrGet('src');
        top().appendChild(link(`[image: ${t.content || src}]`, src, t.attrGet('title'), 'image-link'));
        break;
      }
      case 'link_open': {
        const a = link([], t.attrGet('href'), t.attrGet('title'));
        top().appendChild(a);
        stack.push(a);
        break;
      }
      default:
        if (INLINE_TAGS[t.type]) {
          const el = h(INLINE_TAGS[t.type]);
          top().appendChild(el);
          stack.push(el);
        } else if (t.nesting === -1 && stack.length > 1) {
          stack.pop();
        }
    }
  }
  return [...root.childNodes];
}

// link makes an <a> to href, which validateLink let through.
function link(text, href, title, cls) {
  return h('a', {
    href: safeHref(href), class: cls, title: title || null, target: '_blank', rel: 'noopener noreferrer',
  }, text);
}
