// GPU spec view: the catalog list from GET /v1/gpus, one GPU's figures with their sources from
// GET /v1/gpus/{slug}.
import { api, listAll } from "../api.js";
import { add, h, safeLink, table } from "../dom.js";
import { gib, num } from "../fmt.js";
import { t } from "../i18n.js";
import { setParams } from "../nav.js";
import { apiExample, field, provenance } from "../ui.js";
import { DEFAULT_GPUS } from "./compare.js";
import { DEFAULTS } from "./estimate.js";

/** The group a catalog figure's source is listed under (DESIGN: sources per figure group). */
const GROUP_OF = {
  memory_bytes: "memory", bandwidth_gb_per_s: "memory", usable_memory_bytes: "usable_memory", tdp_w: "power",
  sm_count: "compute", cuda_cores: "compute", tensor_cores: "compute", boost_clock_mhz: "compute",
};

/** datasheet | derived | measured | the source's own kind, for one figure of a GPU document. */
export function figureProvenance(gpu, section, key) {
  const group = GROUP_OF[key] || section;
  const sources = (gpu.sources || []).filter((src) => src.group === group);
  const derived = sources.find((src) => src.source_kind === "derived" && (src.figures || []).includes(key));
  const src = derived || sources.find((x) => !x.figures || x.figures.includes(key)) || sources[0];
  if (!src) return { kind: null, src: null };
  const kind = src.source_kind === "derived" ? "derived" : src.source_kind === "measured" ? "measured"
    : src.source_kind === "pci-ids" ? "pci-ids" : "datasheet";
  return { kind, src };
}

const COLUMNS = [
  ["col_gpu", (g) => h("a", { href: `#/gpus/${encodeURIComponent(g.slug)}` }, g.name)],
  ["col_arch", (g) => g.architecture ?? "—"],
  ["col_memory", (g) => g.memory?.marketed ?? "—"],
  ["col_usable", (g) => gib(g.memory?.usable_memory_bytes)],
  ["col_bw", (g) => (g.memory?.bandwidth_gb_per_s == null ? "—" : `${num(g.memory.bandwidth_gb_per_s, 0)} GB/s`)],
  ["col_bf16", (g) => (g.peaks?.bf16_tflops == null ? "—" : `${num(g.peaks.bf16_tflops)} TFLOP/s`)],
  ["col_fp8", (g) => (g.peaks?.fp8_tflops == null ? "—" : `${num(g.peaks.fp8_tflops)} TFLOP/s`)],
  ["col_tdp", (g) => (g.power?.tdp_w == null ? "—" : `${num(g.power.tdp_w, 0)} W`)],
  ["col_form", (g) => g.form_factor],
];

/** The API's list filters and sort the view offers; their values live in the URL. */
const QUERY = ["vendor", "min_usable_memory_gib", "supports", "form_factor", "sort"];
const SORTS = ["slug", "-usable_memory_bytes", "-bandwidth_gb_per_s", "-bf16_tflops", "-fp8_tflops", "tdp_w", "-launch_year"];

export function listPath(params) {
  const q = new URLSearchParams({ limit: "100" });
  for (const k of QUERY) if (params.get(k)) q.set(k, params.get(k));
  return `/v1/gpus?${q}`;
}

async function renderList(root, params) {
  const path = listPath(params);
  const gpus = await listAll(path);
  const text = h("input", { id: "gpu-filter", name: "q", type: "search", autocomplete: "off", value: params.get("q") ?? "" });
  const filters = h("form", { class: "gpu-filters grid", role: "search" },
    field("vendor", t("f_vendor"), { kind: "select", value: params.get("vendor") ?? "",
      options: [["", t("any")], ["nvidia", "NVIDIA"], ["amd", "AMD"], ["intel", "Intel"]] }),
    field("min_usable_memory_gib", t("f_min_memory"), { kind: "number", value: params.get("min_usable_memory_gib") ?? "", min: 0, step: "any" }),
    field("supports", t("f_supports_fp8"), { kind: "checkbox", value: params.get("supports") === "fp8" }),
    field("form_factor", t("f_form_factor"), { kind: "select", value: params.get("form_factor") ?? "",
      options: [["", t("any")], ["pcie", "PCIe"], ["sxm", "SXM"], ["oam", "OAM"]] }),
    field("sort", t("f_sort"), { kind: "select", value: params.get("sort") ?? "slug", options: SORTS.map((k) => [k, t(`sort_${k.replace("-", "")}`)]) }),
    h("div", { class: "field" }, h("label", { for: "gpu-filter" }, t("gpus_filter")), text));
  const rows = gpus.map((g) => {
    const tr = h("tr", { "data-slug": g.slug }, COLUMNS.map(([, f], i) => (i === 0 ? h("th", { scope: "row" }, f(g)) : h("td", null, f(g)))));
    tr.dataset.text = `${g.name} ${g.slug} ${g.architecture ?? ""}`.toLowerCase();
    return tr;
  });
  const applyText = () => {
    const q = text.value.trim().toLowerCase();
    for (const tr of rows) tr.hidden = q !== "" && !tr.dataset.text.includes(q);
  };
  // every control is in the URL: a changed API filter or sort asks the API again (the hash
  // change re-renders); the text filter narrows the rows shown and is kept in the URL too
  const urlOf = () => {
    const next = new URLSearchParams();
    for (const el of filters.elements) {
      if (!el.name) continue;
      const v = el.type === "checkbox" ? (el.checked ? "fp8" : "") : el.value.trim();
      if (v && !(el.name === "sort" && v === "slug")) next.set(el.name, v);
    }
    return next;
  };
  filters.addEventListener("change", (ev) => {
    if (ev.target === text) return;
    location.hash = `#/gpus?${urlOf()}`;
  });
  filters.addEventListener("submit", (ev) => ev.preventDefault());
  text.addEventListener("input", () => { applyText(); setParams("gpus", urlOf()); });
  applyText();
  add(root,
    h("h1", null, t("gpus_title")),
    filters,
    h("p", { class: "note gpu-count" }, t("gpus_count", { n: gpus.length })),
    table(t("gpus_title"), COLUMNS.map(([k]) => t(k)), rows, { class: "gpu-list" }),
    apiExample("GET", path));
}

