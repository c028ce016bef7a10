// Data view: which GPU x workload cells are measured, thin or missing (GET /v1/coverage), the
// latest results behind a cell (GET /v1/benchmark-results), and for admins who paste a key the
// pending-GPU queue and quarantine alerts (GET /v1/admin/pending-gpus, /v1/admin/alerts).
// Agents write `host`, names and messages: all of it is shown as text.
import { api, ApiError, hasKey, setKey } from "../api.js";
import { add, h, table } from "../dom.js";
import { num, when } from "../fmt.js";
import { t } from "../i18n.js";
import { apiExample, problemBlock } from "../ui.js";

/**
 * A GPU x workload cell from the latest-measured view of that GPU: measured when every
 * configuration has a stack with >= k usable results and counts as measured (>= 2 hosts or a
 * trusted agent); thin when some configuration falls short; missing when nothing is usable.
 */
export function cellState(cell, cells) {
  if (!cell || cell.usable === 0 || !cells || cells.length === 0) return { state: "missing", full: 0, of: 0 };
  const full = cells.filter((c) => !c.thin && c.provenance === "measured").length;
  return { state: full === cells.length ? "measured" : "thin", full, of: cells.length };
}

/** Latest-measured cells by workload, for every GPU that has results (one call per such GPU). */
async function measuredCells(cov) {
  const withData = cov.rows.filter((r) => Object.values(r.workloads).some((c) => c.results > 0));
  const byGpu = {};
  let k = null;
  await Promise.all(withData.map(async (row) => {
    const cells = await listCells(`/v1/gpus/${encodeURIComponent(row.gpu_slug)}/measurements`);
    k = cells.k;
    const byWl = {};
    for (const c of cells.items) (byWl[c.workload] ||= []).push(c);
    byGpu[row.gpu_slug] = byWl;
  }));
  return { byGpu, k };
}

async function listCells(path) {
  const items = [];
  let cursor = null, k = null;
  do {
    const page = await api(cursor ? `${path}?cursor=${encodeURIComponent(cursor)}` : path);
    items.push(...page.cells);
    k = page.min_points;
    cursor = page.next_cursor;
  } while (cursor);
  return { items, k };
}

/** The workload's main metric (GET /v1/workloads names it: throughput, tflops ...) of one result. */
export function mainMetric(r, metricName) {
  const m = r.metrics?.[metricName];
  if (!m) return "—";
  return `${metricName} ${num(m.value, m.value >= 100 ? 0 : 2)} ${m.unit}`;
}

async function showCell(panel, slug, name, workload, metricName) {
  const path = `/v1/benchmark-results?gpu=${encodeURIComponent(slug)}&workload=${encodeURIComponent(workload)}&limit=20`;
  panel.replaceChildren(h("p", { class: "loading" }, t("loading")));
  try {
    const page = await api(path);
    const rows = page.items.map((r) => h("tr", { "data-result-id": r.id },
      h("td", null, when(r.measured_at)),
      h("td", { class: "host" }, r.host),
      h("td", null, r.agent?.name ?? "—"),
      h("td", null, r.status),
      h("td", { class: "params" }, Object.entries(r.parameters || {}).map(([k, v]) => `${k}=${v}`).join(", ")),
      h("td", { class: "num main-metric" }, mainMetric(r, metricName)),
      h("td", null, [r.quarantined ? `${t("quarantined")}: ${r.quarantine?.reason ?? ""}` : "", r.error ?? ""].filter(Boolean).join(" · "))));
    panel.replaceChildren(
      h("h2", { id: "cell-title", tabindex: "-1" }, `${t("cell_results")}: ${name} × ${workload}`),
      rows.length ? table(`${name} × ${workload}`, [t("col_when"), t("col_host"), t("col_agent"), t("col_status"), t("col_params"), t("col_metric"), t("col_flags")], rows, { class: "results" })
        : h("p", null, t("none")),
      apiExample("GET", path));
    panel.querySelector("#cell-title").focus();
  } catch (err) {
    panel.replaceChildren(problemBlock(err));
  }
}

