"""JavaScript that runs in pages: the popup guard and the element extraction."""

from __future__ import annotations

from typing import Final

#: Prefix of the console entries the popup guard writes (level warn).
POPUP_LOG_PREFIX: Final = "[meith] Blocked a popup window"

#: Runs before any page script in every frame (a context init script). Pages must not open
#: windows: `window.open` returns null, and links/forms that would target a new window do
#: nothing. Each attempt is logged to the tab's console entries. Whatever still gets through
#: (e.g. a middle click) is closed by the host the moment it appears (see browser.py).
POPUP_GUARD: Final = """
(() => {
  const PREFIX = __PREFIX__;
  const warn = console.warn.bind(console);
  const report = (how, url) => {
    try { warn(PREFIX + ' (' + how + '): ' + String(url === undefined ? '' : url)); } catch (e) {}
  };
  const blockedOpen = function open(url) { report('window.open', url); return null; };
  try {
    Object.defineProperty(window, 'open', { value: blockedOpen, writable: false, configurable: false });
  } catch (e) {}
  const SAME = new Set(['', '_self', '_top', '_parent']);
  const baseTarget = () => {
    const b = document.querySelector('base[target]');
    return b ? b.getAttribute('target') : '';
  };
  const opensWindow = (target) => {
    const t = (target || '').trim();
    if (SAME.has(t.toLowerCase())) return false;
    if (t.toLowerCase() === '_blank') return true;
    // A named target is fine when it names a frame of this page.
    try {
      const sel = 'iframe[name="' + CSS.escape(t) + '"],frame[name="' + CSS.escape(t) + '"]';
      if (document.querySelector(sel)) return false;
      if (window.name === t || (window.top && window.top.name === t)) return false;
    } catch (e) {}
    return true;
  };
  const linkOf = (event) => {
    const path = event.composedPath ? event.composedPath() : [];
    for (const node of path) {
      if (node && node.nodeType === 1 && (node.localName === 'a' || node.localName === 'area') && node.hasAttribute('href')) return node;
    }
    return null;
  };
  const onClick = (event) => {
    const link = linkOf(event);
    if (!link) return;
    const target = link.hasAttribute('target') ? link.getAttribute('target') : baseTarget();
    const modified = event.ctrlKey || event.metaKey || event.shiftKey || event.button === 1;
    if (opensWindow(target) || modified) {
      event.preventDefault();
      report('link', link.href);
    }
  };
  window.addEventListener('click', onClick, true);
  window.addEventListener('auxclick', onClick, true);
  // A link that is not in the document never reaches the window's listeners.
  const detachedLink = (node) => node && node.nodeType === 1 && !node.isConnected
    && (node.localName === 'a' || node.localName === 'area') && node.hasAttribute('href');
  const detachedOpens = (node) => detachedLink(node)
    && opensWindow(node.hasAttribute('target') ? node.getAttribute('target') : baseTarget());
  try {
    const click = HTMLElement.prototype.click;
    Object.defineProperty(HTMLElement.prototype, 'click', {
      value: function () {
        if (detachedOpens(this)) { report('link', this.href); return; }
        return click.call(this);
      },
      writable: false, configurable: false,
    });
    const dispatch = EventTarget.prototype.dispatchEvent;
    Object.defineProperty(EventTarget.prototype, 'dispatchEvent', {
      value: function (event) {
        if (event && (event.type === 'click' || event.type === 'auxclick') && detachedOpens(this)) {
          report('link', this.href);
          return false;
        }
        return dispatch.call(this, event);
      },
      writable: false, configurable: false,
    });
  } catch (e) {}
  const formTarget = (form, submitter) => {
    if (submitter && submitter.hasAttribute && submitter.hasAttribute('formtarget')) return submitter.getAttribute('formtarget');
    if (form.hasAttribute('target')) return form.getAttribute('target');
    return baseTarget();
  };
  window.addEventListener('submit', (event) => {
    const form = event.target;
    if (form && opensWindow(formTarget(form, event.submitter))) {
      event.preventDefault();
      report('form', form.action);
    }
  }, true);
  // form.submit() fires no submit event.
  try {
    const submit = HTMLFormElement.prototype.submit;
    Object.defineProperty(HTMLFormElement.prototype, 'submit', {
      value: function () {
        if (opensWindow(formTarget(this, null))) { report('form', this.action); return; }
        return submit.call(this);
      },
      writable: false, configurable: false,
    });
  } catch (e) {}
})();
""".replace("__PREFIX__", repr(POPUP_LOG_PREFIX))

#: What counts as an interactive element (the selectors, in the order they are tried).
INTERACTIVE_SELECTOR: Final = (
    "a,button,input,textarea,select,[role=button],[role=link],[role=textbox],"
    "[role=checkbox],[onclick]"
)

