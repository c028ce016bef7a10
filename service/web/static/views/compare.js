// Compare view: 2–8 GPUs side by side from GET /v1/compare: specs with ratios to the first GPU
// and provenance marks, capability differences, measured results per workload as charts
// (throughput by batch size, OOM marked), price per GPU-hour by provider.
import { api, ApiError } from "../api.js";
import { add, h, table } from "../dom.js";
import { lineChart } from "../charts.js";
import { num, when } from "../fmt.js";
import { t } from "../i18n.js";
import { setParams } from "../nav.js";
import { apiExample, candidatesBlock, clearErrors, field, problemBlock, provenance, showProblem } from "../ui.js";

export const DEFAULT_GPUS = "nvidia-l40,nvidia-l20,nvidia-a100-sxm4-80gb";

function ratio(r) {
  return r === null || r === undefined ? null : h("span", { class: "ratio" }, ` ×${num(r, 2)}`);
}

function specValue(row, fig) {
  if (fig.value === null || fig.value === undefined) return fig.marketed ? `— (${fig.marketed})` : "—";
  if (row.unit === "gen") return `Gen ${fig.value}`;
  const digits = Number.isInteger(fig.value) ? 0 : fig.value >= 100 ? 1 : 2;
  return `${num(fig.value, digits)}${row.unit && row.unit !== "count" ? ` ${row.unit}` : ""}`;
}

function specTable(out) {
  const rows = out.specs.map((row) => {
    const known = row.values.map((v) => v.value).filter((v) => v !== null && v !== undefined);
    const best = known.length > 1 ? (row.higher_is_better ? Math.max(...known) : Math.min(...known)) : null;
    return h("tr", { class: row.differs ? "diff" : null, "data-key": row.key },
      h("th", { scope: "row" }, row.label),
      row.values.map((fig, i) => h("td", { class: ["num", best !== null && fig.value === best && row.differs ? "best" : null], "data-gpu": out.gpus[i].slug },
        h("span", { class: "value" }, specValue(row, fig)), i > 0 ? ratio(fig.ratio_to_first) : null, " ",
        h("span", { title: [fig.source_title, fig.derivation].filter(Boolean).join(" — ") || fig.provenance }, provenance(fig.provenance)))));
  });
  return table(t("specs"), [t("col_field"), ...out.gpus.map((g) => g.name)], rows, { class: "compare-specs" });
}

function capabilityTable(out) {
  const rows = [...out.capabilities].sort((a, b) => Number(b.differs) - Number(a.differs)).map((row) =>
    h("tr", { class: row.differs ? "diff" : null, "data-key": row.key }, h("th", { scope: "row" }, row.label),
      row.values.map((v) => h("td", { class: `support support-${v}` }, v === null || v === undefined ? "—" : String(v)))));
  return table(t("capabilities"), [t("col_field"), ...out.gpus.map((g) => g.name)], rows, { class: "compare-capabilities" });
}

/** global_batch when it only restates batch_size x data-parallel ranks (no accumulation). */
function plainGlobalBatch(params) {
  return params.global_batch === undefined || params.global_batch === params.batch_size * (params.gpu_count ?? 1);
}

/**
 * Result rows grouped into charts: one per workload, metric and parameters other than batch size
 * (and a global batch that only follows it), so one configuration run at several batch sizes is
 * one line per GPU.
 */
export function chartGroups(out) {
  const groups = new Map();
  for (const row of out.results) {
    const { batch_size: bs, ...rest } = row.parameters;
    if (plainGlobalBatch(row.parameters)) delete rest.global_batch;
    const key = `${row.workload}|${row.metric}|${JSON.stringify(rest)}`;
    if (!groups.has(key)) groups.set(key, { workload: row.workload, metric: row.metric, unit: row.unit, params: rest, rows: [] });
    groups.get(key).rows.push({ ...row, batch: bs });
  }
  return [...groups.values()];
}

function cellText(c) {
  if (c.oom) return t("oom");
  if (c.value === null || c.value === undefined) return c.reason ? `— (${c.reason})` : "—";
  return num(c.value, c.value >= 100 ? 0 : 2);
}

/** Charts drawn when no workload is picked (every workload's charts fill the page otherwise). */
const MAX_CHARTS = 12;

function cells(out, r) {
  return r.cells.map((c, i) => h("td", { class: ["num", c.oom ? "oom" : null], "data-gpu": out.gpus[i].slug },
    cellText(c), i > 0 ? ratio(c.speedup_vs_first) : null, " ",
    c.source === "measurement" ? provenance(c.thin ? "measured (thin)" : "measured") : c.provenance ? provenance(c.provenance) : null));
}

