// Recommend view: the common questions -> POST /v1/recommend: ranked options with their reasons
// (in the language the browser asks for), the time-vs-cost frontier with error bands, excluded
// GPUs with reasons, the scheduling hint ready to copy, and a link that reproduces the answer
// through GET /v1/recommendations/{recommendation_id}.
import { api, ApiError } from "../api.js";
import { add, h, table } from "../dom.js";
import { frontierChart } from "../charts.js";
import { gib, num, when } from "../fmt.js";
import { t } from "../i18n.js";
import { setParams } from "../nav.js";
import { apiExample, clearErrors, copyButton, field, problemBlock, provenance, showProblem } from "../ui.js";
import { openapiDoc, schemaHint } from "./estimate_form.js";

export const DEFAULTS = { "workload.model": "llama3-8b", "workload.mode": "fine-tuning", "workload.seq_len": "2048",
  "workload.batch_size": "1", "workload.tokens": "100000000", objective: "fastest", "constraints.max_gpus": "8" };

const NUMBERS = new Set(["workload.batch_size", "workload.seq_len", "workload.global_batch", "workload.tokens",
  "workload.input_len", "workload.output_len", "workload.requests_per_s", "workload.ttft_target_ms", "workload.tpot_target_ms",
  "constraints.deadline_hours", "constraints.budget.per_hour", "constraints.budget.per_run", "constraints.max_gpus",
  "constraints.max_power_w_per_gpu", "constraints.inventory.gpus_per_node", "constraints.inventory.nodes", "limit",
  "constraints.budget.purchase", "cost.utilisation", "cost.electricity_usd_per_kwh", "cost.amortisation_years", "cost.pue",
  "workload.concurrency", "workload.prefix_cache_hit_rate", "workload.memory_fraction", "workload.speculative.draft_tokens", "workload.speculative.acceptance_rate",
  "workload.lora.adapters", "workload.lora.rank", "workload.lora.max_loras"]);
const QUESTION_FIELDS = new Set(["mode", "precision", "batch_size", "seq_len", "tokens", "finetune", "engine", "input_len",
  "output_len", "requests_per_s", "ttft_target_ms", "tpot_target_ms"]);
const TRAINING = ["workload.seq_len", "workload.global_batch", "workload.tokens", "workload.finetune", "constraints.deadline_hours",
  "constraints.budget.per_run", "constraints.allow_gradient_checkpointing"];
// issue 28: serving features and the layouts the search may pick (checkboxes: handled in bodyOf)
const FEATURES = ["workload.concurrency", "workload.prefix_cache_hit_rate", "workload.memory_fraction", "workload.speculative.method",
  "workload.speculative.draft_tokens", "workload.speculative.acceptance_rate", "workload.lora.adapters", "workload.lora.rank",
  "workload.lora.max_loras", "constraints.allow_disaggregation", "constraints.allow_expert_parallel"];
const LAYOUT_SWITCHES = ["constraints.allow_disaggregation", "constraints.allow_expert_parallel"];
const SERVING = ["workload.engine", "workload.input_len", "workload.output_len", "workload.requests_per_s",
  "workload.ttft_target_ms", "workload.tpot_target_ms", ...FEATURES];

function set(obj, path, value) {
  const keys = path.split(".");
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] ||= {};
  o[keys.at(-1)] = value;
}

/**
 * What `base` (the request a shared link was asked with) says that the form has no field for
 * (cost assumptions, limit, vendors ...), kept under the form's own fields.
 */
function keepUnshown(body, base, form, prefix = "") {
  const names = [...form.elements].map((el) => el.name).filter(Boolean);
  for (const [k, v] of Object.entries(base || {})) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (v === null || v === undefined) continue;
    if (typeof v === "object" && !Array.isArray(v)) keepUnshown(body, v, form, path);
    else if (!names.some((n) => n === path || n.startsWith(`${path}.`))) set(body, path, v);
  }
}

/** The request body from the form's dotted field names; empty fields are left to the API's
 * defaults, and what `base` asked that the form cannot show is kept. */
