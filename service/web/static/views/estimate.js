// Estimate view: one configuration -> POST /v1/estimate: the memory breakdown as a stacked bar
// against the GPU's usable memory, time (or serving latencies) with band and provenance.
import { api, ApiError, listAll } from "../api.js";
import { add, h } from "../dom.js";
import { band, gib, GIB, ms, num, seconds } from "../fmt.js";
import { stackedBar } from "../charts.js";
import { t } from "../i18n.js";
import { setParams } from "../nav.js";
import { apiExample, candidatesBlock, clearErrors, problemBlock, provenance, showProblem } from "../ui.js";
import { bodyOf, fieldSpecs, formGroups, requestSchema, syncMode, toParams } from "./estimate_form.js";

export const DEFAULTS = { model: "llama3-8b", gpu: "nvidia-l40", gpu_count: "1", mode: "fine-tuning", batch_size: "1",
  seq_len: "2048", gradient_checkpointing: "true" };

function memorySection(r, width) {
  const m = r.memory;
  // Drawn in GiB (round ticks); the components are bytes at the peak phase, and what the
  // device needs beyond them is the allocator's slack and the CUDA context.
  const segs = Object.entries(m.components).filter(([, v]) => v > 0).map(([k, v]) => ({ label: k, value: v / GIB }));
  const rest = m.device_memory_needed_bytes / GIB - segs.reduce((a, b) => a + b.value, 0);
  if (rest > 0.001) segs.push({ label: "allocator slack + CUDA context", value: rest });
  const inGib = { low: m.device_memory_band.low / GIB, mid: m.device_memory_band.mid / GIB, high: m.device_memory_band.high / GIB };
  const fits = m.fits;
  return h("section", { class: "result-block memory", "aria-labelledby": "mem-title" },
    h("h2", { id: "mem-title" }, t("memory_title")),
    h("p", { class: fits ? "verdict ok" : "verdict bad", "data-fits": String(fits) },
      h("strong", null, fits ? t("fits") : t("does_not_fit")),
      ` — ${t("needed")} ${gib(m.device_memory_needed_bytes)} (${t("band_upper")} ${gib(m.device_memory_band.high)}) / `
      + `${t("usable_memory")} ${gib(m.usable_memory_bytes)}; `
      + (m.headroom_bytes >= 0 ? `${t("headroom")} ${gib(m.headroom_bytes)}` : `${t("short_by")} ${gib(-m.headroom_bytes)}`),
      " ", provenance(m.provenance)),
    stackedBar(segs, { capacity: m.usable_memory_bytes / GIB, band: inGib, width, unit: (v) => `${num(v)} GiB`,
      title: `${r.gpu.name}: ${t("memory_title")} (${m.peak_phase})`, capacityLabel: `${t("usable_memory")} ${gib(m.usable_memory_bytes)}` }),
    m.assumptions?.length ? h("ul", { class: "notes" }, m.assumptions.map((a) => h("li", null, a))) : null);
}

function dl(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(Boolean).flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
}

function timeSection(tm) {
  return h("section", { class: "result-block time", "aria-labelledby": "time-title" },
    h("h2", { id: "time-title" }, t("time_title")),
    dl([
      [t("step_time"), `${seconds(tm.step_time_s)} (${t("band")} ${band(tm.step_time_band, seconds)})`],
      [t("throughput"), `${num(tm.tokens_per_s, 0)} tokens/s (${num(tm.tokens_per_s_per_gpu, 0)} / GPU), MFU ${num(tm.mfu * 100, 0)}%`],
      tm.time_to_train_s ? [t("time_to_train"), `${seconds(tm.time_to_train_s)} (${t("band")} ${band(tm.time_to_train_band, seconds)})`] : null,
      [t("provenance"), h("span", null, provenance(tm.provenance), tm.source_gpus?.length ? ` ${t("source_gpus")}: ${tm.source_gpus.join(", ")}` : "")],
      tm.accuracy ? [t("accuracy"), tm.accuracy.statement] : null,
    ]),
    tm.notes?.length || tm.sources?.length ? h("ul", { class: "notes" }, [...tm.notes, ...tm.sources].map((n) => h("li", null, n))) : null);
}