function stackCell(r) {
  return h("td", null, r.common_stack === false ? t("mixed_stacks") : r.common_stack ? t("one_stack") : "");
}

/** The parameters whose value differs between a workload's rows (the rest is said once). */
function varying(rows) {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r.parameters)))];
  const shown = (r, k) => JSON.stringify(r.parameters[k] ?? null);
  return keys.filter((k) => new Set(rows.map((r) => shown(r, k))).size > 1);
}

function paramText(params, keys) {
  return keys.filter((k) => params[k] !== undefined).map((k) => `${k}=${params[k]}`).join(" ");
}

function chartSection(out, g, keys, width) {
  const title = `${g.workload} ${paramText(g.params, keys)} — ${g.metric} (${g.unit})`;
  const chart = lineChart(out.gpus.map((gpu, i) => ({
    name: gpu.name,
    points: g.rows.filter((r) => r.cells[i].oom || r.cells[i].value !== null).map((r) => ({
      x: r.batch, y: r.cells[i].value ?? 0, low: r.cells[i].low ?? undefined, high: r.cells[i].high ?? undefined, oom: r.cells[i].oom,
    })),
  })).filter((sr) => sr.points.length), { width, title, xLabel: t("batch_size"), yLabel: g.unit, oomLabel: t("oom") });
  const rows = [...g.rows].sort((a, b) => a.batch - b.batch).map((r) => h("tr", null,
    h("th", { scope: "row" }, String(r.batch)), cells(out, r), stackCell(r)));
  return h("section", { class: "result-group", "data-workload": g.workload },
    h("h4", null, title), chart,
    table(title, [t("batch_size"), ...out.gpus.map((x) => x.name), t("col_stack")], rows, { class: "compare-results" }));
}

/** A workload's configurations measured at one batch size: one table, a column per varying parameter. */
function singlesSection(out, workload, metric, unit, rows, keys) {
  const cols = keys.length ? keys : ["batch_size"];
  const title = `${workload} — ${t("one_batch_configs", { n: rows.length })} — ${metric} (${unit})`;
  // sorted by the parameters in column order (numbers as numbers), so like configurations sit together
  const sortKey = (r) => cols.map((k) => String(r.parameters[k] ?? "")).join("\u0000");
  const sorted = [...rows].sort((a, b) => sortKey(a).localeCompare(sortKey(b), "en", { numeric: true }));
  const body = sorted.map((r) => h("tr", null, cols.map((k, j) => (j === 0
    ? h("th", { scope: "row" }, String(r.parameters[k] ?? "—")) : h("td", null, String(r.parameters[k] ?? "—")))),
  cells(out, r), stackCell(r)));
  return h("section", { class: "result-group result-singles", "data-workload": workload },
    h("h4", null, title),
    table(title, [...cols, ...out.gpus.map((x) => x.name), t("col_stack")], body, { class: "compare-results" }));
}

/**
 * Every measured configuration: per workload, a chart for each configuration run at several
 * batch sizes and one table of those run at one; the parameters shared by all are said once.
 * With no workload picked the charts are cut at MAX_CHARTS (the note says how to see the rest).
 */
function resultsSection(out, width, picked) {
  if (!out.results.length) return h("p", null, t("no_measurements"));
  const byWorkload = new Map();
  for (const g of chartGroups(out)) {
    const k = `${g.workload}|${g.metric}`;
    if (!byWorkload.has(k)) byWorkload.set(k, []);
    byWorkload.get(k).push(g);
  }
  const parts = [];
  let charts = 0, cut = 0;
  for (const groups of byWorkload.values()) {
    const { workload, metric, unit } = groups[0];
    const all = groups.flatMap((g) => g.rows);
    const keys = varying(all).filter((k) => k !== "batch_size" && k !== "global_batch");
    const common = Object.entries(all[0].parameters).filter(([k]) => !varying(all).includes(k) && k !== "batch_size");
    parts.push(h("h3", { class: "workload-title" }, workload),
      common.length ? h("p", { class: "note common-params" }, `${t("all_configs")}: ${common.map(([k, v]) => `${k}=${v}`).join(" ")}`) : null);
    for (const g of groups.filter((x) => x.rows.length > 1 && x.rows.every((r) => typeof r.batch === "number"))) {
      if (!picked && charts >= MAX_CHARTS) { cut += 1; continue; }
      charts += 1;
      parts.push(chartSection(out, g, keys, width));
    }
    const singles = groups.filter((x) => !(x.rows.length > 1 && x.rows.every((r) => typeof r.batch === "number"))).flatMap((g) => g.rows);
    const plain = singles.every((r) => plainGlobalBatch(r.parameters));
    const singleKeys = varying(all).filter((k) => k !== "global_batch" || !plain);
    if (singles.length) parts.push(singlesSection(out, workload, metric, unit, singles, singleKeys));
  }
  const note = h("p", { class: "note configs-shown" }, t("configs_shown", { n: out.results.length }),
    cut ? ` ${t("charts_cut", { n: charts, all: charts + cut })}` : "");
  return [note, ...parts];
}

