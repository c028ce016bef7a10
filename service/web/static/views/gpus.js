// GPU spec view: the catalog list from GET /v1/gpus, one GPU's figures with their sources from
// GET /v1/gpus/{slug}.
import { api, listAll } from "../api.js";
import { add, h, safeLink, table } from "../dom.js";
import { gib, num } from "../fmt.js";
import { t } from "../i18n.js";
import { setParams } from "../nav.js";
import { apiExample, field, provenance } from "../ui.js";

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

function figureRows(gpu, section, obj, unitOf) {
  return Object.entries(obj || {}).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => {
    const { kind, src } = figureProvenance(gpu, section, k);
    return h("tr", null, h("th", { scope: "row" }, `${section}.${k}`), h("td", { class: "num" }, unitOf(k, v)),
      h("td", null, provenance(kind), " ", src ? src.title : ""));
  });
}

function unit(k, v) {
  if (typeof v !== "number") return String(v);
  if (k.endsWith("_bytes")) return `${gib(v)} (${num(v, 0)} B)`;
  if (k.endsWith("_gb_per_s")) return `${num(v, 1)} GB/s`;
  if (k.endsWith("_tflops")) return `${num(v, 1)} TFLOP/s`;
  if (k.endsWith("_tops")) return `${num(v, 1)} TOPS`;
  if (k.endsWith("_w")) return `${num(v, 0)} W`;
  if (k.endsWith("_mhz")) return `${num(v, 0)} MHz`;
  return num(v, 2);
}

async function renderOne(root, slug) {
  const path = `/v1/gpus/${encodeURIComponent(slug)}`;
  const g = await api(path);
  const rows = [
    ...figureRows(g, "memory", g.memory, unit),
    ...figureRows(g, "compute", g.compute, unit),
    ...figureRows(g, "peaks", g.peaks, unit),
    ...figureRows(g, "supports", g.supports, unit),
    ...figureRows(g, "power", g.power, unit),
    ...figureRows(g, "identity", g.identity, unit),
    h("tr", null, h("th", { scope: "row" }, "identity.pci_device_ids"), h("td", null, (g.identity?.pci_device_ids || []).join(", ")), h("td")),
    h("tr", null, h("th", { scope: "row" }, "interconnect"), h("td", null,
      `NVLink ${g.interconnect?.nvlink?.topology ?? "—"}; PCIe Gen${g.interconnect?.pcie?.gen ?? "?"} x${g.interconnect?.pcie?.lanes ?? "?"}`),
    h("td", null, g.interconnect?.note ?? "")),
  ];
  add(root,
    h("p", null, h("a", { href: "#/gpus" }, `← ${t("back_to_list")}`)),
    h("h1", null, g.name),
    h("p", { class: "lede" }, [g.architecture, g.chip, g.form_factor, g.market, g.launch_year].filter(Boolean).join(" · ")),
    table(t("spec_detail"), [t("col_field"), t("col_value"), t("provenance")], rows, { class: "spec" }),
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
