// DOM helpers. Everything that reaches the page from data goes through text nodes or
// attribute values: there is no HTML-from-string path here (and the page's Trusted Types
// policy makes innerHTML & co. throw, so none can be added by accident).

const SVG_NS = "http://www.w3.org/2000/svg";

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

function apply(el, props) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "on") {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    } else if (k === "class") {
      el.setAttribute("class", Array.isArray(v) ? v.filter(Boolean).join(" ") : v);
    } else if (k === "value" || k === "checked") {
      el[k] = v;
    } else if (k === "style" || k.startsWith("on")) {
      throw new Error(`refusing inline ${k}`);  // CSP would block it anyway
    } else {
      el.setAttribute(k, v === true ? "" : String(v));
    }
  }
}

/** Append children (text, nodes, arrays; null/false skipped) to an existing element. */
export function add(el, ...children) {
  append(el, children);
  return el;
}

/** An HTML element: h("td", {class: "num"}, "48 GB"). Children are text or nodes. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  apply(el, props);
  append(el, children);
  return el;
}

/** An SVG element, same contract as h(). */
export function s(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, props);
  append(el, children);
  return el;
}

/** A link whose target came from data: only http(s) URLs become links, anything else text. */
export function safeLink(url, text) {
  if (typeof url === "string" && /^https?:\/\//i.test(url)) {
    return h("a", { href: url, rel: "noopener noreferrer", target: "_blank" }, text ?? url);
  }
  return document.createTextNode(text ?? url ?? "");
}

/** A table whose wrapper scrolls sideways on narrow screens and can be scrolled by keyboard. */
export function table(caption, head, rows, props = {}) {
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
    h("table", props,
      h("caption", null, caption),
      h("thead", null, h("tr", null, head.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", null, rows)));
}

let uid = 0;
/** A unique id for label/for and aria-describedby pairs. */
export function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}