export function bodyOf(form, base = null) {
  const fd = new FormData(form);
  const mode = fd.get("workload.mode");
  const body = { workload: {} };
  for (const [name, raw] of fd.entries()) {
    const v = String(raw).trim();
    if (v === "" || name.startsWith("constraints.inventory.")) continue;
    if ((mode === "inference" && TRAINING.includes(name)) || (mode !== "inference" && SERVING.includes(name))) continue;
    if (name === "workload.finetune" && mode !== "fine-tuning") continue;
    if (name.startsWith("workload.speculative.") && !String(fd.get("workload.speculative.method") ?? "").trim()) continue;
    if (name.startsWith("workload.lora.") && !String(fd.get("workload.lora.adapters") ?? "").trim()) continue;
    if (LAYOUT_SWITCHES.includes(name)) continue;  // checkboxes: handled below
    if (name === "constraints.allowed_gpus" || name === "constraints.excluded_gpus" || name === "constraints.form_factors") {
      set(body, name, v.split(",").map((x) => x.trim()).filter(Boolean));
    } else if (name === "constraints.allow_gradient_checkpointing") {
      continue;  // a checkbox: handled below
    } else {
      set(body, name, NUMBERS.has(name) && Number.isFinite(Number(v)) ? Number(v) : v);
    }
  }
  if (mode !== "inference" && !form.elements["constraints.allow_gradient_checkpointing"].checked) {
    set(body, "constraints.allow_gradient_checkpointing", false);
  }
  for (const name of LAYOUT_SWITCHES) {
    if (mode === "inference" && !form.elements[name].checked) set(body, name, false);
  }
  const inv = ["gpu", "gpus_per_node", "nodes"].map((k) => String(fd.get(`constraints.inventory.${k}`) ?? "").trim());
  if (inv[0]) {
    const pool = { gpu: inv[0], gpus_per_node: inv[1] === "" ? 8 : Number(inv[1]) };
    if (inv[2] !== "") pool.nodes = Number(inv[2]);
    set(body, "constraints.inventory", [pool]);
  }
  if (body.constraints?.budget) body.constraints.budget.currency = "USD";
  if (base) keepUnshown(body, base, form);
  return body;
}

function hours(x) {
  return x === null || x === undefined ? "—" : `${num(x, x < 10 ? 2 : 1)} h`;
}

function figure(f, fmt) {
  if (!f) return "—";
  return h("span", null, fmt(f.value), f.band ? ` (${fmt(f.band.low)} – ${fmt(f.band.high)})` : "", " ", provenance(f.provenance));
}

function strategyText(st) {
  const parts = [`${st.gpu_count} GPU`, st.nodes > 1 ? `${st.nodes} × ${st.gpus_per_node}` : null, st.precision,
    st.sharding && st.sharding !== "none" ? st.sharding : null, st.tensor_parallel > 1 ? `TP${st.tensor_parallel}` : null,
    st.replicas ? `${st.replicas} replica(s)` : null, st.engine, st.finetune, st.gradient_checkpointing ? "gradient checkpointing" : null,
    st.micro_batch ? `micro-batch ${st.micro_batch}` : null, st.accumulation_steps > 1 ? `${st.accumulation_steps} accumulation steps` : null,
    st.quant_method && st.quant_method !== "none" ? st.quant_method : null,
    st.expert_parallel ? `EP${st.tensor_parallel}` : null,
    st.disaggregated ? `prefill ${st.disaggregated.prefill_gpus} + decode ${st.disaggregated.decode_gpus} GPU` : null];
  return parts.filter(Boolean).join(" · ");
}

