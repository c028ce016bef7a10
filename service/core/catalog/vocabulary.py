"""Benchmark vocabulary: workloads, their parameters, metrics and units, fingerprints.

This module is the single source of truth shared by the service (validation, storage,
aggregation), the benchmark agent (what it runs and how it reports) and the estimator
(what ground truth means). It is pure Python: no web, DB or validation library.

Units follow DESIGN.md "Units and names": bytes, seconds, watts, joules, GB/s = 1e9 B/s,
TFLOP/s for floating-point rates and TOP/s for integer rates.

Parameters are canonicalised -- defaults filled, types normalised, enums lower-cased -- and
hashed (``parameters_hash``), so ``{"batch_size": 8}`` and ``{"batch_size": 8.0}`` are one
cell. A parameter added to a workload after results were stored is declared with
``omit_at_default=True``: at its default value it is left out of the canonical parameters (and
so of the hash and of the stored JSON), so every cell stored before it existed keeps its hash
and its stored form; :func:`parameter_value` reads such a parameter with its default filled. The stack fingerprint is hashed the same way (``fingerprint_hash``) over every field
except the host identity, so results from several hosts with the same stack pool together
while "results from >= 2 hosts" stays countable.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

SUITE_VERSION = "1.0.0"

PRECISIONS: tuple[str, ...] = (
    "fp32",  # strict: cudnn.allow_tf32=False, matmul precision "highest"
    "tf32",
    "amp_fp16",  # fp32 master parameters under autocast
    "amp_bf16",
    "fp16",  # pure half parameters and optimizer state
    "bf16",
    "fp8",
    "int8",
    "int4",
)

RESULT_STATUSES: tuple[str, ...] = ("ok", "oom", "error")

# llm-train loop variants (DESIGN "Estimation": the reference loop and its declared variants).
LOOPS: tuple[str, ...] = ("loss_only", "keeps_outputs")
OPTIMIZER_IMPLS: tuple[str, ...] = ("fused", "foreach", "forloop")
MIXED_PRECISIONS: tuple[str, ...] = ("autocast", "fsdp_policy")

ParamType = Literal["int", "float", "bool", "str", "enum"]


class VocabularyError(ValueError):
    """A value outside the benchmark vocabulary; ``loc`` names the offending field path."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


@dataclass(frozen=True, slots=True)
class ParamDef:
    """One workload parameter: type, default (``None`` = required), allowed values, bounds."""

    name: str
    type: ParamType
    default: Any = None
    required: bool = False
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    unit: str | None = None
    description: str = ""
    omit_at_default: bool = False
    """Left out of the canonical parameters (hash, stored JSON) when equal to ``default``: for
    parameters added after results were stored, so those results keep their cell."""


@dataclass(frozen=True, slots=True)
class MetricDef:
    """A reported metric and the one unit it must be reported in."""

    name: str
    unit: str
    description: str = ""
    higher_is_better: bool = True


@dataclass(frozen=True, slots=True)
class WorkloadDef:
    name: str
    description: str
    main_metric: str
    parameters: tuple[ParamDef, ...]
    metrics: tuple[MetricDef, ...]
    version: int = 1
    extra: Mapping[str, Any] = field(default_factory=dict)

    def param(self, name: str) -> ParamDef | None:
        for p in self.parameters:
            if p.name == name:
                return p
        return None

    def metric(self, name: str) -> MetricDef | None:
        for m in self.metrics:
            if m.name == name:
                return m
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "main_metric": self.main_metric,
            "parameters": [
                {
                    "name": p.name,
                    "type": p.type,
                    "default": p.default,
                    "required": p.required,
                    "choices": list(p.choices),
                    "minimum": p.minimum,
                    "maximum": p.maximum,
                    "unit": p.unit,
                    "description": p.description,
                    # only where set, so the definitions (and hashes) of untouched workloads stay
                    **({"omitted_at_default": True} if p.omit_at_default else {}),
                }
                for p in self.parameters
            ],
            "metrics": [
                {
                    "name": m.name,
                    "unit": m.unit,
                    "description": m.description,
                    "higher_is_better": m.higher_is_better,
                }
                for m in self.metrics
            ],
        }

    @property
    def definition_hash(self) -> str:
        return stable_hash(self.as_dict())