#: `(args) => [info, ...elements]`: evaluated as a handle so the element nodes stay with the
#: host (never written into the page) and `el-N` resolves to exactly the node it described.
#: `info.snapshot` is the page as an outline for a model (roles, names, visible text, the el-N
#: references), at most `maxChars` characters (`info.snapshotTruncated`).
EXTRACT_ELEMENTS: Final = """
({ start, limit, maxChars }) => {
  const all = Array.from(document.querySelectorAll(__SELECTOR__));
  const nodes = all.slice(0, limit);
  const sx = window.scrollX, sy = window.scrollY;
  const clean = (s, n = 200) => {
    s = String(s == null ? '' : s).replace(/\\s+/g, ' ').trim();
    return s.length > n ? s.slice(0, n) : s;
  };
  const attr = (el, name) => clean(el.getAttribute(name));
  const visibleText = (el) => clean(el.innerText !== undefined ? el.innerText : el.textContent);
  const labelsText = (el) => el.labels && el.labels.length
    ? clean(Array.from(el.labels).map((l) => l.innerText).join(' ')) : '';
  const typeOf = (el) => (el.getAttribute('type') || '').toLowerCase();
  const implicitRole = (el, tag, type) => {
    if (tag === 'a') return el.hasAttribute('href') ? 'link' : undefined;
    if (tag === 'button') return 'button';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'select') return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
    if (tag === 'input') {
      if (['button', 'submit', 'reset', 'image'].includes(type)) return 'button';
      if (type === 'checkbox') return 'checkbox';
      if (type === 'radio') return 'radio';
      if (type === 'range') return 'slider';
      if (type === 'number') return 'spinbutton';
      if (type === 'search') return 'searchbox';
      if (type === 'hidden' || type === 'file' || type === 'color' || type === 'date') return undefined;
      return 'textbox';
    }
    return undefined;
  };
  // A pragmatic subset of the accessible-name computation (aria-labelledby, aria-label,
  // labels, alt/value/title/placeholder, then content).
  const accessibleName = (el, tag, type) => {
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const t = clean(by.split(/\\s+/).map((id) => document.getElementById(id))
        .filter(Boolean).map((n) => n.innerText || n.textContent).join(' '));
      if (t) return t;
    }
    const aria = attr(el, 'aria-label');
    if (aria) return aria;
    if (tag === 'input') {
      if (['button', 'submit', 'reset'].includes(type)) {
        return clean(el.value) || (type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : '');
      }
      if (type === 'image') return attr(el, 'alt') || attr(el, 'title') || 'Submit';
    }
    if (tag === 'input' || tag === 'textarea' || tag === 'select') {
      return labelsText(el) || attr(el, 'title') || attr(el, 'placeholder');
    }
    const content = visibleText(el) || clean(Array.from(el.querySelectorAll('img[alt]'))
      .map((i) => i.getAttribute('alt')).join(' '));
    return content || attr(el, 'title');
  };
  const elements = nodes.map((el, i) => {
    const tag = el.tagName.toLowerCase();
    const type = typeOf(el);
    const rect = el.getBoundingClientRect();
    const secret = tag === 'input' && type === 'password';
    const item = { id: 'el-' + (start + i), tag };
    const role = attr(el, 'role') || implicitRole(el, tag, type);
    if (role) item.role = role;
    const label = attr(el, 'aria-label') || attr(el, 'placeholder') || attr(el, 'name') || labelsText(el);
    if (label) item.label = label;
    const name = accessibleName(el, tag, type);
    if (name) item.name = name;
    if (type && tag === 'input') item.type = type;
    const isField = tag === 'input' || tag === 'textarea' || tag === 'select';
    if (!secret) {
      const text = visibleText(el) || (isField ? clean(el.value) : '');
      if (text) item.text = text;
      if (isField && typeof el.value === 'string') item.value = el.value.length > 1000 ? el.value.slice(0, 1000) : el.value;
    }
    if (type === 'checkbox' || type === 'radio') item.checked = !!el.checked;
    else if (el.hasAttribute('aria-checked')) item.checked = el.getAttribute('aria-checked') === 'true';
    if (tag === 'a' && el.hasAttribute('href')) item.href = clean(el.href, 2000);
    item.bounds = { x: Math.round(rect.x + sx), y: Math.round(rect.y + sy),
                    width: Math.round(rect.width), height: Math.round(rect.height) };
    item.disabled = el.disabled === true || el.getAttribute('aria-disabled') === 'true';
    let visible = rect.width > 0 && rect.height > 0;
    if (visible && el.checkVisibility) visible = el.checkVisibility({ visibilityProperty: true });
    item.hidden = !visible;
    return item;
  });
  // The page as a model reads it: an accessibility-style outline in document order, with the
  // visible text and an `el-N` reference on each interactive node listed above.
  const refs = new Map();
  nodes.forEach((el, i) => refs.set(el, start + i));
  const lines = [];
  let chars = 0, cut = false, lastText = -1;
  const push = (depth, line, isText) => {
    if (cut) return;
    if (isText && lastText === lines.length - 1 && lastText >= 0) {
      if (chars + line.length + 1 > maxChars) { cut = true; return; }
      lines[lastText] += ' ' + line;
      chars += line.length + 1;
      return;
    }
    const out = '  '.repeat(depth) + (isText ? '- text: ' + line : line);
    if (chars + out.length + 1 > maxChars) { cut = true; return; }
    lines.push(out);
    chars += out.length + 1;
    lastText = isText ? lines.length - 1 : -1;
  };
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'svg', 'iframe']);
  const HEADING = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };
  const quote = (s) => JSON.stringify(s);
  const describe = (el, tag) => {
    const type = typeOf(el);
    let line = '- ' + (attr(el, 'role') || implicitRole(el, tag, type) || 'generic');
    const name = accessibleName(el, tag, type);
    if (name) line += ' ' + quote(name);
    line += ' [ref=el-' + refs.get(el) + ']';
    if ((type === 'checkbox' || type === 'radio') && el.checked) line += ' [checked]';
    if (el.disabled === true || el.getAttribute('aria-disabled') === 'true') line += ' [disabled]';
    const isField = tag === 'input' || tag === 'textarea' || tag === 'select';
    if (isField && type !== 'password' && typeof el.value === 'string' && el.value
        && !['button', 'submit', 'reset', 'checkbox', 'radio'].includes(type)) {
      line += ': ' + quote(clean(el.value, 200));
    }
    if (tag === 'a' && el.hasAttribute('href')) line += ' -> ' + clean(el.getAttribute('href'), 200);
    return line;
  };
  const walk = (node, depth) => {
    for (const child of node.childNodes) {
      if (cut) return;
      if (child.nodeType === 3) {
        const text = clean(child.textContent, 1000);
        if (text) push(depth, text, true);
        continue;
      }
      if (child.nodeType !== 1) continue;
      const el = child;
      const tag = el.tagName.toLowerCase();
      if (SKIP.has(tag) || el.hidden || el.getAttribute('aria-hidden') === 'true') continue;
      const style = getComputedStyle(el);
      if (style.display === 'none' || style.visibility === 'hidden') continue;
      const block = !style.display.startsWith('inline');
      if (block) lastText = -1;
      if (refs.has(el)) {
        push(depth, describe(el, tag), false);
      } else if (HEADING[tag]) {
        push(depth, '- heading ' + quote(visibleText(el)) + ' [level=' + HEADING[tag] + ']', false);
      } else if (tag === 'img') {
        const alt = attr(el, 'alt');
        if (alt) push(depth, '- img ' + quote(alt), false);
      } else if (tag === 'li') {
        push(depth, '- listitem:', false);
        walk(el, depth + 1);
      } else {
        walk(el, depth);
      }
      if (block) lastText = -1;
    }
  };
  walk(document.body || document.documentElement, 0);
  const info = {
    url: location.href,
    title: document.title,
    viewport: { width: window.innerWidth, height: window.innerHeight },
    scroll: { x: sx, y: sy },
    elements,
    total: all.length,
    snapshot: lines.join('\\n'),
    snapshotTruncated: cut,
  };
  return [info, ...nodes];
}
""".replace("__SELECTOR__", repr(INTERACTIVE_SELECTOR))

#: `([dx, dy, toX, toY]) => {scrollX, scrollY}`: absolute when toX/toY is given, else relative.
SCROLL: Final = """
([dx, dy, toX, toY]) => {
  if (toX !== null || toY !== null) {
    window.scrollTo({ left: toX === null ? window.scrollX : toX,
                      top: toY === null ? window.scrollY : toY, behavior: 'instant' });
  } else {
    window.scrollBy({ left: dx || 0, top: dy || 0, behavior: 'instant' });
  }
  return { scrollX: window.scrollX, scrollY: window.scrollY };
}
"""

#: After `fill` (which fires trusted input events), a blur/focus round trip makes the browser
#: fire its own trusted `change` event, and the field keeps the focus for a following Enter.
COMMIT_CHANGE: Final = """
(el) => {
  if (document.activeElement === el) { el.blur(); el.focus(); }
}
"""

#: What kind of field `type_text` is dealing with.
FIELD_KIND: Final = """
(el) => el.tagName === 'SELECT' ? 'select'
  : (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA' || el.isContentEditable) ? 'text' : 'other'
"""
