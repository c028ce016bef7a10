// Estimate view: one configuration -> POST /v1/estimate: the memory breakdown as a stacked bar
// against the GPU's usable memory, time (or serving latencies) with band and provenance.
import { api, ApiError, listAll } from "../api.js";
import { add, h } from "../dom.js";
import { band, gib, GIB, ms, num, seconds } from "../fmt.js";
import { stackedBar } from "../charts.js";
import { t } from "../i18n.js";
import { setParams } from "../nav.js";
import { apiExample, clearErrors, field, problemBlock, provenance, showProblem } from "../ui.js";

const PRECISIONS = ["", "amp_bf16", "amp_fp16", "bf16", "fp16", "fp32", "tf32", "fp8", "int8", "int4"];
const NUMBER_FIELDS = ["gpu_count", "batch_size", "seq_len", "input_len", "output_len", "tokens"];
const TEXT_FIELDS = ["model", "gpu", "mode", "precision", "finetune", "engine"];
const TRAINING_ONLY = ["seq_len", "gradient_checkpointing", "finetune", "tokens"];
const INFERENCE_ONLY = ["engine", "input_len", "output_len"];

export const DEFAULTS = { model: "llama3-8b", gpu: "nvidia-l40", gpu_count: "1", mode: "fine-tuning", batch_size: "1",
  seq_len: "2048", gradient_checkpointing: "true" };

/** The request body from the form: empty fields are left out (the API's defaults apply). */
export function bodyOf(form) {
  const fd = new FormData(form);
  const body = {};
  for (const k of TEXT_FIELDS) {
    const v = String(fd.get(k) ?? "").trim();
    if (v) body[k] = v;
  }
  const mode = body.mode || "training";
  for (const k of NUMBER_FIELDS) {
    const v = String(fd.get(k) ?? "").trim();
    if (v === "") continue;
    if ((mode === "inference" && TRAINING_ONLY.includes(k)) || (mode !== "inference" && INFERENCE_ONLY.includes(k))) continue;
    body[k] = Number.isFinite(Number(v)) ? Number(v) : v;  // a non-number goes as typed: the API names it
  }
  if (mode !== "inference") body.gradient_checkpointing = fd.get("gradient_checkpointing") === "on";
  else { delete body.finetune; }
  if (mode === "training") delete body.finetune;
  if (mode !== "inference") delete body.engine;
  return body;
}

function toParams(body) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(body)) p.set(k, String(v));
  return p;
}

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

export async function render(root, { params, width }) {
  const initial = [...params.keys()].length ? Object.fromEntries(params) : DEFAULTS;
  const [models, gpus] = await Promise.all([api("/v1/models"), listAll("/v1/gpus?limit=100")]);
  const modelList = h("datalist", { id: "model-options" }, (models.items || []).map((m) => h("option", { value: m.id })));
  const gpuList = h("datalist", { id: "gpu-options" }, gpus.map((g) => h("option", { value: g.slug }, g.name)));
  const modes = [["training", t("mode_training")], ["fine-tuning", t("mode_finetuning")], ["inference", t("mode_inference")]];
  const form = h("form", { class: "estimate-form", novalidate: true },
    h("div", { class: "grid" },
      field("model", t("f_model"), { value: initial.model, list: "model-options" }),
      field("gpu", t("f_gpu"), { value: initial.gpu, list: "gpu-options" }),
      field("gpu_count", t("f_gpu_count"), { kind: "number", value: initial.gpu_count ?? "1", min: 1 }),
      field("mode", t("f_mode"), { kind: "select", options: modes, value: initial.mode ?? "training" }),
      field("precision", t("f_precision"), { kind: "select", options: PRECISIONS.map((p) => [p, p || t("default")]), value: initial.precision ?? "" }),
      field("batch_size", t("f_batch"), { kind: "number", value: initial.batch_size ?? "1", min: 1 }),
      field("seq_len", t("f_seq"), { kind: "number", value: initial.seq_len ?? "" }),
      field("finetune", t("f_finetune"), { kind: "select", options: [["", t("default")], ["lora", "LoRA"], ["qlora", "QLoRA"], ["full", "full"]], value: initial.finetune ?? "" }),
      field("tokens", t("f_tokens"), { kind: "number", value: initial.tokens ?? "" }),
      field("engine", t("f_engine"), { kind: "select", options: [["hf-transformers", "hf-transformers"], ["vllm", "vllm"], ["tensorrt-llm", "tensorrt-llm"]], value: initial.engine ?? "hf-transformers" }),
      field("input_len", t("f_input_len"), { kind: "number", value: initial.input_len ?? "" }),
      field("output_len", t("f_output_len"), { kind: "number", value: initial.output_len ?? "" }),
      field("gradient_checkpointing", t("f_ckpt"), { kind: "checkbox", value: String(initial.gradient_checkpointing) === "true" })),
    h("div", { class: "form-problem" }),
    h("button", { type: "submit" }, t("submit")),
    modelList, gpuList);
  const out = h("div", { class: "result", "aria-live": "polite" });
  const syncMode = () => {
    const mode = form.elements.mode.value;
    for (const k of TRAINING_ONLY) form.querySelector(`[data-field="${k}"]`).hidden = mode === "inference";
    for (const k of INFERENCE_ONLY) form.querySelector(`[data-field="${k}"]`).hidden = mode !== "inference";
    form.querySelector('[data-field="finetune"]').hidden = mode !== "fine-tuning";
  };
  form.elements.mode.addEventListener("change", syncMode);
  syncMode();
  async function submit() {
    const body = bodyOf(form);
    setParams("estimate", toParams(body));
    clearErrors(form);
    out.replaceChildren(h("p", { class: "loading" }, t("loading")));
    try {
      const r = await api("/v1/estimate", { method: "POST", body });
      out.replaceChildren(estimateResult(r, width), apiExample("POST", "/v1/estimate", body));
    } catch (err) {
      out.replaceChildren();
      if (err instanceof ApiError) showProblem(form, err);
      else out.append(problemBlock(err));
    }
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); submit(); });
  add(root,h("h1", null, t("estimate_title")), form, out);
  if ([...params.keys()].length) await submit();
}