_PRECISION = ParamDef("precision", "enum", required=True, choices=PRECISIONS, description="numeric mode")
_BATCH = ParamDef(
    "batch_size", "int", required=True, minimum=1, maximum=65536, description="per-GPU micro-batch"
)
_SEQ = ParamDef("seq_len", "int", required=True, minimum=1, maximum=1_048_576, unit="tokens")

_STEP = MetricDef("step_time_s", "s", "median wall time of one step", higher_is_better=False)
_ENERGY = MetricDef("energy_per_step_j", "J", "NVML energy counter delta per step", higher_is_better=False)
_POWER = MetricDef("avg_power_w", "W", "mean board power while timing", higher_is_better=False)

WORKLOADS: dict[str, WorkloadDef] = {
    w.name: w
    for w in (
        WorkloadDef(
            "gemm",
            "dense matrix product C = A @ B, square n x n, timed after warm-up",
            "tflops",
            (
                _PRECISION,
                ParamDef("n", "int", default=8192, minimum=16, maximum=65536, description="matrix side"),
            ),
            (
                MetricDef("tflops", "TFLOP/s", "floating-point rate, 2*n^3 per product"),
                MetricDef("tops", "TOP/s", "integer rate (int8), 2*n^3 per product"),
                _STEP,
                _POWER,
            ),
        ),
        WorkloadDef(
            "memory-bandwidth",
            "device-to-device copy of a buffer >= 10x the last-level cache; bytes read + written",
            "bandwidth_gb_per_s",
            (ParamDef("buffer_bytes", "int", default=4 * 2**30, minimum=2**20, unit="B"),),
            (MetricDef("bandwidth_gb_per_s", "GB/s", "bytes read + written per second, 1e9 B/s"), _STEP),
        ),
        WorkloadDef(
            "resnet50-train",
            "torchvision ResNet-50, SGD with momentum, 224x224 synthetic images",
            "throughput",
            (_PRECISION, _BATCH, ParamDef("channels_last", "bool", default=True)),
            (MetricDef("throughput", "images/s"), _STEP, _ENERGY, _POWER),
        ),
        WorkloadDef(
            "resnet50-infer",
            "torchvision ResNet-50, eval + no_grad, 224x224 synthetic images",
            "throughput",
            (_PRECISION, _BATCH, ParamDef("channels_last", "bool", default=True)),
            (MetricDef("throughput", "images/s"), _STEP, _ENERGY, _POWER),
        ),
        WorkloadDef(
            "bert-large-train",
            "BERT-Large masked-LM training step, AdamW, synthetic tokens",
            "throughput",
            (
                _PRECISION,
                _BATCH,
                ParamDef("seq_len", "int", default=512, minimum=8, maximum=4096, unit="tokens"),
            ),
            (MetricDef("throughput", "samples/s"), _STEP, _ENERGY, _POWER),
        ),
        WorkloadDef(
            "bert-large-infer",
            "BERT-Large masked-LM forward, eval + inference_mode, synthetic tokens",
            "throughput",
            (
                _PRECISION,
                _BATCH,
                ParamDef("seq_len", "int", default=512, minimum=8, maximum=4096, unit="tokens"),
            ),
            (MetricDef("throughput", "samples/s"), _STEP, _ENERGY, _POWER),
        ),
        WorkloadDef(
            "llm-train",
            "decoder-only (Llama-style) training step: forward, backward, fused AdamW step",
            "throughput",
            (
                ParamDef("model", "str", required=True, description="model preset id (GET /v1/models)"),
                _PRECISION,
                _BATCH,
                _SEQ,
                ParamDef("gradient_checkpointing", "bool", default=False),
                ParamDef("finetune", "enum", default="full", choices=("full", "lora", "qlora")),
                ParamDef("lora_rank", "int", default=0, minimum=0, maximum=4096, description="0 unless LoRA"),
                ParamDef(
                    "lora_targets",
                    "str",
                    default="",
                    description="comma-separated module names, sorted; empty unless LoRA",
                ),
                ParamDef("attention", "enum", default="sdpa", choices=("sdpa", "eager", "flash_attention_2")),
                ParamDef(
                    "optimizer", "enum", default="adamw", choices=("adamw", "sgd", "adafactor", "adamw_8bit")
                ),
                ParamDef(
                    "sharding",
                    "enum",
                    default="none",
                    choices=("none", "ddp", "fsdp", "zero1", "zero2", "zero3"),
                ),
                ParamDef("gpu_count", "int", default=1, minimum=1, maximum=4096),
                ParamDef(
                    "global_batch",
                    "int",
                    default=0,
                    minimum=0,
                    description="sequences per optimizer step; 0 = batch_size x gpu_count",
                ),
                # Declared loop variants (DESIGN "Estimation"), added after results were stored:
                # omitted at their defaults, so every stored cell keeps its hash.
                ParamDef(
                    "loop",
                    "enum",
                    default="loss_only",
                    choices=LOOPS,
                    omit_at_default=True,
                    description="loss_only: the step keeps only the loss (model(...).loss; the agent and the HF "
                    "Trainer); keeps_outputs: a hand-written loop that holds the model output (logits) through "
                    "backward and the optimizer step, until the next forward replaces it",
                ),
                ParamDef(
                    "optimizer_impl",
                    "enum",
                    default="fused",
                    choices=OPTIMIZER_IMPLS,
                    omit_at_default=True,
                    description="torch.optim implementation: fused (fused=True, the reference), foreach "
                    "(foreach=True), forloop (foreach=False, fused=False)",
                ),
                ParamDef(
                    "mixed_precision",
                    "enum",
                    default="autocast",
                    choices=MIXED_PRECISIONS,
                    omit_at_default=True,
                    description="autocast: torch.autocast over the precision's parameters (FSDP gathers fp32 "
                    "parameters); fsdp_policy: FSDP2 MixedPrecisionPolicy(param_dtype=half, reduce_dtype=fp32) "
                    "over fp32 sharded parameters, no autocast (sharding fsdp with an amp_* precision only)",
                ),
            ),
            (
                MetricDef("throughput", "tokens/s"),
                _STEP,
                MetricDef("mfu", "ratio", "model FLOPs utilisation against the catalog dense peak"),
                _ENERGY,
                _POWER,
                MetricDef(
                    "optimizer_step_peak_allocated_bytes",
                    "B",
                    "torch.cuda.max_memory_allocated reached inside optimizer.step() (reset just before it) "
                    "in one steady-state step after the timed ones; maximum over ranks",
                    higher_is_better=False,
                ),
            ),
        ),
        WorkloadDef(
            "llm-infer",
            "prefill + decode with KV cache: TTFT and TPOT percentiles",
            "output_tokens_per_s",
            (
                ParamDef("model", "str", required=True),
                _PRECISION,
                ParamDef(
                    "quant_method",
                    "enum",
                    default="none",
                    choices=("none", "bnb-int8", "bnb-nf4", "awq", "gptq", "fp8"),
                ),
                ParamDef("engine", "str", default="hf-transformers"),
                _BATCH,
                ParamDef("input_len", "int", required=True, minimum=1, unit="tokens"),
                ParamDef("output_len", "int", required=True, minimum=1, unit="tokens"),
                ParamDef("attention", "enum", default="sdpa", choices=("sdpa", "eager", "flash_attention_2")),
            ),
            (
                MetricDef("ttft_ms_p50", "ms", higher_is_better=False),
                MetricDef("ttft_ms_p99", "ms", higher_is_better=False),
                MetricDef("tpot_ms_p50", "ms", higher_is_better=False),
                MetricDef("tpot_ms_p99", "ms", higher_is_better=False),
                MetricDef("output_tokens_per_s", "tokens/s"),
                _STEP,
            ),
        ),
        WorkloadDef(
            "collective",
            "torch.distributed collective over gpu_count ranks (nccl-tests conventions for bus bandwidth)",
            "busbw_gb_per_s",
            (
                ParamDef(
                    "op",
                    "enum",
                    required=True,
                    choices=("all_reduce", "all_gather", "reduce_scatter", "broadcast"),
                ),
                ParamDef("message_bytes", "int", required=True, minimum=1, unit="B"),
                ParamDef("gpu_count", "int", required=True, minimum=1, maximum=4096),
                ParamDef("backend", "enum", default="nccl", choices=("nccl", "gloo")),
                ParamDef("dtype", "enum", default="bf16", choices=("fp32", "bf16", "fp16")),
            ),
            (
                MetricDef("algbw_gb_per_s", "GB/s", "message bytes / time"),
                MetricDef("busbw_gb_per_s", "GB/s", "algbw x the op's bus factor (2(n-1)/n for all_reduce)"),
                MetricDef("time_ms", "ms", "median time of one collective", higher_is_better=False),
            ),
        ),
    )
}

