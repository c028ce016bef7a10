"""Benchmark plans: which configurations to run, in which order, with which timing knobs.

A plan file is JSON::

    {
      "name": "h200-groundtruth",
      "description": "...",
      "defaults": {"warmup": 2, "steps": 5, "repeats": 3, "timeout_s": 240},
      "configs": [
        {"workload": "gemm", "parameters": {"precision": "bf16"}, "est_s": 4},
        {"workload": "llm-train", "parameters": {"model": "gt-llama-1b-v32k", "precision": "amp_bf16",
         "batch_size": 8, "seq_len": 1024}, "steps": 6, "est_s": 12},
        ...
      ]
    }

Configurations run in file order, so put the most valuable first: a time budget stops the run
before the first configuration whose estimate (``est_s``) no longer fits. Parameters are
validated and canonicalised with the shared vocabulary when the plan is loaded; model ids
must resolve through ``service.core.catalog.models``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from service.core.catalog.vocabulary import VocabularyError, canonical_parameters, parameters_hash

DEFAULT_EST_S: dict[str, float] = {
    "gemm": 5.0,
    "memory-bandwidth": 4.0,
    "resnet50-train": 12.0,
    "resnet50-infer": 8.0,
    "bert-large-train": 12.0,
    "bert-large-infer": 8.0,
    "llm-train": 15.0,
    "llm-infer": 20.0,
}
TIMING_KEYS = ("warmup", "steps", "repeats", "timeout_s", "est_s")


class PlanError(ValueError):
    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(f"{'.'.join(str(x) for x in loc)}: {message}" if loc else message)
        self.loc = loc


@dataclass(frozen=True, slots=True)
class ConfigSpec:
    workload: str
    parameters: dict[str, Any]
    warmup: int = 2
    steps: int = 5
    repeats: int = 3
    timeout_s: float = 300.0
    est_s: float = 10.0
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Identity of the measured cell: workload + canonical-parameters hash."""
        return parameters_hash(self.workload, self.parameters)

    @property
    def label(self) -> str:
        p = self.parameters
        skip = {
            "lora_targets",
            "optimizer",
            "sharding",
            "gpu_count",
            "global_batch",
            "quant_method",
            "engine",
        }
        defaults = {
            "gradient_checkpointing": False,
            "finetune": "full",
            "lora_rank": 0,
            "attention": "sdpa",
            "channels_last": True,
            "n": 8192,
            "buffer_bytes": 4 * 2**30,
        }
        bits = [
            f"{k}={v}" for k, v in p.items() if k not in skip and not (k in defaults and defaults[k] == v)
        ]
        return f"{self.workload} " + " ".join(bits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "parameters": dict(self.parameters),
            "warmup": self.warmup,
            "steps": self.steps,
            "repeats": self.repeats,
            "timeout_s": self.timeout_s,
            "est_s": self.est_s,
            "options": dict(self.options),
        }


@dataclass(frozen=True, slots=True)
class Plan:
    name: str
    configs: tuple[ConfigSpec, ...]
    description: str = ""

    def only(self, workloads: Iterable[str]) -> Plan:
        wanted = set(workloads)
        return replace(self, configs=tuple(c for c in self.configs if c.workload in wanted))

    def without(self, keys: set[str]) -> Plan:
        return replace(self, configs=tuple(c for c in self.configs if c.key not in keys))

    @property
    def estimated_s(self) -> float:
        return sum(c.est_s for c in self.configs)


def _model_check(workload: str, params: Mapping[str, Any], loc: tuple[str | int, ...]) -> None:
    if workload not in ("llm-train", "llm-infer"):
        return
    from service.core.catalog.models import ModelNotFound, get_model

    try:
        spec = get_model(str(params["model"]))
    except ModelNotFound as exc:
        raise PlanError((*loc, "parameters", "model"), str(exc)) from None
    if getattr(spec, "kind", "decoder") != "decoder":
        raise PlanError((*loc, "parameters", "model"), f"{spec.id} is not a decoder-only model")


