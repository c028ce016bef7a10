// The Estimate form, built from the API's own request schema (EstimateRequest in /openapi.json):
// every field POST /v1/estimate takes, grouped (job, parallelism, serving load, advanced), each
// with the default the API states. A field the API gains later appears under "advanced" by itself.
import { api } from "../api.js";
import { h } from "../dom.js";
import { t } from "../i18n.js";
import { field } from "../ui.js";

/** Which group each field is in; what the schema has beyond these is "advanced". */
export const GROUPS = [
  ["group_job", ["model", "params_billion", "gpu", "gpu_count", "mode", "precision", "quant_method", "batch_size", "seq_len",
    "finetune", "lora_rank", "gradient_checkpointing", "tokens"]],
  ["group_parallelism", ["sharding", "tensor_parallel", "pipeline_parallel", "global_batch", "gpus_per_node",
    "network_gbps_per_node", "rdma", "solve_for"]],
  ["group_serving", ["engine", "input_len", "output_len", "requests_per_s", "concurrency", "ttft_target_ms", "tpot_target_ms",
    "kv_cache_dtype", "prefix_cache_hit_rate", "memory_fraction", "input_len_cv", "output_len_cv"]],
  ["group_advanced", []],
];

/** Fields that mean nothing to the other kind of job: hidden (and not sent) there. */
const TRAINING_ONLY = new Set(["seq_len", "gradient_checkpointing", "finetune", "lora_rank", "lora_targets", "tokens",
  "sharding", "pipeline_parallel", "global_batch", "gpus_per_node", "network_gbps_per_node", "rdma", "optimizer",
  "optimizer_impl", "loop", "mixed_precision", "stack"]);
const INFERENCE_ONLY = new Set(["engine", "engine_version", "input_len", "output_len", "requests_per_s", "concurrency",
  "ttft_target_ms", "tpot_target_ms", "kv_cache_dtype", "prefix_cache_hit_rate", "memory_fraction", "input_len_cv",
  "output_len_cv",
  "speculative.method", "speculative.draft_tokens", "speculative.acceptance_rate", "lora.adapters", "lora.rank",
  "lora.max_loras", "disaggregated.prefill_gpus", "disaggregated.decode_gpus", "expert_parallel", "price_per_gpu_hour"]);
const FINETUNE_ONLY = new Set(["finetune", "lora_rank", "lora_targets"]);

/** The label of each field (English and Chinese in i18n.js; test_estimate_form checks both). */
export const LABELS = {
  model: "f_model", params_billion: "f_params_billion", hf_config: "f_hf_config", gpu: "f_gpu", gpu_count: "f_gpu_count",
  mode: "f_mode", precision: "f_precision", quant_method: "f_quant", batch_size: "f_batch", seq_len: "f_seq",
  finetune: "f_finetune", lora_rank: "f_lora_rank", lora_targets: "f_lora_targets", gradient_checkpointing: "f_ckpt",
  tokens: "f_tokens", sharding: "f_sharding", tensor_parallel: "f_tp", pipeline_parallel: "f_pp",
  global_batch: "f_global_batch", gpus_per_node: "f_gpus_per_node", network_gbps_per_node: "f_network", rdma: "f_rdma",
  solve_for: "f_solve_for", engine: "f_engine", engine_version: "f_engine_version", input_len: "f_input_len",
  output_len: "f_output_len", requests_per_s: "f_rps", concurrency: "f_concurrency", ttft_target_ms: "f_ttft_target",
  tpot_target_ms: "f_tpot_target", kv_cache_dtype: "f_kv_dtype", prefix_cache_hit_rate: "f_prefix_cache",
  memory_fraction: "f_mem_fraction",
  input_len_cv: "f_input_cv", output_len_cv: "f_output_cv", attention: "f_attention", optimizer: "f_optimizer",
  optimizer_impl: "f_optimizer_impl", loop: "f_loop", mixed_precision: "f_mixed_precision", stack: "f_stack",
  "speculative.method": "f_spec_method", "speculative.draft_tokens": "f_spec_draft",
  "speculative.acceptance_rate": "f_spec_accept", "lora.adapters": "f_lora_adapters", "lora.rank": "f_lora_serving_rank",
  "lora.max_loras": "f_lora_max", "disaggregated.prefill_gpus": "f_disagg_prefill",
  "disaggregated.decode_gpus": "f_disagg_decode", expert_parallel: "f_expert_parallel",
  price_per_gpu_hour: "f_price_per_gpu_hour",
};