/** The scheduling hint as the text one pastes: Kubernetes, Slurm, SkyPilot, torchrun. */
export function schedulingText(sc) {
  const lines = [];
  if (sc.kubernetes) {
    lines.push("# Kubernetes", "nodeSelector:", ...Object.entries(sc.kubernetes.node_selector).map(([k, v]) => `  ${k}: "${v}"`),
      "resources:", ...Object.entries(sc.kubernetes.resources).flatMap(([k, m]) => [`  ${k}:`, ...Object.entries(m).map(([r, n]) => `    ${r}: ${n}`)]));
  }
  if (sc.slurm?.length) lines.push("# Slurm", ...sc.slurm.map((o) => `#SBATCH ${o}`));
  if (sc.skypilot) lines.push("# SkyPilot", ...Object.entries(sc.skypilot).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`));
  if (sc.torchrun?.length) lines.push("# torchrun", `torchrun ${sc.torchrun.join(" ")}`);
  return lines.join("\n");
}

const TARGETS = ["kubernetes", "skypilot", "slurm"];

/**
 * The option's deployment artifact, fetched on demand from GET /v1/recommendations/{id}/artifacts
 * (the full file a scheduler takes, with its FILL-IN list) and ready to copy. Needs the stored
 * answer's id: an answer the service could not store shows the hint alone.
 */
function artifactPanel(recId, rank) {
  const out = h("div", { class: "artifact-out", "aria-live": "polite" });
  const show = async (target) => {
    out.replaceChildren(h("p", { class: "note" }, t("loading")));
    try {
      const q = new URLSearchParams({ target, option: String(rank) });
      const a = await api(`/v1/recommendations/${encodeURIComponent(recId)}/artifacts?${q}`);
      const pre = h("pre", { class: "artifact", "data-target": target, tabindex: "0", "aria-label": a.filename }, h("code", null, a.content));
      out.replaceChildren(h("p", { class: "note" }, `${a.filename} · ${a.media_type}`), pre, copyButton(a.content, pre),
        a.fill_in.length ? h("ul", { class: "fill-in", "aria-label": t("fill_in") }, a.fill_in.map((f) => h("li", null, f))) : null);
    } catch (e) {
      out.replaceChildren(problemBlock(e));
    }
  };
  return h("div", { class: "artifacts" }, h("h4", null, t("artifact")),
    h("div", { class: "artifact-targets", role: "group", "aria-label": t("artifact") },
      TARGETS.map((target) => h("button", { type: "button", "data-target": target, on: { click: () => show(target) } }, t(`target_${target}`)))),
    out);
}

function optionCard(o, recId) {
  const hint = o.scheduling ? schedulingText(o.scheduling) : "";
  const pre = hint ? h("pre", { class: "hint" }, h("code", null, hint)) : null;
  const c = o.cost;
  return h("article", { class: "option", "data-rank": o.rank, "data-gpu": o.gpu.slug },
    h("h3", null, h("span", { class: "rank" }, `#${o.rank}`), ` ${o.gpu.name} × ${o.strategy.gpu_count}`,
      o.within_error_of_best ? [" ", h("a", { class: "badge", href: `#/legend?term=${encodeURIComponent("≈ best")}`, title: t("what_is", { term: "≈ best" }) }, t("best_band"))] : null),
    h("p", { class: "note" }, strategyText(o.strategy)),
    h("dl", { class: "facts" },
      h("dt", null, t("memory_title")), h("dd", null, `${gib(o.memory.needed_bytes)} / ${gib(o.memory.usable_bytes)} (${t("headroom")} ${gib(o.memory.headroom_bytes)}) `, provenance(o.memory.provenance)),
      o.training ? [h("dt", null, t("step_time")), h("dd", null, figure(o.training.step_time, (v) => `${num(v, 3)} s`))] : null,
      o.training?.time_to_train ? [h("dt", null, t("time_to_train")), h("dd", null, figure(o.training.time_to_train, hours))] : null,
      o.training ? [h("dt", null, t("throughput")), h("dd", null, `${num(o.training.tokens_per_s, 0)} tokens/s, MFU ${num(o.training.mfu * 100, 0)}%`)] : null,
      o.serving?.ttft ? [h("dt", null, t("ttft")), h("dd", null, figure(o.serving.ttft, (v) => `${num(v, 1)} ms`))] : null,
      o.serving?.tpot ? [h("dt", null, t("tpot")), h("dd", null, figure(o.serving.tpot, (v) => `${num(v, 1)} ms`))] : null,
      c ? [h("dt", null, t("cost")), h("dd", null, [
        c.per_hour !== null && c.per_hour !== undefined ? `${num(c.per_hour, 2)} ${c.currency}/h` : null,
        c.run ? `run ${num(c.run.mid, 0)} (${num(c.run.low, 0)} – ${num(c.run.high, 0)}) ${c.currency}` : null,
        c.per_million_tokens ? `${num(c.per_million_tokens, 2)} ${c.currency} / 1M tokens` : null,
        c.per_million_input != null ? `${t("price_in_out", { input: num(c.per_million_input, 3), output: num(c.per_million_output, 3), currency: c.currency })}` : null,
        c.provider ? `${c.provider} ${c.instance_type ?? ""}${c.instances ? ` × ${c.instances}` : ""}` : null,
        c.stale ? "stale price" : null].filter(Boolean).join(" · "))] : null,
      c?.tco ? [h("dt", null, t("tco")), h("dd", { class: "tco" }, c.tco.available
        ? [`${num(c.tco.per_hour, 2)} ${c.tco.currency}/h`, c.tco.capex != null ? ` · ${t("capex")} ${num(c.tco.capex, 0)} ${c.tco.currency}` : "",
          c.tco.run ? ` · run ${num(c.tco.run.mid, 0)} ${c.tco.currency}` : ""].join("")
        : `${t("tco_unavailable")} (${c.tco.reason})`)] : null,
      o.perf_per_watt ? [h("dt", null, "perf/W"), h("dd", null, `${num(o.perf_per_watt, 2)} tokens/s/W`)] : null,
      h("dt", null, t("provenance")), h("dd", null, provenance(o.provenance))),
    o.reasons.length ? h("ul", { class: "reasons", "aria-label": t("reasons") }, o.reasons.map((r) => h("li", { "data-code": r.code }, r.message))) : null,
    o.warnings.length ? h("ul", { class: "warnings" }, o.warnings.map((r) => h("li", { "data-code": r.code }, r.message))) : null,
    pre ? h("div", { class: "scheduling" }, h("h4", null, t("scheduling")), pre, copyButton(hint, pre)) : null,
    recId ? artifactPanel(recId, o.rank) : null);
}