# Memory fields every result may carry (bytes) -- top-level, not metrics.
MEMORY_FIELDS: tuple[str, ...] = ("peak_allocated_bytes", "peak_reserved_bytes", "nvml_used_bytes")

# Fingerprint fields. Every key must be present on a run; values marked nullable may be null
# when the host genuinely has no such thing (no cuDNN on a CPU smoke run, no container).
FINGERPRINT_REQUIRED: tuple[str, ...] = (
    "suite_version",
    "workload_definition_hash",
    "driver_version",
    "cuda_version",
    "torch_version",
    "attention_backend",
    "tf32_matmul",
    "tf32_cudnn",
    "torch_compile",
    "ecc_mode",
    "mig_mode",
    "pci_device_id",
    "host_id",
)
FINGERPRINT_NULLABLE: tuple[str, ...] = (
    "cudnn_version",
    "nccl_version",
    "transformers_version",
    "engine_versions",
    "power_limit_w",
    "app_clock_sm_mhz",
    "app_clock_mem_mhz",
    "pcie_gen",
    "pcie_width",
    "container_image_digest",
    "nccl_nvls_enable",
)
FINGERPRINT_FIELDS: tuple[str, ...] = FINGERPRINT_REQUIRED + FINGERPRINT_NULLABLE
FINGERPRINT_RANGES: dict[str, tuple[float, float]] = {
    "power_limit_w": (1.0, 5_000.0),
    "app_clock_sm_mhz": (1.0, 10_000.0),
    "app_clock_mem_mhz": (1.0, 100_000.0),
    "pcie_gen": (1.0, 7.0),
    "pcie_width": (1.0, 32.0),
}
"""Physical ranges of the numeric fingerprint fields (null where the host has none). NVML's
enforced power limit in W (the largest board limit shipped, GB200's ~2.7 kW, is inside),
application clocks in MHz (SM clocks are ~2 GHz; NVML's memory clock is at most a few tens of
GHz for any DRAM), PCIe generation 1-7 and link width x1-x32 (the PCIe specification's
widths)."""
# Fields left out of the stack hash: identity of the machine, not of the stack.
FingerprintType = Literal["text", "boolean", "number", "object", "flag"]
FINGERPRINT_TYPES: dict[str, FingerprintType] = {
    **dict.fromkeys(
        (
            "suite_version",
            "workload_definition_hash",
            "driver_version",
            "cuda_version",
            "torch_version",
            "attention_backend",
            "ecc_mode",
            "mig_mode",
            "pci_device_id",
            "host_id",
            "cudnn_version",
            "nccl_version",
            "transformers_version",
            "container_image_digest",
        ),
        "text",
    ),
    **dict.fromkeys(("tf32_matmul", "tf32_cudnn", "torch_compile"), "boolean"),
    **dict.fromkeys(tuple(FINGERPRINT_RANGES), "number"),
    "engine_versions": "object",
    "nccl_nvls_enable": "flag",
}
"""The JSON type of each fingerprint field (nullable ones may also be null): text, a boolean, a
number (in :data:`FINGERPRINT_RANGES`), an object (engine -> version), or a flag -- a boolean,
or the environment variable's text (``"0"``, ``"1"``...) as the agent read it."""
_JSON_TYPES: dict[FingerprintType, tuple[type, ...]] = {
    "text": (str,),
    "boolean": (bool,),
    "number": (int, float),
    "object": (dict,),
    "flag": (bool, str),
}