/** Each figure's words (i18n.js has them in English and Chinese); the sections in reading order. */
const SECTIONS = [
  ["memory", "sec_memory", ["marketed", "type", "memory_bytes", "usable_memory_bytes", "bandwidth_gb_per_s", "bus_width_bits", "ecc"]],
  ["compute", "sec_compute", ["sm_count", "cuda_cores", "tensor_cores", "boost_clock_mhz"]],
  ["peaks", "sec_peaks", ["fp64_tflops", "fp64_tensor_tflops", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops",
    "fp8_tflops", "fp4_tflops", "int8_tops", "int4_tops"]],
  ["supports", "sec_supports", []],
  ["power", "sec_power", ["tdp_w", "configurable_min_w"]],
  ["identity", "sec_identity", ["compute_capability", "pci_vendor_id", "pci_device_ids"]],
  ["interconnect", "sec_interconnect", ["nvlink.topology", "nvlink.domain_size", "nvlink.per_direction_gb_per_s",
    "nvlink.version", "p2p_over_pcie", "pcie.gen", "pcie.lanes", "note"]],
];

export const FIGURE_LABELS = {
  marketed: "g_marketed", type: "g_memory_type", memory_bytes: "g_memory_bytes", usable_memory_bytes: "g_usable_memory",
  bandwidth_gb_per_s: "g_bandwidth", bus_width_bits: "g_bus_width", ecc: "g_ecc", sm_count: "g_sm_count",
  cuda_cores: "g_cuda_cores", tensor_cores: "g_tensor_cores", boost_clock_mhz: "g_boost_clock", fp64_tflops: "g_fp64",
  fp64_tensor_tflops: "g_fp64_tensor", fp32_tflops: "g_fp32", tf32_tflops: "g_tf32", bf16_tflops: "g_bf16",
  fp16_tflops: "g_fp16", fp8_tflops: "g_fp8", fp4_tflops: "g_fp4", int8_tops: "g_int8", int4_tops: "g_int4", tdp_w: "g_tdp",
  configurable_min_w: "g_min_power", compute_capability: "g_compute_capability", pci_vendor_id: "g_pci_vendor",
  pci_device_ids: "g_pci_devices", "nvlink.topology": "g_nvlink_topology", "nvlink.domain_size": "g_nvlink_domain",
  "nvlink.per_direction_gb_per_s": "g_nvlink_bw", "nvlink.version": "g_nvlink_version", p2p_over_pcie: "g_p2p_pcie",
  "pcie.gen": "g_pcie_gen", "pcie.lanes": "g_pcie_lanes", note: "g_note",
};

/** A figure's words: its label, else (a figure the catalog gains later) its key in words. */
function labelOf(section, key) {
  if (section === "supports") return key.toUpperCase();
  return FIGURE_LABELS[key] ? t(FIGURE_LABELS[key]) : key.replace(/[._]/g, " ");
}

function lookup(obj, path) {
  return path.split(".").reduce((cur, k) => (cur && typeof cur === "object" ? cur[k] : undefined), obj);
}

function unit(k, v) {
  if (Array.isArray(v)) return v.join(", ");
  if (v === "yes" || v === "no") return t(v);
  if (typeof v !== "number") return String(v);
  if (k.endsWith("_bytes")) return `${gib(v)} (${num(v, 0)} B)`;
  if (k.endsWith("_gb_per_s")) return `${num(v, 1)} GB/s`;
  if (k.endsWith("_tflops")) return `${num(v, 1)} TFLOP/s`;
  if (k.endsWith("_tops")) return `${num(v, 1)} TOPS`;
  if (k.endsWith("_w")) return `${num(v, 0)} W`;
  if (k.endsWith("_mhz")) return `${num(v, 0)} MHz`;
  if (k.endsWith("_bits")) return `${num(v, 0)} bit`;
  return num(v, 2);
}