/**
 * The frontier's axes in the units its points state (time_unit, cost_unit): TPOT is drawn in ms
 * (the API states it in s, "s TPOT"; its band, on the option, is in ms), time to train in h,
 * training throughput in s per 1M tokens; cost per run, per 1M tokens or per hour.
 * Answers stored before units were stated get them from the question's mode.
 */
export function frontierAxes(r) {
  const serving = r.options.some((o) => o.serving) || r.question?.mode === "inference";
  const first = r.frontier[0] || {};
  const timeUnit = first.time_unit ?? (serving ? "s TPOT" : r.frontier.some((p) => p.hours != null) ? "h" : "s/1M tokens");
  const currency = r.options.find((o) => o.cost)?.cost.currency ?? "USD";
  const costUnit = first.cost_unit ?? (timeUnit === "h" ? `${currency}/run` : serving ? `${currency}/h` : `${currency}/1M tokens`);
  const x = timeUnit.startsWith("s TPOT")
    ? { label: "TPOT (ms)", scale: 1000, band: (o) => o?.serving?.tpot?.band }
    : timeUnit === "h"
      ? { label: `${t("time_to_train")} (h)`, scale: 1, band: (o) => o?.training?.time_to_train?.band }
      : { label: `${t("throughput_time")} (s / 1M tokens)`, scale: 1, band: () => null };
  const isRun = costUnit.endsWith("/run");
  const y = { label: `${t("cost")} (${costUnit.replace("/", " / ")})`,
    band: (o) => (isRun ? o?.cost?.run : null) };
  return { x, y };
}

/** A frontier point's layout, so two points of one GPU count tell apart: TP x replicas when
 * serving (prefill + decode GPUs when the pools are split, EP for spread experts), the sharding
 * when training; empty for answers stored before points stated it. */
function planLayout(p) {
  if (p.replicas == null || p.tensor_parallel == null) return p.sharding ?? "";
  const tp = `${p.expert_parallel ? "EP" : "TP"}${p.tensor_parallel}`;
  const pools = p.disaggregated;
  return pools ? `${tp} P${pools.prefill_gpus}+D${pools.decode_gpus}` : `${tp}×${p.replicas}`;
}

/** The rentable shape a frontier point is priced on (null: not rented, or not stated). */
function pricedOn(p) {
  if (!p.instance_type) return null;
  const extra = p.gpus_paid > p.gpu_count ? `, ${t("gpus_paid", { n: p.gpus_paid })}` : "";
  return `${p.provider} ${p.instance_type}${extra}`;
}

function frontierSection(r, width) {
  const byRank = new Map(r.options.map((o) => [o.rank, o]));
  const { x, y } = frontierAxes(r);
  const pts = r.frontier.map((p) => {
    const o = p.rank ? byRank.get(p.rank) : null;
    const xb = x.band(o), yb = y.band(o);
    const layout = planLayout(p);
    return { x: p.time_value * x.scale, y: p.cost_value, label: `${p.gpu} ×${p.gpu_count}${layout ? ` · ${layout}` : ""}`,
      detail: pricedOn(p), frontier: true, xLow: xb?.low, xHigh: xb?.high, yLow: yb?.low, yHigh: yb?.high };
  });
  if (!pts.length) return h("p", null, t("none"));
  return frontierChart(pts, { width, title: `${t("frontier")}: ${x.label} × ${y.label}`, xLabel: x.label, yLabel: y.label });
}