FINGERPRINT_UNHASHED: frozenset[str] = frozenset({"host_id", "container_image_digest"})


_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
"""Canonical JSON (sorted keys, no spaces), built once (``json.dumps`` builds one per call)."""


def stable_hash(obj: Any, length: int = 16) -> str:
    """SHA-256 of canonical JSON (sorted keys, no spaces), hex, truncated to ``length``."""
    return hashlib.sha256(_CANONICAL_JSON.encode(obj).encode()).hexdigest()[:length]


def suite_definition_hash() -> str:
    """Hash of every workload definition: changes whenever a definition changes."""
    return stable_hash({name: w.as_dict() for name, w in sorted(WORKLOADS.items())})


def get_workload(name: str, loc: tuple[str | int, ...] = ("workload",)) -> WorkloadDef:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise VocabularyError(
            loc, f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}"
        ) from None


def _coerce(p: ParamDef, value: Any, loc: tuple[str | int, ...]) -> Any:
    if p.type == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in {"true", "false", "on", "off", "1", "0"}:
            return value.strip().lower() in {"true", "on", "1"}
        raise VocabularyError(loc, f"{p.name} must be a boolean")
    if p.type == "int":
        if isinstance(value, bool):
            raise VocabularyError(loc, f"{p.name} must be an integer")
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise VocabularyError(loc, f"{p.name} must be an integer") from None
        if isinstance(value, float):
            if not math.isfinite(value) or value != int(value):
                raise VocabularyError(loc, f"{p.name} must be an integer, got {value!r}")
            value = int(value)
        if not isinstance(value, int):
            raise VocabularyError(loc, f"{p.name} must be an integer")
        _bounds(p, value, loc)
        return value
    if p.type == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise VocabularyError(loc, f"{p.name} must be a number")
        try:
            f = float(value)
        except ValueError:
            raise VocabularyError(loc, f"{p.name} must be a number") from None
        if not math.isfinite(f):
            raise VocabularyError(loc, f"{p.name} must be finite")
        _bounds(p, f, loc)
        return f
    if not isinstance(value, str):
        raise VocabularyError(loc, f"{p.name} must be a string")
    s = value.strip()
    if p.type == "enum":
        s = s.lower()
        if s not in p.choices:
            raise VocabularyError(loc, f"{p.name} must be one of {', '.join(p.choices)}; got {value!r}")
        return s
    if p.name == "lora_targets":
        return ",".join(sorted({t.strip() for t in s.split(",") if t.strip()}))
    if p.name in {"model", "engine"}:
        return s.lower()
    return s