def make_config(
    raw: Mapping[str, Any], defaults: Mapping[str, Any] | None = None, loc: tuple[str | int, ...] = ()
) -> ConfigSpec:
    """Validate one plan entry; parameters are canonicalised (defaults filled)."""
    if not isinstance(raw, Mapping):
        raise PlanError(loc, "a configuration must be an object")
    unknown = set(raw) - {"workload", "parameters", "options", *TIMING_KEYS}
    if unknown:
        raise PlanError(loc, f"unknown keys: {', '.join(sorted(unknown))}")
    workload = raw.get("workload")
    if not isinstance(workload, str):
        raise PlanError((*loc, "workload"), "workload is required")
    try:
        params = canonical_parameters(workload, dict(raw.get("parameters") or {}), loc=(*loc, "parameters"))
    except VocabularyError as exc:
        raise PlanError(exc.loc, exc.message) from None
    if workload == "llm-train" or workload == "llm-infer":
        params["model"] = _canonical_model(params["model"])
    _model_check(workload, params, loc)
    merged: dict[str, Any] = {**(defaults or {}), **{k: raw[k] for k in TIMING_KEYS if k in raw}}
    try:
        return ConfigSpec(
            workload=workload,
            parameters=params,
            warmup=int(merged.get("warmup", 2)),
            steps=int(merged.get("steps", 5)),
            repeats=int(merged.get("repeats", 3)),
            timeout_s=float(merged.get("timeout_s", 300.0)),
            est_s=float(merged.get("est_s", DEFAULT_EST_S.get(workload, 10.0))),
            options=dict(raw.get("options") or {}),
        )
    except (TypeError, ValueError) as exc:
        raise PlanError(loc, f"bad timing value: {exc}") from None


def _canonical_model(name: str) -> str:
    """The preset id a model name resolves to (so aliases share one cell)."""
    from service.core.catalog.models import ModelNotFound, get_model

    try:
        return str(get_model(name).id)
    except ModelNotFound:
        return name


def plan_from_dict(doc: Mapping[str, Any], *, default_name: str = "plan") -> Plan:
    if not isinstance(doc, Mapping):
        raise PlanError((), "a plan must be a JSON object with a 'configs' list")
    configs = doc.get("configs")
    if not isinstance(configs, list) or not configs:
        raise PlanError(("configs",), "a non-empty list of configurations is required")
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping) or set(defaults) - set(TIMING_KEYS):
        raise PlanError(("defaults",), f"defaults may set only {', '.join(TIMING_KEYS)}")
    specs: list[ConfigSpec] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(configs):
        spec = make_config(raw, defaults, loc=("configs", i))
        if spec.key in seen:
            raise PlanError(("configs", i), f"duplicate of configs[{seen[spec.key]}] ({spec.label})")
        seen[spec.key] = i
        specs.append(spec)
    return Plan(
        name=str(doc.get("name") or default_name),
        configs=tuple(specs),
        description=str(doc.get("description") or ""),
    )


def load_plan(path: Path) -> Plan:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PlanError((), f"cannot read plan {path}: {exc}") from None
    return plan_from_dict(doc, default_name=path.stem)


def plan_from_cells(
    cells: Iterable[Mapping[str, Any]], *, top: int, name: str = "measurement-plan"
) -> tuple[Plan, list[str]]:
    """The service's measurement plan (``GET /v1/measurement-plan`` cells, in plan order) as a
    plan of its first ``top`` cells this single-GPU agent can run, and a line per cell passed
    over: a multi-GPU cell (``gpu_count`` > 1), or one the agent's plan check refuses."""
    specs: list[ConfigSpec] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for cell in cells:
        if len(specs) == top:
            break
        rank, workload = cell.get("rank"), str(cell.get("workload"))
        params = dict(cell.get("parameters") or {})
        if int(params.get("gpu_count") or 1) > 1:
            skipped.append(f"#{rank} {workload}: needs {params['gpu_count']} GPUs; this agent measures one")
            continue
        try:
            spec = make_config({"workload": workload, "parameters": params}, loc=("cells", str(rank)))
        except PlanError as exc:
            skipped.append(f"#{rank} {workload}: {exc}")
            continue
        if spec.key not in seen:
            seen.add(spec.key)
            specs.append(spec)
    description = f"the service's measurement plan: its top {len(specs)} cell(s) this GPU can run"
    return Plan(name=name, configs=tuple(specs), description=description), skipped


# ---------------------------------------------------------------------------------------------
# built-in plans
# ---------------------------------------------------------------------------------------------


def _cfg(workload: str, est: float | None = None, **params: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"workload": workload, "parameters": params}
    if est is not None:
        out["est_s"] = est
    return out


def smoke_plan() -> Plan:
    """Tiny sizes on the CPU: exercises every workload's code path in seconds (tests, CI)."""
    llm: dict[str, Any] = {"model": "gt-llama-110m", "batch_size": 2, "seq_len": 32}
    configs = [
        _cfg("gemm", precision="fp32", n=64),
        _cfg("gemm", precision="bf16", n=64),
        _cfg("gemm", precision="int8", n=64),
        _cfg("gemm", precision="fp8", n=64),  # skipped on a CPU
        _cfg("memory-bandwidth", buffer_bytes=2**20),
        _cfg("resnet50-train", precision="fp32", batch_size=2),
        _cfg("resnet50-infer", precision="fp32", batch_size=2),
        _cfg("bert-large-train", precision="fp32", batch_size=2, seq_len=16),
        _cfg("bert-large-infer", precision="fp32", batch_size=2, seq_len=16),
        _cfg("llm-train", precision="fp32", **llm),
        _cfg("llm-train", precision="amp_bf16", gradient_checkpointing=True, finetune="lora", **llm),
        _cfg("llm-train", precision="bf16", attention="eager", **llm),
        _cfg("llm-train", precision="fp32", loop="keeps_outputs", optimizer_impl="foreach", **llm),
        _cfg("llm-train", precision="fp32", optimizer_impl="forloop", **llm),
        _cfg("llm-infer", model="gt-llama-110m", precision="bf16", batch_size=2, input_len=16, output_len=4),
    ]
    return plan_from_dict(
        {
            "name": "smoke",
            "defaults": {"warmup": 1, "steps": 2, "repeats": 2, "est_s": 3, "timeout_s": 120},
            "configs": configs,
        }
    )