function excludedRows(rows) {
  return rows.map((e) => h("tr", { "data-gpu": e.gpu.slug, "data-code": e.code },
    h("th", { scope: "row" }, e.gpu.name), h("td", null, h("code", null, e.code)),
    h("td", null, e.message, e.also?.length ? h("ul", null, e.also.map((a) => h("li", null, a.message))) : null)));
}

/**
 * Excluded GPUs grouped by their reason: the reasons about this job (memory, time, cost, limits)
 * first, largest group first; "not in the allowed list" last and folded, since it only repeats
 * the question's own allowed_gpus.
 */
function excludedSection(r) {
  const groups = new Map();
  for (const e of r.excluded) groups.set(e.code, [...(groups.get(e.code) || []), e]);
  const relevant = [...groups].filter(([code]) => code !== "NOT_ALLOWED").sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]));
  const other = groups.get("NOT_ALLOWED") || [];
  const head = [t("col_gpu"), "code", t("reasons")];
  return [
    relevant.length ? h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": t("excluded") },
      h("table", { class: "excluded" }, h("caption", null, t("excluded")),
        h("thead", null, h("tr", null, head.map((c) => h("th", { scope: "col" }, c)))),
        relevant.map(([code, rows]) => h("tbody", { "data-code": code },
          h("tr", { class: "group" }, h("th", { scope: "rowgroup", colspan: "3" }, `${code} (${rows.length})`)),
          excludedRows(rows))))) : null,
    other.length ? h("details", { class: "excluded-other" }, h("summary", null, t("excluded_other", { n: other.length })),
      table(t("excluded_other", { n: other.length }), head, excludedRows(other), { class: "excluded" })) : null,
  ];
}

/**
 * The options per card, side by side: throughput and price divided by the GPUs each option
 * uses, so L40 x 8 and L20 x 8 (or x 8 and x 1) compare as cards, whatever "Most GPUs" allowed.
 */
export function perGpuTable(options) {
  const rows = options.map((o) => {
    const n = o.strategy.gpu_count;
    const tps = o.training ? o.training.tokens_per_s : o.serving?.output_tokens_per_s;
    const c = o.cost;
    const paid = c?.gpus_paid ?? n;
    return h("tr", { "data-rank": o.rank, "data-gpu": o.gpu.slug },
      h("th", { scope: "row" }, `#${o.rank} ${o.gpu.name}`),
      h("td", { class: "num" }, String(n)),
      h("td", { class: "num per-gpu-tps" }, tps == null ? "—" : `${num(tps / n, 0)} tokens/s`),
      h("td", { class: "num per-gpu-price" }, c?.per_hour == null ? "—" : `${num(c.per_hour / paid, 2)} ${c.currency}/h`),
      h("td", { class: "num" }, gib(o.memory.headroom_bytes)));
  });
  return table(t("per_gpu_title"), [t("col_gpu"), t("f_gpu_count"), t("per_gpu_tps"), t("col_price"), t("col_headroom")], rows,
    { class: "per-gpu" });
}

/**
 * Which GPUs each name of the allowed and excluded lists matched: a family name ("A100") keeps
 * matching every variant, and the page says which (GET /v1/gpus/{name}: one GPU, or a 300 with
 * the candidates).
 */
async function allowedMatches(lists, into) {
  const names = lists.flatMap(([list, ns]) => ns.map((name) => [list, name]));
  const found = await Promise.all(names.map(async ([list, name]) => [list, ...await matchesOf(name)]));
  const families = found.filter(([, , gpus]) => gpus.length > 1);
  if (!families.length) return;
  into.append(h("p", null, t("allowed_matches")), h("ul", null, families.map(([list, name, gpus]) =>
    h("li", { "data-name": name, "data-list": list }, `${t(list === "excluded" ? "list_excluded" : "list_allowed")} ${name} → ${gpus.length}: ${gpus.join(", ")}`))));
}