function pricesSection(out) {
  const rows = out.prices.flatMap((gp, i) => {
    const name = out.gpus[i].name;
    if (!gp.providers.length) return [h("tr", { "data-gpu": gp.slug }, h("th", { scope: "row" }, name), h("td", { colspan: "6" }, gp.reason ?? "—"))];
    return gp.providers.map((p) => h("tr", { "data-gpu": gp.slug, class: p.stale ? "stale" : null },
      h("th", { scope: "row" }, name), h("td", null, p.provider), h("td", null, p.region), h("td", null, `${p.instance_type} (${p.gpus_per_instance} GPU)`),
      h("td", { class: ["num", p.per_gpu_hour === gp.cheapest_per_gpu_hour ? "best" : null] }, `${num(p.per_gpu_hour, 2)} ${p.currency}`),
      h("td", null, p.pricing_model), h("td", null, `${p.effective_date}${p.stale ? " (stale)" : ""}`)));
  });
  return table(`${t("prices")} (${out.currency}, ${out.pricing_model})`,
    [t("col_gpu"), t("col_provider"), t("col_region"), t("col_instance"), t("col_price"), t("col_model"), t("col_date")], rows, { class: "compare-prices" });
}

export async function render(root, { params, width }) {
  const gpus = params.get("gpus") || DEFAULT_GPUS;
  const currency = params.get("currency") || "USD";
  const workload = params.get("workload") || "";
  const vocabulary = await api("/v1/workloads");
  const form = h("form", { class: "compare-form", novalidate: true },
    h("div", { class: "grid" },
      field("gpus", t("compare_pick"), { value: gpus }),
      field("workload", t("col_workload"), { kind: "select", value: workload,
        options: [["", t("all")], ...vocabulary.items.map((w) => [w.name, w.name])] }),
      field("currency", t("currency"), { kind: "select", options: [["USD", "USD"], ["CNY", "CNY"]], value: currency })),
    h("div", { class: "form-problem" }),
    h("button", { type: "submit" }, t("submit")));
  const out = h("div", { class: "result", "aria-live": "polite" });
  async function load(list, cur, wl) {
    const q = new URLSearchParams({ gpus: list, currency: cur });
    if (wl) q.set("workload", wl);
    setParams("compare", q);
    const path = `/v1/compare?${q}`;
    clearErrors(form);
    out.replaceChildren(h("p", { class: "loading" }, t("loading")));
    try {
      const r = await api(path);
      out.replaceChildren();
      add(out,
        h("ul", { class: "compare-gpus" }, r.gpus.map((g) => h("li", null, h("a", { href: `#/gpus/${encodeURIComponent(g.slug)}` }, g.name),
          ` — ${[g.architecture, g.form_factor].filter(Boolean).join(", ")}`,
          g.warnings?.length ? h("span", { class: "note" }, ` (${g.warnings.map((w) => w.message).join("; ")})`) : null))),
        h("h2", null, t("specs")), specTable(r),
        h("h2", null, t("capabilities")), capabilityTable(r),
        h("h2", null, t("measured_results")), resultsSection(r, width, wl),
        h("h2", null, t("prices")), pricesSection(r),
        r.notes?.length ? h("ul", { class: "notes" }, r.notes.map((n) => h("li", null, n))) : null,
        h("p", { class: "note" }, `as of ${when(r.as_of)}`),
        apiExample("GET", path));
    } catch (err) {
      out.replaceChildren();
      if (err instanceof ApiError && err.status === 300 && err.problem.candidates?.length) {
        out.append(candidatesBlock(err.problem, (slug) => {
          const names = list.split(",").map((n) => (n.trim().toLowerCase() === String(err.problem.query).toLowerCase() ? slug : n.trim()));
          form.elements.gpus.value = names.join(",");
          load(names.join(","), cur, wl);
        }));
      } else if (err instanceof ApiError) showProblem(form, err);
      else out.append(problemBlock(err));
    }
  }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    load(form.elements.gpus.value.split(",").map((x) => x.trim()).filter(Boolean).join(","), form.elements.currency.value,
      form.elements.workload.value);
  });
  add(root, h("h1", null, t("compare_title")), form, out);
  await load(gpus, currency, workload);
}