def _as_typed(p: ParamDef, value: Any, loc: tuple[str | int, ...]) -> Any:
    """A submitted parameter taken as the API document states it: a JSON boolean, integer
    (``8`` or ``8.0``), number, one of the choices as written, or text (query filters, which
    arrive as text, go through :func:`_coerce` instead)."""
    if p.type == "bool":
        if not isinstance(value, bool):
            raise VocabularyError(loc, f"{p.name} must be a boolean (true or false)")
        return value
    if p.type in ("int", "float"):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (p.type == "int" and isinstance(value, float) and not value.is_integer()):
            raise VocabularyError(loc, f"{p.name} must be {'an integer' if p.type == 'int' else 'a number'}")
        v = int(value) if p.type == "int" else float(value)
        _bounds(p, v, loc)
        return v
    if not isinstance(value, str):
        raise VocabularyError(loc, f"{p.name} must be a string")
    if p.type == "enum" and value not in p.choices:
        raise VocabularyError(loc, f"{p.name} must be one of {', '.join(p.choices)}; got {value!r}")
    return _coerce(p, value, loc)


def _bounds(p: ParamDef, v: float, loc: tuple[str | int, ...]) -> None:
    if p.minimum is not None and v < p.minimum:
        raise VocabularyError(loc, f"{p.name} must be >= {p.minimum:g}; got {v:g}")
    if p.maximum is not None and v > p.maximum:
        raise VocabularyError(loc, f"{p.name} must be <= {p.maximum:g}; got {v:g}")