/** [name, the names of the GPUs it matches] (none for an unknown name: the answer says so). */
async function matchesOf(name) {
  try {
    const g = await api(`/v1/gpus/${encodeURIComponent(name)}`);
    return [name, [g.name]];
  } catch (err) {
    if (err instanceof ApiError && err.status === 300) return [name, err.problem.candidates.map((c) => c.name)];
    return [name, []];
  }
}

function answer(r, width, more) {
  const link = `${location.origin}/#/recommend?id=${encodeURIComponent(r.recommendation_id)}`;
  const linkEl = h("a", { href: link, class: "share-link" }, link);
  // feasible: GPUs sized and meeting every constraint; not_ranked: GPUs not sized because a
  // lower bound already put them behind the last option shown (they may fit too)
  const feasible = r.considered?.feasible ?? r.options.length;
  const unsized = r.considered?.not_ranked?.length ?? 0;
  const all = Math.min(feasible + unsized, 50);
  const lists = [["allowed", r.asked?.constraints?.allowed_gpus ?? []], ["excluded", r.asked?.constraints?.excluded_gpus ?? []]];
  const matches = lists.some(([, ns]) => ns.length) ? h("div", { class: "allowed-matches note", "aria-live": "polite" }) : null;
  if (matches) allowedMatches(lists, matches);
  const shown = h("p", { class: "shown-of-feasible", "data-shown": r.options.length, "data-feasible": feasible },
    t("shown_of_feasible", { n: r.options.length, all: feasible }),
    unsized ? ` ${t("not_sized", { n: unsized })}` : "", " ",
    all > r.options.length && r.asked ? h("button", { type: "button", class: "show-all", on: { click: () => more(all) } },
      t("show_all", { all })) : null);
  return h("div", { class: "recommend-result", "data-recommendation-id": r.recommendation_id, tabindex: "-1" },
    h("p", { class: "share" }, `${t("share")}: `, linkEl, " ", copyButton(link, linkEl)),
    r.warnings?.length ? h("ul", { class: "warnings" }, r.warnings.map((w) => h("li", null, w.message))) : null,
    h("h2", null, t("options")), shown, matches,
    r.options.length > 1 ? perGpuTable(r.options) : null,
    r.options.length ? h("div", { class: "options" }, r.options.map((o) => optionCard(o, r.recommendation_id))) : h("p", { class: "nothing-fits" }, t("nothing_fits")),
    r.what_if?.length ? [h("h2", null, t("what_if")), h("ul", { class: "what-if" }, r.what_if.map((w) => h("li", null, w.message)))] : null,
    r.frontier.length ? [h("h2", null, t("frontier")), frontierSection(r, width)] : null,
    r.excluded.length ? [h("h2", null, t("excluded")), excludedSection(r)] : null,
    h("p", { class: "note" }, `${r.recommendation_id} · ${when(r.as_of)} · ${r.considered.candidates} candidates, ${r.considered.timed} timed · `,
      h("a", { href: "#/legend" }, t("legend_title"))));
}

/**
 * The form's fields from the request as asked (`asked`, kept with every stored answer): the
 * workload, constraints, objective and cost assumptions, so a shared link shows exactly the
 * question beside its answer.
 */
export function formOfAsked(asked) {
  const out = { objective: asked.objective ?? "fastest" };
  const put = (prefix, obj) => {
    for (const [k, v] of Object.entries(obj || {})) {
      const name = `${prefix}.${k}`;
      if (v === null || v === undefined) continue;
      if (name === "constraints.inventory") {
        const pool = v[0];
        if (pool) Object.assign(out, { "constraints.inventory.gpu": pool.gpu, "constraints.inventory.gpus_per_node": String(pool.gpus_per_node ?? "") },
          pool.nodes != null ? { "constraints.inventory.nodes": String(pool.nodes) } : {});
      } else if (Array.isArray(v)) out[name] = v.join(", ");
      else if (typeof v === "object") put(name, v);
      else out[name] = String(v);
    }
  };
  put("workload", asked.workload);
  put("constraints", asked.constraints);
  put("cost", asked.cost);
  return out;
}

/**
 * The form's fields from a stored answer's `question` (the workload as understood: the model,
 * the mode, the tokens and the configuration with defaults filled), so a shared link shows
 * the question beside its answer.
 */