function servingSection(sv) {
  return h("section", { class: "result-block serving", "aria-labelledby": "serving-title" },
    h("h2", { id: "serving-title" }, t("serving_title")),
    dl([
      [t("ttft"), `${ms(sv.ttft_ms)} (${t("band")} ${band(sv.ttft_band_ms, ms)})`],
      [t("tpot"), `${ms(sv.tpot_ms)} (${t("band")} ${band(sv.tpot_band_ms, ms)})`],
      [t("output_tps"), num(sv.output_tokens_per_s, 0)],
      [t("f_engine"), `${sv.engine}, TP${sv.tensor_parallel} × ${sv.replicas}`],
      [t("provenance"), h("span", null, provenance(sv.provenance), sv.source_gpus?.length ? ` ${t("source_gpus")}: ${sv.source_gpus.join(", ")}` : "")],
      sv.accuracy ? [t("accuracy"), sv.accuracy.statement] : null,
    ]),
    sv.notes?.length ? h("ul", { class: "notes" }, sv.notes.map((n) => h("li", null, n))) : null);
}

/** The answer of POST /v1/estimate as sections. */
export function estimateResult(r, width) {
  return h("div", { class: "estimate-result" },
    h("p", { class: "lede" }, `${r.model.description ?? r.model.id} · ${r.gpu.name} · ${r.mode}`),
    memorySection(r, width),
    r.time ? timeSection(r.time) : null,
    r.serving ? servingSection(r.serving) : null,
    r.solve ? h("p", { class: "solve" }, `${r.solve.target}: ${r.solve.value} — ${r.solve.detail}`) : null,
    r.warnings?.length ? h("section", { class: "result-block" }, h("h2", null, t("warnings")),
      h("ul", { class: "warnings" }, r.warnings.map((w) => h("li", { "data-code": w.code }, w.message)))) : null);
}

/**
 * The API assumed a variant for a family name (warning assumed_variant): GET /v1/gpus/{name}
 * answers 300 with the candidates, offered as a choice that asks again with the picked one.
 */
async function variantChoice(form, typed, submit) {
  try {
    await api(`/v1/gpus/${encodeURIComponent(typed)}`);
    return null;  // the name is one GPU after all
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 300 && err.problem.candidates?.length)) return null;
    return candidatesBlock(err.problem, (slug) => {
      form.elements.gpu.value = slug;
      submit();
    });
  }
}

export async function render(root, { params, width }) {
  const initial = [...params.keys()].length ? Object.fromEntries(params) : DEFAULTS;
  const [models, gpus, schema] = await Promise.all([api("/v1/models"), listAll("/v1/gpus?limit=100"), requestSchema()]);
  const specs = fieldSpecs(schema);
  const modelList = h("datalist", { id: "model-options" }, (models.items || []).map((m) => h("option", { value: m.id })));
  const gpuList = h("datalist", { id: "gpu-options" }, gpus.map((g) => h("option", { value: g.slug }, g.name)));
  const submitButton = h("button", { type: "submit" }, t("submit"));
  const form = h("form", { class: "estimate-form", novalidate: true },
    formGroups(specs, initial),
    h("div", { class: "form-problem" }),
    submitButton,
    modelList, gpuList);
  const out = h("div", { class: "result", "aria-live": "polite" });
  form.elements.mode.addEventListener("change", () => syncMode(form));
  syncMode(form);
  async function submit() {
    const body = bodyOf(form, specs);
    setParams("estimate", toParams(body));
    clearErrors(form);
    submitButton.disabled = true;
    out.replaceChildren(h("p", { class: "loading" }, t("loading")));
    try {
      const r = await api("/v1/estimate", { method: "POST", body });
      const assumed = r.warnings?.some((w) => w.code === "assumed_variant");
      const choice = assumed ? await variantChoice(form, body.gpu, submit) : null;
      out.replaceChildren(...[choice, estimateResult(r, width), apiExample("POST", "/v1/estimate", body)].filter(Boolean));
    } catch (err) {
      out.replaceChildren();
      if (err instanceof ApiError) showProblem(form, err);
      else out.append(problemBlock(err));
    } finally {
      submitButton.disabled = false;
    }
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); submit(); });
  add(root, h("h1", null, t("estimate_title")), form, out);
  if ([...params.keys()].length) await submit();
}