def quick_plan() -> Plan:
    """About five minutes on a datacenter GPU: one point per workload family, small models."""
    configs: list[dict[str, Any]] = [
        _cfg("gemm", 4, precision=p) for p in ("bf16", "fp16", "tf32", "fp32", "fp8", "int8")
    ]
    configs += [
        _cfg("memory-bandwidth", 4),
        _cfg("llm-train", 12, model="gt-llama-350m", precision="amp_bf16", batch_size=8, seq_len=1024),
        _cfg("llm-train", 15, model="gt-llama-1b-v32k", precision="amp_bf16", batch_size=4, seq_len=2048),
        _cfg(
            "llm-train",
            15,
            model="gt-llama-1b-v32k",
            precision="amp_bf16",
            batch_size=4,
            seq_len=2048,
            finetune="lora",
            lora_rank=16,
        ),
        _cfg(
            "llm-infer",
            15,
            model="gt-llama-1b-v128k",
            precision="bf16",
            batch_size=8,
            input_len=512,
            output_len=128,
        ),
        _cfg("resnet50-train", 10, precision="amp_bf16", batch_size=128),
        _cfg("resnet50-infer", 8, precision="amp_bf16", batch_size=256),
        _cfg("bert-large-train", 12, precision="amp_bf16", batch_size=32, seq_len=128),
        _cfg("bert-large-infer", 8, precision="amp_bf16", batch_size=64, seq_len=128),
    ]
    return plan_from_dict(
        {"name": "quick", "defaults": {"warmup": 2, "steps": 5, "timeout_s": 240}, "configs": configs}
    )


def standard_plan() -> Plan:
    """About 20-30 minutes: batch sweeps of every workload on models up to 3B parameters."""
    configs: list[dict[str, Any]] = [
        _cfg("gemm", 4, precision=p) for p in ("bf16", "fp16", "tf32", "fp32", "fp8", "int8")
    ]
    configs.append(_cfg("memory-bandwidth", 4))
    for model, bss in (
        ("gt-llama-110m", (8, 16)),
        ("gt-llama-350m", (4, 8)),
        ("gt-llama-1b-v32k", (2, 4, 8)),
        ("gt-llama-1b-v128k", (2, 4)),
        ("gt-llama-3b", (1, 2)),
    ):
        for bs in bss:
            configs.append(
                _cfg("llm-train", 15, model=model, precision="amp_bf16", batch_size=bs, seq_len=2048)
            )
        configs.append(
            _cfg(
                "llm-train",
                15,
                model=model,
                precision="amp_bf16",
                batch_size=bss[-1],
                seq_len=2048,
                gradient_checkpointing=True,
            )
        )
        configs.append(
            _cfg(
                "llm-train",
                15,
                model=model,
                precision="amp_bf16",
                batch_size=bss[-1],
                seq_len=2048,
                finetune="lora",
                lora_rank=16,
            )
        )
    for model in ("gt-llama-1b-v128k", "gt-llama-3b"):
        for bs in (1, 8, 32):
            configs.append(
                _cfg(
                    "llm-infer",
                    15,
                    model=model,
                    precision="bf16",
                    batch_size=bs,
                    input_len=512,
                    output_len=128,
                )
            )
    configs += [_cfg("resnet50-train", 10, precision="amp_bf16", batch_size=bs) for bs in (32, 64, 128, 256)]
    configs += [_cfg("resnet50-infer", 8, precision="amp_bf16", batch_size=bs) for bs in (1, 64, 256)]
    configs += [
        _cfg("bert-large-train", 12, precision="amp_bf16", batch_size=bs, seq_len=seq)
        for seq in (128, 512)
        for bs in (8, 16, 32)
    ]
    configs += [
        _cfg("bert-large-infer", 8, precision="amp_bf16", batch_size=bs, seq_len=seq)
        for seq in (128, 512)
        for bs in (1, 32, 128)
    ]
    return plan_from_dict(
        {"name": "standard", "defaults": {"warmup": 2, "steps": 5, "timeout_s": 300}, "configs": configs}
    )


BUILTIN_PLANS = {"smoke": smoke_plan, "quick": quick_plan, "standard": standard_plan}