/** Precision is a free string to the API; these are the values its description names. */
const PRECISIONS = ["amp_bf16", "amp_fp16", "bf16", "fp16", "fp32", "tf32", "fp8", "int8", "int4"];

let docPromise = null;

/** The served OpenAPI document (fetched once per page load). */
export function openapiDoc() {
  docPromise ||= api("/openapi.json");
  return docPromise;
}

/** EstimateRequest from the served OpenAPI document. */
export async function requestSchema() {
  const doc = await openapiDoc();
  return { root: doc.components.schemas.EstimateRequest, doc };
}

/**
 * A field's hint from a request schema: "API default: X", or its description where the default
 * depends on the rest (null). path: "workload.input_len", "constraints.budget.per_hour" ...
 */
export function schemaHint(doc, schemaName, path) {
  let node = doc.components.schemas[schemaName];
  let prop = null;
  for (const part of path.split(".")) {
    prop = node?.properties?.[part];
    if (!prop) return undefined;
    node = deref(doc, (prop.anyOf || []).find((b) => b.$ref || b.type === "array") || prop);
    if (node?.type === "array") node = deref(doc, node.items);
  }
  return defaultText({ default: prop.default ?? null, kind: prop.type === "boolean" ? "checkbox" : "", description: prop.description || "" })
    || undefined;
}

function deref(doc, node) {
  const ref = node?.$ref;
  return ref ? doc.components.schemas[ref.split("/").pop()] : node;
}

/** One property as a field: its kind, choices, bounds and the default the API states. */
function specOf(doc, name, prop) {
  const branches = prop.anyOf ? prop.anyOf.filter((b) => b.type !== "null") : [prop];
  const base = deref(doc, branches[0]) || {};
  const spec = { name, default: prop.default ?? null, description: prop.description || base.description || "" };
  if (base.enum) return { ...spec, kind: "select", options: base.enum };
  if (name === "precision") return { ...spec, kind: "select", options: PRECISIONS };
  if (base.type === "boolean") return { ...spec, kind: "checkbox" };
  if (base.type === "integer" || base.type === "number") {
    return { ...spec, kind: "number", min: base.minimum ?? base.exclusiveMinimum, max: base.maximum,
      step: base.type === "integer" ? "1" : "any", integer: base.type === "integer" };
  }
  if (base.type === "array") return { ...spec, kind: "list" };
  if (base.type === "object") return { ...spec, kind: "json" };
  return { ...spec, kind: "text" };
}

/** Every field of the request, nested objects (speculative) flattened to "parent.child". */
export function fieldSpecs({ root, doc }) {
  const specs = [];
  for (const [name, prop] of Object.entries(root.properties)) {
    const inner = deref(doc, (prop.anyOf || []).find((b) => b.$ref) || prop);
    if (inner?.properties && name !== "hf_config") {
      for (const [k, p] of Object.entries(inner.properties)) {
        specs.push({ ...specOf(doc, `${name}.${k}`, p), parent: name, required: (inner.required || []).includes(k) });
      }
    } else specs.push(specOf(doc, name, prop));
  }
  return specs;
}

function defaultText(spec) {
  if (spec.default === null || spec.default === undefined) return spec.description;
  const d = spec.kind === "checkbox" ? (spec.default ? t("yes") : t("no")) : String(spec.default);
  return `${t("api_default")}: ${d}`;
}