/** One section's figures as a table: words, value with unit, where it comes from. */
function sectionTable(g, [section, titleKey, keys]) {
  const obj = g[section] || {};
  const listed = keys.length ? keys : Object.keys(obj);
  const extra = Object.keys(obj).filter((k) => typeof obj[k] !== "object" && !listed.includes(k));
  const rows = [...listed, ...extra].map((k) => [k, lookup(obj, k)]).filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => {
    const leaf = k.split(".").pop();
    const { kind, src } = figureProvenance(g, section, leaf);
    return h("tr", { "data-figure": `${section}.${k}` }, h("th", { scope: "row" }, labelOf(section, k)),
      h("td", { class: "num" }, unit(leaf, v)), h("td", null, provenance(kind), " ", src ? src.title : ""));
  });
  if (!rows.length) return null;
  return h("section", { class: "spec-section", "data-section": section }, h("h2", null, t(titleKey)),
    table(t(titleKey), [t("col_field"), t("col_value"), t("provenance")], rows, { class: "spec" }));
}

/** Reference prices per GPU-hour (GET /v1/gpus/{slug}/prices), cheapest first and marked. */
function pricesTable(items) {
  if (!items.length) return h("p", { class: "no-prices" }, t("no_prices"));
  const sorted = [...items].sort((a, b) => a.currency.localeCompare(b.currency) || Number(a.per_gpu_hour) - Number(b.per_gpu_hour));
  const cheapest = {};  // per currency: prices in different currencies are not compared
  for (const p of sorted) cheapest[p.currency] ??= Number(p.per_gpu_hour);
  const rows = sorted.map((p) => h("tr", { class: p.stale ? "stale" : null },
    h("th", { scope: "row" }, p.provider), h("td", null, p.region), h("td", null, `${p.instance_type} (${p.gpus_per_instance} GPU)`),
    h("td", { class: ["num", Number(p.per_gpu_hour) === cheapest[p.currency] ? "best" : null] }, `${num(Number(p.per_gpu_hour), 2)} ${p.currency}`),
    h("td", null, p.pricing_model), h("td", null, `${p.effective_date}${p.stale ? ` (${t("stale")})` : ""}`),
    h("td", { class: "price-source" }, p.source ?? "")));
  return table(t("prices"), [t("col_provider"), t("col_region"), t("col_instance"), t("col_price"), t("col_model"), t("col_date"),
    t("col_source")], rows, { class: "gpu-prices" });
}

/** Links to ask about this GPU: compared with the default peers, and an estimate on it. */
function actions(g) {
  const peers = DEFAULT_GPUS.split(",").filter((s) => s !== g.slug).slice(0, 2);
  const estimate = new URLSearchParams({ ...DEFAULTS, gpu: g.slug });
  return h("ul", { class: "gpu-actions" },
    h("li", null, h("a", { href: `#/compare?gpus=${[g.slug, ...peers].join(",")}`, "data-action": "compare" }, t("compare_with"))),
    h("li", null, h("a", { href: `#/estimate?${estimate}`, "data-action": "estimate" }, t("estimate_on"))));
}

async function renderOne(root, slug) {
  const path = `/v1/gpus/${encodeURIComponent(slug)}`;
  const g = await api(path);
  const prices = await api(g.links?.prices ?? `${path}/prices`);
  const aliases = [...new Set((g.aliases || []).map((a) => a.name))].filter((n) => n !== g.name);
  add(root,
    h("p", null, h("a", { href: "#/gpus" }, `← ${t("back_to_list")}`)),
    h("h1", null, g.name),
    h("p", { class: "lede" }, [g.architecture, g.chip, g.form_factor, g.market, g.launch_year].filter(Boolean).join(" · ")),
    aliases.length ? h("p", { class: "aliases" }, `${t("also_known_as")}: ${aliases.join(", ")}`) : null,
    actions(g),
    SECTIONS.map((sec) => sectionTable(g, sec)),
    h("h2", null, t("prices")), pricesTable(prices.items || []),
    h("h2", null, t("col_sources")),
    h("ol", { class: "sources" }, (g.sources || []).map((src) =>
      h("li", null, provenance(src.source_kind), " ", h("strong", null, src.group), ": ", safeLink(src.url, src.title),
        src.derived_from ? ` (derived from ${src.derived_from})` : "", src.note ? h("p", { class: "note" }, src.note) : null))),
    g.notes ? h("p", { class: "note" }, g.notes) : null,
    apiExample("GET", path));
}

export async function render(root, { rest, params }) {
  if (rest.length) await renderOne(root, rest[0]);
  else await renderList(root, params);
}
