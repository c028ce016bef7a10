// Form fields with an error slot each, problem display, and the "API call behind this view"
// box (the page is the API's living example, so every view shows the call it made).
import { h, nextId } from "./dom.js";
import { t } from "./i18n.js";

/**
 * A labelled field. kind: "text" | "number" | "select" | "checkbox". The error slot sits right
 * after the control and is tied to it with aria-describedby, so a screen reader reads the
 * API's message with the field.
 */
export function field(name, label, { kind = "text", value, options, min, max, step, list, placeholder, required, hint } = {}) {
  const id = nextId(`f-${name.replace(/\W/g, "-")}`);
  const errId = `${id}-err`;
  // a hint (the API's default, what an empty field means) is read with the field, like its error
  const hintEl = hint ? h("p", { id: `${id}-hint`, class: "field-hint" }, hint) : null;
  const describedBy = hintEl ? `${id}-hint ${errId}` : errId;
  let control;
  if (kind === "select") {
    control = h("select", { id, name, "aria-describedby": describedBy },
      options.map(([v, text]) => h("option", { value: v }, text)));
    if (value !== undefined) control.value = String(value);
  } else if (kind === "checkbox") {
    control = h("input", { id, name, type: "checkbox", "aria-describedby": describedBy, checked: !!value });
  } else if (kind === "textarea") {
    control = h("textarea", { id, name, "aria-describedby": describedBy, rows: 3, placeholder, spellcheck: "false" });
    if (value !== undefined && value !== null) control.value = String(value);
  } else {
    control = h("input", { id, name, type: kind, "aria-describedby": describedBy, min, max, step, list, placeholder,
      required, autocomplete: "off", spellcheck: "false" });
    if (value !== undefined && value !== null) control.value = String(value);
  }
  const err = h("p", { id: errId, class: "field-error", "data-error-for": name, role: "status" });
  const wrap = kind === "checkbox"
    ? h("div", { class: "field field-check", "data-field": name }, control, h("label", { for: id }, label), hintEl, err)
    : h("div", { class: "field", "data-field": name }, h("label", { for: id }, label), control, hintEl, err);
  return wrap;
}

/** Clear every field error and the form-level problem in `form`. */
export function clearErrors(form) {
  for (const el of form.querySelectorAll(".field-error")) el.replaceChildren();
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  form.querySelector(".form-problem")?.replaceChildren();
}

/**
 * Show an ApiError on a form: each `errors[].loc` next to its field (the first one focused),
 * the rest (and the problem's title/detail) in the form's problem box.
 */
export function showProblem(form, error) {
  clearErrors(form);
  const box = form.querySelector(".form-problem");
  const leftovers = [];
  let first = null;
  for (const fe of error.fieldErrors || []) {
    // the field itself, else its closest enclosing field ("constraints.budget.per_hour" -> ...)
    let slot = null;
    for (let parts = fe.field.split("."); parts.length && !slot; parts.pop()) {
      slot = form.querySelector(`[data-error-for="${CSS.escape(parts.join("."))}"]`);
    }
    if (slot) {
      slot.append(h("span", null, fe.msg));
      const control = slot.closest(".field")?.querySelector("input, select, textarea");
      control?.setAttribute("aria-invalid", "true");
      first = first || control;
    } else {
      leftovers.push(`${fe.field || "request"}: ${fe.msg}`);
    }
  }
  if (box) {
    const p = error.problem || {};
    box.append(h("div", { class: "problem", role: "alert" },
      h("strong", null, p.title || t("error")), p.detail ? ` — ${p.detail}` : "",
      leftovers.length ? h("ul", null, leftovers.map((l) => h("li", null, l))) : null));
  }
  first?.focus();
}

/** A problem shown in place of a view's content. */
export function problemBlock(error) {
  const p = error?.problem || {};
  return h("div", { class: "problem", role: "alert" }, h("strong", null, p.title || t("error")),
    ` — ${p.detail || error?.message || String(error)}`);
}

/** The request a view made, as a copyable curl line. */
export function apiExample(method, path, body) {
  const origin = location.origin;
  const cmd = method === "GET"
    ? `curl -s '${origin}${path}'`
    : `curl -s -X ${method} '${origin}${path}' -H 'Content-Type: application/json' -d '${JSON.stringify(body)}'`;
  return h("details", { class: "api-example" }, h("summary", null, t("api_example")),
    h("pre", null, h("code", null, cmd)));
}

/** A copy-to-clipboard button for `text` (falls back to selecting the text). */
export function copyButton(text, target) {
  const btn = h("button", { type: "button", class: "copy" }, t("copy"));
  btn.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      btn.textContent = t("copied");
    } catch {
      if (target) getSelection().selectAllChildren(target);
    }
  });
  return btn;
}

/** A provenance mark: measured / interpolated / transferred / published / derived / spec / datasheet. */
const LEGEND_TERM = { "vendor-datasheet": "datasheet", "vendor-brief": "datasheet", "oem-sheet": "datasheet",
  "cloud-doc": "datasheet", whitepaper: "datasheet", "pci-ids": "registry" };

export function provenance(kind) {
  if (!kind) return h("span", { class: "prov prov-unknown" }, "—");
  // every chip leads to the one legend that says what the word means (#/legend); a source
  // kind (vendor-datasheet, pci-ids ...) to the label it is a kind of
  const term = LEGEND_TERM[kind] ?? kind;
  return h("a", { class: `prov prov-${String(kind).replace(/\W/g, "")}`, href: `#/legend?term=${encodeURIComponent(term)}`,
    title: t("what_is", { term: kind }) }, kind);
}

/**
 * The API's 300 answer for a name that means several GPUs, as a choice: each candidate (the
 * stated default marked) replaces the name in the list and compares again.
 */
export function candidatesBlock(problem, pick) {
  return h("div", { class: "ambiguous", role: "group", "aria-label": t("pick_one") },
    h("p", null, problem.detail || t("pick_one")),
    h("ul", { class: "candidates" }, problem.candidates.map((c) => h("li", null,
      h("button", { type: "button", "data-slug": c.slug, on: { click: () => pick(c.slug) } }, c.name),
      ` (${c.slug})`, c.default || c.slug === problem.default ? ` — ${t("default_variant")}` : ""))));
}