function control(spec, initial) {
  const value = initial[spec.name];
  const label = LABELS[spec.name] ? t(LABELS[spec.name]) : spec.name;
  const hint = defaultText(spec);
  if (spec.kind === "select") {
    const text = (v) => (spec.name === "mode" ? t(`mode_${v.replace("-", "")}`) : v);
    const marked = (v) => (v === spec.default ? `${text(v)} (${t("default")})` : text(v));
    const options = spec.default === null ? [["", t("default")], ...spec.options.map((v) => [v, v])]
      : spec.options.map((v) => [v, marked(v)]);
    return field(spec.name, label, { kind: "select", options, value: value ?? spec.default ?? "", hint });
  }
  if (spec.kind === "checkbox") {
    return field(spec.name, label, { kind: "checkbox", value: value === undefined ? !!spec.default : String(value) === "true", hint });
  }
  if (spec.kind === "number") {
    return field(spec.name, label, { kind: "number", value: value ?? spec.default ?? "", min: spec.min, max: spec.max, step: spec.step, hint });
  }
  if (spec.kind === "json") return field(spec.name, label, { kind: "textarea", value: value ?? "", placeholder: '{"model_type": "llama", ...}', hint });
  const list = spec.name === "model" ? "model-options" : spec.name === "gpu" ? "gpu-options" : undefined;
  return field(spec.name, label, { value: value ?? "", list, hint });
}

/** The form's fieldsets, one per group; "advanced" folded unless the link sets one of its fields. */
export function formGroups(specs, initial) {
  const grouped = new Set(GROUPS.flatMap(([, names]) => names));
  return GROUPS.map(([key, names]) => {
    const mine = key === "group_advanced" ? specs.filter((s) => !grouped.has(s.name))
      : names.map((n) => specs.find((s) => s.name === n)).filter(Boolean);
    const fields = h("div", { class: "grid" }, mine.map((s) => control(s, initial)));
    if (key !== "group_advanced") {
      return h("fieldset", { class: "estimate-group", "data-group": key }, h("legend", null, t(key)), fields);
    }
    // folded: its summary names the group (a legend inside would say it twice)
    const open = mine.some((s) => initial[s.name] !== undefined);
    return h("details", { class: "advanced", open }, h("summary", null, t(key)),
      h("fieldset", { class: "estimate-group", "data-group": key, "aria-label": t(key) }, fields));
  });
}

/** Hide what the chosen job does not use, and a group left with nothing to show. */
export function syncMode(form) {
  const mode = form.elements.mode.value;
  for (const el of form.querySelectorAll("[data-field]")) {
    const name = el.dataset.field;
    el.hidden = (mode === "inference" && TRAINING_ONLY.has(name)) || (mode !== "inference" && INFERENCE_ONLY.has(name))
      || (mode !== "fine-tuning" && FINETUNE_ONLY.has(name));
  }
  for (const set of form.querySelectorAll("fieldset.estimate-group")) {
    set.hidden = ![...set.querySelectorAll("[data-field]")].some((el) => !el.hidden);
  }
}

function valueOf(spec, el) {
  if (spec.kind === "checkbox") return el.checked;
  const raw = el.value.trim();
  if (raw === "") return undefined;
  if (spec.kind === "number") return Number.isFinite(Number(raw)) ? Number(raw) : raw;  // a non-number goes as typed: the API names it
  if (spec.kind === "list") return raw.split(",").map((x) => x.trim()).filter(Boolean);
  if (spec.kind === "json") {
    try { return JSON.parse(raw); } catch { return raw; }  // the API names the field
  }
  return raw;
}

/**
 * The request body: the shown fields whose value is not the API's default (so the body, the link
 * and the curl line say only what the user chose); model and gpu always.
 */
export function bodyOf(form, specs) {
  const body = {};
  for (const spec of specs) {
    const wrap = form.querySelector(`[data-field="${CSS.escape(spec.name)}"]`);
    const el = form.elements[spec.name];
    if (!wrap || wrap.hidden || !el) continue;
    const v = valueOf(spec, el);
    if (v === undefined || (v === spec.default && !["model", "gpu"].includes(spec.name))) continue;
    if (spec.parent) (body[spec.parent] ||= {})[spec.name.slice(spec.parent.length + 1)] = v;
    else body[spec.name] = v;
  }
  return body;
}

/** The body as link parameters: nested objects flattened, JSON and lists as text. */
export function toParams(body) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(body)) {
    if (v && typeof v === "object" && !Array.isArray(v) && k !== "hf_config") {
      for (const [ck, cv] of Object.entries(v)) p.set(`${k}.${ck}`, String(cv));
    } else p.set(k, Array.isArray(v) ? v.join(",") : typeof v === "object" ? JSON.stringify(v) : String(v));
  }
  return p;
}