export function formOfQuestion(question, objective) {
  const out = { objective };
  // global_batch, gpu_count, sharding ... in `configuration` are one option's, not the question's
  const put = (k, v) => {
    if (QUESTION_FIELDS.has(k) && v !== null && v !== undefined && typeof v !== "object") out[`workload.${k}`] = String(v);
  };
  for (const [k, v] of Object.entries(question?.configuration || {})) put(k, v);
  for (const [k, v] of Object.entries(question || {})) put(k, v);
  const model = question?.model;
  if (model) out["workload.model"] = typeof model === "object" ? model.id : String(model);
  return out;
}

function buildForm(initial, doc) {
  // each field shows the default the API states for it (RecommendRequest in /openapi.json)
  const f = (name, label, opts = {}) => field(name, label,
    { value: initial[name] ?? opts.value, hint: schemaHint(doc, "RecommendRequest", name), ...opts });
  const modes = [["training", t("mode_training")], ["fine-tuning", t("mode_finetuning")], ["inference", t("mode_inference")]];
  const objectives = [["fastest", "fastest"], ["cheapest", "cheapest"], ["cost_per_million_tokens", "cost per million tokens"], ["perf_per_watt", "perf per watt"]];
  return h("form", { class: "recommend-form", novalidate: true },
    h("fieldset", null, h("legend", null, t("legend_job")), h("div", { class: "grid" },
      f("workload.model", t("f_model"), { list: "model-options" }),
      f("workload.mode", t("f_mode"), { kind: "select", options: modes }),
      f("workload.precision", t("f_precision"), { kind: "select", options: ["", "amp_bf16", "bf16", "fp16", "fp8"].map((p) => [p, p || t("default")]) }),
      f("workload.batch_size", t("f_batch"), { kind: "number" }),
      f("workload.seq_len", t("f_seq"), { kind: "number" }),
      f("workload.global_batch", t("f_global_batch"), { kind: "number" }),
      f("workload.tokens", t("f_tokens"), { kind: "number" }),
      f("workload.finetune", t("f_finetune"), { kind: "select", options: [["", t("default")], ["lora", "LoRA"], ["qlora", "QLoRA"], ["full", "full"]] }),
      f("workload.engine", t("f_engine"), { kind: "select", options: [["vllm", "vllm"], ["sglang", "sglang"], ["tensorrt-llm", "tensorrt-llm"], ["hf-transformers", "hf-transformers"]] }),
      f("workload.input_len", t("f_input_len"), { kind: "number" }),
      f("workload.output_len", t("f_output_len"), { kind: "number" }),
      f("workload.requests_per_s", t("f_rps"), { kind: "number", step: "any" }),
      f("workload.ttft_target_ms", t("f_ttft_target"), { kind: "number", step: "any" }),
      f("workload.tpot_target_ms", t("f_tpot_target"), { kind: "number", step: "any" }),
      f("workload.concurrency", t("f_concurrency"), { kind: "number" }),
      f("workload.prefix_cache_hit_rate", t("f_prefix_cache"), { kind: "number", step: "any", min: 0, max: 0.99 }),
      f("workload.memory_fraction", t("f_mem_fraction"), { kind: "number", step: "any", min: 0.01, max: 1 }),
      f("workload.speculative.method", t("f_spec_method"), { kind: "select", options: [["", t("off")], ["eagle", "EAGLE"], ["mtp", "MTP"], ["ngram", "n-gram"]] }),
      f("workload.speculative.draft_tokens", t("f_spec_draft"), { kind: "number", min: 1, max: 16 }),
      f("workload.speculative.acceptance_rate", t("f_spec_accept"), { kind: "number", step: "any", min: 0, max: 1 }),
      f("workload.lora.adapters", t("f_lora_adapters"), { kind: "number", min: 1 }),
      f("workload.lora.rank", t("f_lora_serving_rank"), { kind: "number", min: 1 }),
      f("workload.lora.max_loras", t("f_lora_max"), { kind: "number", min: 1 }),
      f("constraints.allow_disaggregation", t("f_allow_disagg"), { kind: "checkbox", value: initial["constraints.allow_disaggregation"] !== "false" }),
      f("constraints.allow_expert_parallel", t("f_allow_ep"), { kind: "checkbox", value: initial["constraints.allow_expert_parallel"] !== "false" }))),
    h("fieldset", null, h("legend", null, t("legend_constraints")), h("div", { class: "grid" },
      f("objective", t("f_objective"), { kind: "select", options: objectives }),
      f("constraints.budget.per_hour", t("f_budget_hour"), { kind: "number", step: "any" }),
      f("constraints.budget.per_run", t("f_budget_run"), { kind: "number", step: "any" }),
      f("constraints.deadline_hours", t("f_deadline"), { kind: "number", step: "any" }),
      f("constraints.max_power_w_per_gpu", t("f_power_cap"), { kind: "number" }),
      f("constraints.max_gpus", t("f_max_gpus"), { kind: "number" }),
      f("constraints.allowed_gpus", t("f_allowed")),
      f("constraints.excluded_gpus", t("f_excluded")),
      f("constraints.inventory.gpu", t("f_inv_gpu")),
      f("constraints.inventory.gpus_per_node", t("f_inv_per_node"), { kind: "number" }),
      f("constraints.inventory.nodes", t("f_inv_nodes"), { kind: "number" }),
      f("constraints.allow_gradient_checkpointing", t("f_allow_ckpt"), { kind: "checkbox", value: initial["constraints.allow_gradient_checkpointing"] !== "false" }))),
    // buying instead of renting: the API's TCO inputs, empty = its stated defaults (shown as hints)
    h("fieldset", null, h("legend", null, t("legend_buy")), h("div", { class: "grid" },
      f("constraints.budget.purchase", t("f_budget_purchase"), { kind: "number", step: "any" }),
      f("cost.utilisation", t("f_utilisation"), { kind: "number", step: "any", min: 0, max: 1 }),
      f("cost.electricity_usd_per_kwh", t("f_electricity"), { kind: "number", step: "any", min: 0 }),
      f("cost.amortisation_years", t("f_amortisation"), { kind: "number", step: "any", min: 0 }),
      f("cost.pue", t("f_pue"), { kind: "number", step: "any", min: 1 }))),
    h("div", { class: "form-problem" }),
    h("button", { type: "submit" }, t("submit")));
}