def canonical_parameters(
    workload: str,
    params: Mapping[str, Any],
    loc: tuple[str | int, ...] = ("parameters",),
    *,
    typed: bool = False,
) -> dict[str, Any]:
    """Validate and canonicalise parameters: defaults filled, types normalised, unknown refused.
    ``typed``: values must have the JSON types the API document states (submissions); else
    text forms are read too (``"8"``, ``"true"``, ``" FP32 "``: query filters, old files).

    Derived defaults: for ``llm-train`` a ``global_batch`` of 0 becomes
    ``batch_size * gpu_count``; LoRA fields are cleared for full fine-tuning. Cross-field
    rules: ``mixed_precision='fsdp_policy'`` needs ``sharding='fsdp'`` and an ``amp_*``
    precision. Parameters declared ``omit_at_default`` are left out at their default value
    (module docstring; :func:`parameter_value` reads them).
    """
    w = get_workload(workload)
    out: dict[str, Any] = {}
    for key in params:
        if w.param(key) is None:
            known = ", ".join(p.name for p in w.parameters)
            raise VocabularyError((*loc, key), f"unknown parameter {key!r} for {workload}; known: {known}")
    read = _as_typed if typed else _coerce
    for p in w.parameters:
        if p.name in params and params[p.name] is not None:
            out[p.name] = read(p, params[p.name], (*loc, p.name))
        elif p.required:
            raise VocabularyError((*loc, p.name), f"parameter {p.name!r} is required for {workload}")
        else:
            out[p.name] = p.default
    if workload == "llm-train":
        if out["mixed_precision"] == "fsdp_policy":
            if out["sharding"] != "fsdp":
                raise VocabularyError(
                    (*loc, "mixed_precision"),
                    f"mixed_precision 'fsdp_policy' is an FSDP option; needs sharding 'fsdp', got {out['sharding']!r}",
                )
            if out["precision"] not in ("amp_bf16", "amp_fp16"):
                raise VocabularyError(
                    (*loc, "mixed_precision"),
                    "mixed_precision 'fsdp_policy' casts fp32 sharded parameters to half precision; needs an "
                    f"amp_* precision (amp_bf16, amp_fp16), got {out['precision']!r}",
                )
        if out["finetune"] == "full":
            out["lora_rank"] = 0
            out["lora_targets"] = ""
        elif out["lora_rank"] == 0:
            out["lora_rank"] = 16
        if out["finetune"] != "full" and not out["lora_targets"]:
            out["lora_targets"] = "k_proj,o_proj,q_proj,v_proj"
        if out["global_batch"] == 0:
            out["global_batch"] = out["batch_size"] * out["gpu_count"]
    for p in w.parameters:
        if p.omit_at_default and out[p.name] == p.default:
            del out[p.name]
    return out


def parameter_value(workload: str, canonical: Mapping[str, Any], name: str) -> Any:
    """A parameter of canonical parameters, its default where canonicalisation left it out
    (``omit_at_default``): readers use this rather than ``canonical[name]``."""
    if name in canonical:
        return canonical[name]
    p = get_workload(workload).param(name)
    if p is None:
        raise KeyError(f"{workload} has no parameter {name!r}")
    return p.default


def coerce_parameter(
    workload: str, name: str, value: Any, loc: tuple[str | int, ...] = ("parameters",)
) -> Any:
    """Canonicalise one parameter value as :func:`canonical_parameters` would (e.g. for a
    query filter such as ``param.batch_size=8``); unknown parameters are refused."""
    w = get_workload(workload)
    p = w.param(name)
    if p is None:
        known = ", ".join(x.name for x in w.parameters)
        raise VocabularyError(loc, f"unknown parameter {name!r} for {workload}; known: {known}")
    return _coerce(p, value, loc)


def parameters_identity(workload: str, canonical: Mapping[str, Any]) -> tuple[str, str]:
    """(parameters hash, canonical JSON of the parameters) from one serialisation: the hash is
    :func:`stable_hash` of ``{"parameters": ..., "workload": ...}``, built around the
    parameters' own JSON, which is also what gets stored -- so a stored cell and an estimate's
    cell are keyed by the same bytes. The one parameters hash of the service."""
    pj = _CANONICAL_JSON.encode(canonical)
    blob = f'{{"parameters":{pj},"workload":{_CANONICAL_JSON.encode(workload)}}}'
    return hashlib.sha256(blob.encode()).hexdigest()[:16], pj


def parameters_hash(workload: str, canonical: Mapping[str, Any]) -> str:
    """The key of a (workload, canonical parameters) cell (:func:`parameters_identity`)."""
    return parameters_identity(workload, canonical)[0]


def check_metric(workload: str, name: str, value: Any, unit: str | None, loc: tuple[str | int, ...]) -> float:
    """A metric must be known for the workload, finite, non-negative and in its unit."""
    w = get_workload(workload)
    m = w.metric(name)
    if m is None:
        known = ", ".join(x.name for x in w.metrics)
        raise VocabularyError(loc, f"unknown metric {name!r} for {workload}; known: {known}")
    if unit is not None and unit != m.unit:
        raise VocabularyError((*loc, "unit"), f"metric {name!r} must be reported in {m.unit!r}; got {unit!r}")
    return check_number(value, (*loc, "value"), name)


def check_number(value: Any, loc: tuple[str | int, ...], what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise VocabularyError(loc, f"{what} must be a number")
    f = float(value)
    if not math.isfinite(f):
        raise VocabularyError(loc, f"{what} must be finite; got {value!r}")
    if f < 0:
        raise VocabularyError(loc, f"{what} must be non-negative; got {value!r}")
    return f