function coverageGrid(cov, measured, panel, mainMetrics) {
  const head = [t("col_gpu"), ...cov.workloads];
  // GPUs with results first (the catalog order otherwise), so what is measured is seen first
  const has = (row) => Object.values(row.workloads).some((c) => c.results > 0);
  const ordered = [...cov.rows.filter(has), ...cov.rows.filter((r) => !has(r))];
  const rows = ordered.map((row) => h("tr", { "data-slug": row.gpu_slug },
    h("th", { scope: "row" }, h("a", { href: `#/gpus/${encodeURIComponent(row.gpu_slug)}` }, row.name)),
    cov.workloads.map((wl) => {
      const c = row.workloads[wl];
      const { state, full, of } = cellState(c, measured.byGpu[row.gpu_slug]?.[wl]);
      if (c.results === 0) return h("td", { class: `cell cell-${state}`, "data-state": state, "data-workload": wl }, t(state));
      const label = `${t(state)}${of ? ` · ${full}/${of}` : ""}`;
      const btn = h("button", { type: "button", class: "cell-button", "data-gpu": row.gpu_slug, "data-workload": wl,
        "aria-label": `${row.name} × ${wl}: ${t(state)}; ${full} of ${of} configurations measured; `
          + `${c.usable} usable of ${c.results} results from ${c.hosts} host(s)` }, label);
      btn.addEventListener("click", () => showCell(panel, row.gpu_slug, row.name, wl, mainMetrics[wl]));
      return h("td", { class: `cell cell-${state}`, "data-state": state, "data-workload": wl }, btn);
    })));
  return table(t("data_title"), head, rows, { class: "coverage" });
}

function adminPanel() {
  const out = h("div", { class: "admin-out", "aria-live": "polite" });
  const input = h("input", { id: "admin-key", type: "password", autocomplete: "off", spellcheck: "false" });
  const use = h("button", { type: "submit" }, t("admin_use"));
  const forget = h("button", { type: "button", class: "secondary" }, t("admin_forget"));
  const form = h("form", { class: "admin-form" },
    h("div", { class: "field" }, h("label", { for: "admin-key" }, t("admin_key")), input),
    h("div", { class: "buttons" }, use, forget),
    h("p", { class: "note" }, t("admin_note")));
  async function load() {
    out.replaceChildren(h("p", { class: "loading" }, t("loading")));
    try {
      const [pending, alerts] = await Promise.all([
        api("/v1/admin/pending-gpus", { auth: true }),
        api("/v1/admin/alerts?acknowledged=false&limit=50", { auth: true }),
      ]);
      out.replaceChildren(
        h("h3", null, t("pending_title")),
        pending.items.length ? table(t("pending_title"), [t("col_nvml"), t("col_pci"), "GiB", t("col_runs"), t("col_candidates"), t("col_when")],
          pending.items.map((p) => h("tr", null, h("td", null, p.nvml_name), h("td", null, p.pci_device_id),
            h("td", null, num(p.memory_total_bytes / 2 ** 30)), h("td", null, `${p.run_count} / ${p.result_count}`),
            h("td", null, p.candidates.join(", ")), h("td", null, when(p.last_seen_at)))), { class: "pending" })
          : h("p", null, t("none")),
        h("h3", null, t("alerts_title")),
        alerts.items.length ? table(t("alerts_title"), [t("col_kind"), t("col_gpu"), t("col_message"), t("col_created")],
          alerts.items.map((a) => h("tr", null, h("td", null, a.kind), h("td", null, a.gpu_slug ?? "—"),
            h("td", null, a.message), h("td", null, when(a.created_at)))), { class: "alerts" })
          : h("p", null, t("none")));
    } catch (err) {
      out.replaceChildren(problemBlock(err instanceof ApiError ? err : new ApiError(0, { detail: String(err) })));
    }
  }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    setKey(input.value);
    input.value = "";  // the field does not keep it either
    load();
  });
  forget.addEventListener("click", () => {
    setKey(null);
    out.replaceChildren();
  });
  if (hasKey()) load();
  return h("section", { class: "admin", "aria-labelledby": "admin-title" }, h("h2", { id: "admin-title" }, t("admin_title")), form, out);
}

export async function render(root) {
  const path = "/v1/coverage";
  const [cov, vocabulary] = await Promise.all([api(path), api("/v1/workloads")]);
  const mainMetrics = Object.fromEntries(vocabulary.items.map((w) => [w.name, w.main_metric]));
  const measured = await measuredCells(cov);
  const panel = h("div", { class: "cell-panel" });
  add(root,
    h("h1", null, t("data_title")),
    h("p", { class: "legend-line" }, t("data_legend").replace("{k}", `k = ${measured.k ?? 3}`), " ",
      ["measured", "thin", "missing"].map((st) => h("span", { class: `chip cell-${st}` }, t(st)))),
    cov.pending_runs ? h("p", null, `${cov.pending_runs} run(s) wait for an unknown GPU to be mapped.`) : null,
    coverageGrid(cov, measured, panel, mainMetrics),
    apiExample("GET", path),
    panel,
    adminPanel());
}