export async function render(root, { params, width }) {
  const id = params.get("id");
  const out = h("div", { class: "result", "aria-live": "polite" });
  let initial = DEFAULTS;
  let stored = null;
  if (id) {
    stored = await api(`/v1/recommendations/${encodeURIComponent(id)}`);
    initial = stored.asked ? formOfAsked(stored.asked) : formOfQuestion(stored.question, stored.objective);
  }
  const [models, doc] = await Promise.all([api("/v1/models"), openapiDoc()]);
  const form = buildForm(initial, doc);
  form.append(h("datalist", { id: "model-options" }, (models.items || []).map((m) => h("option", { value: m.id }))));
  const syncMode = () => {
    const mode = form.elements["workload.mode"].value;
    for (const k of TRAINING) form.querySelector(`[data-field="${k}"]`).hidden = mode === "inference";
    for (const k of SERVING) form.querySelector(`[data-field="${k}"]`).hidden = mode !== "inference";
    form.querySelector('[data-field="workload.finetune"]').hidden = mode !== "fine-tuning";
  };
  form.elements["workload.mode"].addEventListener("change", syncMode);
  syncMode();
  const submit = form.querySelector('button[type="submit"]');
  // one question at a time: Submit is disabled (and says so) while the API answers, and the
  // answer is scrolled into view and focused when it arrives
  const ask = async (body) => {
    submit.disabled = true;
    submit.textContent = t("asking");
    form.setAttribute("aria-busy", "true");
    out.replaceChildren(h("p", { class: "loading" }, t("loading")));
    try {
      const r = await api("/v1/recommend", { method: "POST", body });
      setParams("recommend", new URLSearchParams({ id: r.recommendation_id }));
      const shown = answer(r, width, (limit) => ask({ ...r.asked, limit }));
      out.replaceChildren(shown, apiExample("POST", "/v1/recommend", body));
      shown.scrollIntoView({ block: "start" });
      shown.focus({ preventScroll: true });
    } catch (err) {
      out.replaceChildren();
      if (err instanceof ApiError) showProblem(form, err);
      else out.append(problemBlock(err));
    } finally {
      submit.disabled = false;
      submit.textContent = t("submit");
      form.removeAttribute("aria-busy");
    }
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    await ask(bodyOf(form, stored?.asked));
  });
  if (stored) {
    const more = (limit) => ask({ ...stored.asked, limit });
    out.replaceChildren(answer(stored, width, more), apiExample("GET", `/v1/recommendations/${encodeURIComponent(id)}`));
  }
  add(root, h("h1", null, t("recommend_title")), form, out);
}
