"""Reason codes as data: each code, the parameters each of its wordings takes (names and
types), and a :class:`Reason` that cannot be built with a missing or an undeclared parameter.

The presenter words a reason from one template per language and form
(``service.api.presenters.recommend_words``); a test checks that every template's placeholders
are exactly its form's parameters, so a renamed key fails a test instead of rendering "?".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Literal


class ReasonCode(StrEnum):
    """Every code the recommender emits (docs/architecture.md, "Reasons")."""

    # exclusions
    EXCLUDED_BY_USER = "EXCLUDED_BY_USER"
    NOT_ALLOWED = "NOT_ALLOWED"
    NOT_IN_INVENTORY = "NOT_IN_INVENTORY"
    VENDOR_NOT_ALLOWED = "VENDOR_NOT_ALLOWED"
    FORM_FACTOR = "FORM_FACTOR"
    NO_NVLINK = "NO_NVLINK"
    OVER_POWER_CAP = "OVER_POWER_CAP"
    POWER_UNKNOWN = "POWER_UNKNOWN"
    NO_MEMORY_FIGURE = "NO_MEMORY_FIGURE"
    PRECISION_UNSUPPORTED = "PRECISION_UNSUPPORTED"
    ENGINE_UNSUPPORTED = "ENGINE_UNSUPPORTED"
    MEMORY_INSUFFICIENT = "MEMORY_INSUFFICIENT"
    NO_PLACEMENT = "NO_PLACEMENT"
    OVER_GPU_LIMIT = "OVER_GPU_LIMIT"
    NO_TIME_ESTIMATE = "NO_TIME_ESTIMATE"
    MISSES_DEADLINE = "MISSES_DEADLINE"
    MISSES_TTFT = "MISSES_TTFT"
    MISSES_TPOT = "MISSES_TPOT"
    PROVENANCE_BELOW_MIN = "PROVENANCE_BELOW_MIN"
    BAND_TOO_WIDE = "BAND_TOO_WIDE"
    NO_PRICE = "NO_PRICE"
    NO_MATCHING_INSTANCE = "NO_MATCHING_INSTANCE"
    NO_PURCHASE_PRICE = "NO_PURCHASE_PRICE"
    CAPEX_UNKNOWN = "CAPEX_UNKNOWN"
    NO_POWER_FIGURE = "NO_POWER_FIGURE"
    OVER_BUDGET = "OVER_BUDGET"
    # options
    FITS = "FITS"
    SHARDED_TO_FIT = "SHARDED_TO_FIT"
    TENSOR_PARALLEL_TO_FIT = "TENSOR_PARALLEL_TO_FIT"
    CHECKPOINTING_TO_FIT = "CHECKPOINTING_TO_FIT"
    SINGLE_GPU_TOO_SMALL = "SINGLE_GPU_TOO_SMALL"
    MEETS_DEADLINE = "MEETS_DEADLINE"
    MEETS_TARGETS = "MEETS_TARGETS"
    BANDWIDTH_BOUND = "BANDWIDTH_BOUND"
    COMPUTE_BOUND = "COMPUTE_BOUND"
    HOST_BOUND = "HOST_BOUND"
    COMMUNICATION_BOUND = "COMMUNICATION_BOUND"
    BEST_FOR_OBJECTIVE = "BEST_FOR_OBJECTIVE"
    WITHIN_ERROR_OF_BEST = "WITHIN_ERROR_OF_BEST"
    MEASURED_HERE = "MEASURED_HERE"
    PUBLISHED_RUN = "PUBLISHED_RUN"
    PUBLISHED_RECORD = "PUBLISHED_RECORD"
    QUANTISED_WEIGHTS = "QUANTISED_WEIGHTS"
    MULTI_NODE = "MULTI_NODE"
    EXPERT_PARALLEL = "EXPERT_PARALLEL"
    DISAGGREGATED = "DISAGGREGATED"
    LITTLE_HEADROOM = "LITTLE_HEADROOM"
    FASTER_AT_NEAR_COST = "FASTER_AT_NEAR_COST"
    # what-ifs
    WITH_GRADIENT_CHECKPOINTING = "WITH_GRADIENT_CHECKPOINTING"
    WITH_QLORA = "WITH_QLORA"
    WITH_FUSED_OPTIMIZER = "WITH_FUSED_OPTIMIZER"
    WITH_GRADIENT_ACCUMULATION = "WITH_GRADIENT_ACCUMULATION"
    WITH_FP8_WEIGHTS = "WITH_FP8_WEIGHTS"
    WITH_FP16 = "WITH_FP16"
    WITH_QUANTIZATION = "WITH_QUANTIZATION"
    WITH_MORE_GPUS = "WITH_MORE_GPUS"
    # warnings
    NO_OPTION = "NO_OPTION"
    NO_PLAN_MEETS_DEADLINE = "NO_PLAN_MEETS_DEADLINE"
    LONG_RUN = "LONG_RUN"
    ENGINE_ASSUMED = "ENGINE_ASSUMED"
    GLOBAL_BATCH_HELD = "GLOBAL_BATCH_HELD"
    BEYOND_CONTEXT = "BEYOND_CONTEXT"
    # assumptions
    ASSUMED_OPTIMIZER_STATES = "ASSUMED_OPTIMIZER_STATES"
    ASSUMED_LOOP = "ASSUMED_LOOP"
    ASSUMED_STACK = "ASSUMED_STACK"
    ASSUMED_NETWORK = "ASSUMED_NETWORK"
    ASSUMED_ENGINE = "ASSUMED_ENGINE"
    ASSUMED_PRICES = "ASSUMED_PRICES"
    ASSUMED_BAND = "ASSUMED_BAND"
    ASSUMED_USABLE_MEMORY = "ASSUMED_USABLE_MEMORY"
    ASSUMED_WHOLE_NODES = "ASSUMED_WHOLE_NODES"


ReasonCodeName = Literal[
    "EXCLUDED_BY_USER", "NOT_ALLOWED", "NOT_IN_INVENTORY", "VENDOR_NOT_ALLOWED", "FORM_FACTOR",
    "NO_NVLINK", "OVER_POWER_CAP", "POWER_UNKNOWN", "NO_MEMORY_FIGURE", "PRECISION_UNSUPPORTED",
    "ENGINE_UNSUPPORTED",
    "MEMORY_INSUFFICIENT", "NO_PLACEMENT", "OVER_GPU_LIMIT", "NO_TIME_ESTIMATE", "MISSES_DEADLINE",
    "MISSES_TTFT", "MISSES_TPOT", "PROVENANCE_BELOW_MIN", "BAND_TOO_WIDE", "NO_PRICE",
    "NO_MATCHING_INSTANCE", "NO_PURCHASE_PRICE", "CAPEX_UNKNOWN", "NO_POWER_FIGURE", "OVER_BUDGET", "FITS",
    "SHARDED_TO_FIT", "TENSOR_PARALLEL_TO_FIT", "CHECKPOINTING_TO_FIT", "SINGLE_GPU_TOO_SMALL", "MEETS_DEADLINE",
    "MEETS_TARGETS", "BANDWIDTH_BOUND", "COMPUTE_BOUND", "HOST_BOUND", "COMMUNICATION_BOUND",
    "BEST_FOR_OBJECTIVE",
    "WITHIN_ERROR_OF_BEST", "MEASURED_HERE", "PUBLISHED_RUN", "PUBLISHED_RECORD", "QUANTISED_WEIGHTS", "MULTI_NODE",
    "EXPERT_PARALLEL", "DISAGGREGATED", "LITTLE_HEADROOM", "FASTER_AT_NEAR_COST",
    "WITH_GRADIENT_CHECKPOINTING", "WITH_QLORA", "WITH_FUSED_OPTIMIZER", "WITH_GRADIENT_ACCUMULATION",
    "WITH_FP8_WEIGHTS", "WITH_FP16", "WITH_QUANTIZATION", "WITH_MORE_GPUS",
    "NO_OPTION", "NO_PLAN_MEETS_DEADLINE", "LONG_RUN", "ENGINE_ASSUMED", "GLOBAL_BATCH_HELD",
    "BEYOND_CONTEXT",
    "ASSUMED_OPTIMIZER_STATES", "ASSUMED_LOOP", "ASSUMED_STACK", "ASSUMED_NETWORK",
    "ASSUMED_ENGINE", "ASSUMED_PRICES", "ASSUMED_BAND", "ASSUMED_USABLE_MEMORY",
    "ASSUMED_WHOLE_NODES",
]  # fmt: skip
"""The codes as string literals, so a call site may write ``Reason("FITS", ...)`` and the type
checker still rejects a misspelt code (a test keeps this list equal to :class:`ReasonCode`)."""

REASON_CODES: Final[tuple[str, ...]] = tuple(c.value for c in ReasonCode)


class ReasonParamsError(ValueError):
    """A reason built with parameters no wording of its code declares (a programming error)."""


@dataclass(frozen=True, slots=True)
class Form:
    """One wording of a code: the parameters its templates render (name -> type) and, for a
    code with several wordings, the values of the parameters that pick this one (``when``:
    carried on the wire, never rendered), or a ``check`` on the figures (``MISSES_DEADLINE``:
    whether the largest count tried reached ``max_gpus``)."""

    name: str
    params: Mapping[str, type]
    when: Mapping[str, object] = field(default_factory=dict)
    check: Callable[[Mapping[str, Any]], bool] | None = None

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(self.params) | frozenset(self.when)

    def picks(self, params: Mapping[str, Any]) -> bool:
        """Whether ``params`` (with this form's keys) are worded by this form."""
        return all(params[k] == v for k, v in self.when.items()) and (
            self.check is None or self.check(params)
        )


# parameter types
Text = str
Count = int  # a whole number (GPUs, replicas, days)
Num = float  # any number (an int is accepted)
Flag = bool
Texts = list  # a list of text
_GPU = {"gpu": Text}
_SERVING_MEMORY = {
    "needed_gib": Num, "usable_gib": Num, "weights_gib": Num, "kv_cache_gib": Num,
    "needed_gb": Num, "usable_gb": Num, "weights_gb": Num, "kv_cache_gb": Num,
}  # fmt: skip
_TRAIN_NOTHING = {"gpu": Text, "usable_gib": Num, "gpu_count": Count}
_TRAIN_LIGHTEST = {**_TRAIN_NOTHING, "needed_gib": Num, "sharding": Text, "gradient_checkpointing": Flag}
_WHATIF = {"gpu": Text, "gpu_count": Count, "needed_gib": Num, "usable_gib": Num}
_RECORD = {"gpu": Text, "engine": Text, "runs": Count, "ratio": Num, "low": Num, "high": Num, "source": Text}
_TARGETS: dict[str, dict[str, type]] = {
    "both": {"ttft_target_ms": Num, "tpot_target_ms": Num},
    "ttft": {"ttft_target_ms": Num},
    "tpot": {"tpot_target_ms": Num},
}
_LOADS: dict[str, dict[str, type]] = {"rate": {"rate": Num}, "concurrency": {"concurrency": Count}}
_FASTER = {"faster_gpu": Text, "faster_gpu_count": Count, "faster_hours": Num}
_TP_FIT = {
    "tensor_parallel": Count,
    "data_parallel": Count,
    "gpu_count": Count,
    "gradient_checkpointing": Flag,
    "usable_gib": Num,
}
_PRICE = {
    "provider": Text, "instance_type": Text, "pricing_model": Text, "per_hour": Num, "currency": Text,
    "age_days_at_least": Count,
}  # fmt: skip
_MISSED = {
    "gpu": Text,
    "gpu_count": Count,
    "hours_high": Num,
    "hours": Num,
    "deadline_hours": Num,
    "max_gpus": Count,
}
_BUDGET = {"gpu": Text, "gpu_count": Count, "cost": Num, "budget": Num, "currency": Text}
_OTHER_RECIPE = {
    "precision": Text,
    "bytes_per_param": Num,
    "other_precision": Text,
    "other_bytes_per_param": Num,
}


def _one(**params: type) -> tuple[Form, ...]:
    return (Form("", params),)


FORMS: Final[Mapping[ReasonCode, tuple[Form, ...]]] = {
    ReasonCode.EXCLUDED_BY_USER: _one(gpu=Text),
    ReasonCode.NOT_ALLOWED: _one(gpu=Text),
    ReasonCode.NOT_IN_INVENTORY: (Form("", _GPU), Form("none_free", {**_GPU, "free": Count})),
    ReasonCode.VENDOR_NOT_ALLOWED: _one(gpu=Text, vendor=Text, allowed=Texts),
    ReasonCode.FORM_FACTOR: (
        Form("", {**_GPU, "form_factor": Text, "allowed": Texts}),
        Form("unknown", {**_GPU, "allowed": Texts}),
    ),
    ReasonCode.NO_NVLINK: _one(gpu=Text),
    ReasonCode.OVER_POWER_CAP: (
        Form("per_gpu", {**_GPU, "tdp_w": Num, "cap_w": Num}, {"per": "gpu"}),
        Form("total", {**_GPU, "tdp_w": Num, "cap_w": Num}, {"per": "total"}),
    ),
    ReasonCode.POWER_UNKNOWN: _one(gpu=Text, cap_w=Num),
    ReasonCode.NO_MEMORY_FIGURE: _one(gpu=Text),
    ReasonCode.PRECISION_UNSUPPORTED: _one(gpu=Text, precision=Text),
    ReasonCode.ENGINE_UNSUPPORTED: _one(gpu=Text, engine=Text, vendor=Text),
    ReasonCode.MEMORY_INSUFFICIENT: (
        Form("replica", {**_GPU, "tensor_parallel": Count}),
        Form("serving", {**_GPU, "tensor_parallel": Count, "gpu_count": Count, **_SERVING_MEMORY}),
        *(
            Form(
                f"serving_span_{why}",
                {
                    **_GPU,
                    "tensor_parallel": Count,
                    "gpu_count": Count,
                    **_SERVING_MEMORY,
                    "span_tensor_parallel": Count,
                    "span_nodes": Count,
                },
                when={"span_blocked": why},
            )
            for why in ("engine", "free_nodes", "max_gpus")
        ),
        Form("training_none", _TRAIN_NOTHING),
        Form("training_none_single", {**_TRAIN_NOTHING, "single_gpu_needed_gib": Num}),
        Form("training", _TRAIN_LIGHTEST),
        Form("training_single", {**_TRAIN_LIGHTEST, "single_gpu_needed_gib": Num}),
        Form("training_tp", {**_TRAIN_LIGHTEST, "tensor_parallel": Count}),
        Form("training_tp_single", {**_TRAIN_LIGHTEST, "tensor_parallel": Count, "single_gpu_needed_gib": Num}),
    ),
    ReasonCode.NO_PLACEMENT: _one(gpu=Text, tensor_parallel=Count, free_per_node=Count),
    ReasonCode.OVER_GPU_LIMIT: (
        Form("", {**_GPU, "max_gpus": Count}),
        Form("replicas", {**_GPU, "tensor_parallel": Count, "max_gpus": Count, "replicas_needed_more_than": Count}),
        Form(
            "replicas_guess",
            {**_GPU, "tensor_parallel": Count, "max_gpus": Count, "replicas_needed_more_than": Count, "replicas_at_least": Count},
        ),
    ),
    ReasonCode.NO_TIME_ESTIMATE: (
        Form("", {**_GPU, "missing": Text}),
        Form("fits", {**_GPU, "missing": Text, "gpu_count": Count, "needed_gib": Num, "usable_gib": Num}),
    ),
    ReasonCode.MISSES_DEADLINE: (
        Form("", _MISSED),
        Form("all_tried", {**_MISSED, "largest_tried": Count}, check=lambda p: p["largest_tried"] >= p["max_gpus"]),
        Form("largest_tried", {**_MISSED, "largest_tried": Count}, check=lambda p: p["largest_tried"] < p["max_gpus"]),
    ),
    ReasonCode.MISSES_TTFT: (
        Form("", {"gpu": Text, "tensor_parallel": Count, "ttft_ms": Num, "target_ms": Num}),
        Form("concurrency", {"gpu": Text, "tensor_parallel": Count, "ttft_ms": Num, "target_ms": Num, "concurrency": Count}),
    ),
    ReasonCode.MISSES_TPOT: (
        Form("", {"gpu": Text, "tensor_parallel": Count, "tpot_ms": Num, "target_ms": Num}),
        Form("concurrency", {"gpu": Text, "tensor_parallel": Count, "tpot_ms": Num, "target_ms": Num, "concurrency": Count}),
    ),
    ReasonCode.PROVENANCE_BELOW_MIN: _one(gpu=Text, provenance=Text, minimum=Text),
    ReasonCode.BAND_TOO_WIDE: _one(gpu=Text, band_pct=Num, max_band_pct=Num),
    ReasonCode.NO_PRICE: (
        Form("", {**_GPU, "gpu_count": Count, "currency": Text, "pricing_models": Texts}),
        Form("providers", {**_GPU, "gpu_count": Count, "currency": Text, "pricing_models": Texts, "providers": Texts}),
    ),
    ReasonCode.NO_MATCHING_INSTANCE: _one(
        gpu=Text, gpu_count=Count, gpus_per_node=Count, nodes=Count, needs_nvlink=Flag, replicas=Flag, suspect_only=Flag, detail=Text
    ),
    ReasonCode.NO_PURCHASE_PRICE: _one(gpu=Text, gpu_count=Count),
    ReasonCode.CAPEX_UNKNOWN: _one(gpu=Text, gpu_count=Count, energy_per_hour=Num, currency=Text),
    ReasonCode.NO_POWER_FIGURE: _one(gpu=Text, gpu_count=Count),
    ReasonCode.OVER_BUDGET: tuple(
        Form(what, _BUDGET, {"what": what}) for what in ("per_hour", "per_run", "purchase")
    ),
    ReasonCode.FITS: (
        Form("", {**_GPU, "gpu_count": Count, "needed_gib": Num, "usable_gib": Num, "headroom_gib": Num}),
        Form("serving", {**_GPU, "gpu_count": Count, "tensor_parallel": Count, "headroom_gib": Num, **_SERVING_MEMORY}),
    ),
    ReasonCode.SHARDED_TO_FIT: _one(sharding=Text, gpu_count=Count, ddp_needed_gib=Num, usable_gib=Num),
    ReasonCode.TENSOR_PARALLEL_TO_FIT: (
        Form("", _TP_FIT),
        Form("without", {**_TP_FIT, "without_needed_gib": Num}),
        Form("global_batch", {**_TP_FIT, "global_batch": Count}),
    ),
    ReasonCode.CHECKPOINTING_TO_FIT: _one(needed_without_gib=Num, usable_gib=Num),
    ReasonCode.SINGLE_GPU_TOO_SMALL: (
        Form("", {**_GPU, "needed_gib": Num, "usable_gib": Num}),
        Form("serving", {**_GPU, **_SERVING_MEMORY}),
    ),
    ReasonCode.MEETS_DEADLINE: _one(hours_high=Num, deadline_hours=Num),
    ReasonCode.MEETS_TARGETS: tuple(
        Form(
            f"{layout}{load}_{targets}",
            {**lay, **lp, "ttft_ms": Num, "tpot_ms": Num, **tp},
        )
        for layout, lay in (
            ("", {"replicas": Count, "tensor_parallel": Count}),
            ("pools_", {"prefill_gpus": Count, "decode_gpus": Count}),
        )
        for load, lp in _LOADS.items()
        for targets, tp in _TARGETS.items()
    ),
    ReasonCode.BANDWIDTH_BOUND: (
        Form("", {}),
        Form("mfu", {"mfu": Num}),
        Form("bandwidth", {"bandwidth_gb_per_s": Num}),
    ),
    ReasonCode.COMPUTE_BOUND: (Form("", {}), Form("mfu", {"mfu": Num})),
    ReasonCode.HOST_BOUND: _one(share_pct=Num, mfu=Num),
    ReasonCode.COMMUNICATION_BOUND: _one(share_pct=Num, mfu=Num),
    ReasonCode.BEST_FOR_OBJECTIVE: _one(objective=Text),
    ReasonCode.WITHIN_ERROR_OF_BEST: _one(ratio=Num, uncertainty_pct=Num),
    ReasonCode.MEASURED_HERE: _one(gpu=Text),
    ReasonCode.PUBLISHED_RUN: _one(gpu=Text, engine=Text, tokens_per_s_per_gpu=Num, source=Text),
    ReasonCode.PUBLISHED_RECORD: (
        Form("", _RECORD),
        Form("tp", {**_RECORD, "tensor_parallel": Count}),
    ),
    ReasonCode.QUANTISED_WEIGHTS: _one(quant_method=Text),
    ReasonCode.MULTI_NODE: (
        Form("", {"nodes": Count, "gpus_per_node": Count}),
        Form("network", {"nodes": Count, "gpus_per_node": Count, "network": Text}),
    ),
    ReasonCode.EXPERT_PARALLEL: _one(experts=Count, tensor_parallel=Count, experts_per_gpu=Count),
    ReasonCode.DISAGGREGATED: _one(
        prefill_gpus=Count, decode_gpus=Count, kv_transfer_ms=Num, link=Text, prefill_busy_pct=Num
    ),
    ReasonCode.LITTLE_HEADROOM: _one(headroom_pct=Num, capacity_requests_per_s=Num, ttft_mean_ms=Num),
    ReasonCode.FASTER_AT_NEAR_COST: _one(
        gpu_count=Count, hours=Num, cost=Num, currency=Text, extra_pct=Num, slack_pct=Num
    ),
    ReasonCode.WITH_GRADIENT_CHECKPOINTING: (Form("", _WHATIF), Form("instead", {**_WHATIF, "instead_of": Count})),
    ReasonCode.WITH_QLORA: (Form("", _WHATIF), Form("instead", {**_WHATIF, "instead_of": Count})),
    ReasonCode.WITH_FUSED_OPTIMIZER: (Form("", _WHATIF), Form("instead", {**_WHATIF, "instead_of": Count})),
    ReasonCode.WITH_GRADIENT_ACCUMULATION: (
        Form("", {**_WHATIF, "global_batch": Count}),
        Form("instead", {**_WHATIF, "global_batch": Count, "instead_of": Count}),
    ),
    ReasonCode.WITH_MORE_GPUS: (
        Form("", {**_WHATIF, "max_gpus": Count, "nodes": Count}),
        Form("deadline", {**_WHATIF, "max_gpus": Count, "nodes": Count, "hours_high": Num, "deadline_hours": Num}),
    ),
    ReasonCode.WITH_FP8_WEIGHTS: _one(gpu=Text, tensor_parallel=Count, instead_of=Count, needed_gib=Num, usable_gib=Num),
    ReasonCode.WITH_FP16: tuple(
        Form(mode, {**_WHATIF, "precision": Text}, {"mode": mode}) for mode in ("training", "serving")
    ),
    ReasonCode.WITH_QUANTIZATION: _one(
        gpu=Text, gpu_count=Count, quant_method=Text, tensor_parallel=Count, needed_gib=Num, usable_gib=Num
    ),
    ReasonCode.NO_OPTION: _one(excluded=Count),
    ReasonCode.NO_PLAN_MEETS_DEADLINE: (
        Form("", {"deadline_hours": Num, **_GPU, "gpu_count": Count, "hours": Num}),
        Form("band", {"deadline_hours": Num, **_GPU, "gpu_count": Count, "hours": Num, "hours_high": Num}),
        Form(
            "more",
            {"deadline_hours": Num, **_GPU, "gpu_count": Count, "hours": Num, "hours_high": Num, "gpus_at_least": Count},
        ),
    ),
    ReasonCode.LONG_RUN: (
        Form("", {"hours": Num, "years": Num, "cost_slack_pct": Num}),
        Form("faster", {"hours": Num, "years": Num, "cost_slack_pct": Num, **_FASTER}),
        Form("faster_cost", {"hours": Num, "years": Num, "cost_slack_pct": Num, **_FASTER, "faster_cost_ratio": Num}),
    ),
    ReasonCode.ENGINE_ASSUMED: _one(engine=Text),
    ReasonCode.GLOBAL_BATCH_HELD: _one(global_batch=Count),
    ReasonCode.BEYOND_CONTEXT: _one(model=Text, tokens=Count, limit=Count),
    ReasonCode.ASSUMED_OPTIMIZER_STATES: (
        Form("", _OTHER_RECIPE),
        Form("other_fits", {**_OTHER_RECIPE, "other_needed_gib": Num, "usable_gib": Num, "gpu_count": Count}, {"other_fits": True}),
        Form("other_too_big", {**_OTHER_RECIPE, "other_needed_gib": Num, "usable_gib": Num, "gpu_count": Count}, {"other_fits": False}),
    ),
    ReasonCode.ASSUMED_LOOP: (
        Form("stated", {"loop": Text}, {"stated": True}),
        Form("default", {"loop": Text}, {"stated": False}),
    ),
    ReasonCode.ASSUMED_STACK: _one(stack=Text),
    ReasonCode.ASSUMED_NETWORK: _one(network=Text),
    ReasonCode.ASSUMED_ENGINE: (
        Form("stated", {"engine": Text}, {"stated": True}),
        Form("default", {"engine": Text}, {"stated": False}),
    ),
    ReasonCode.ASSUMED_PRICES: (
        Form("", _PRICE),
        Form("dated", {**_PRICE, "stale": Flag}, {"age_is_lower_bound": False}),
        Form("undated", {**_PRICE, "stale": Flag}, {"age_is_lower_bound": True}),
    ),
    ReasonCode.ASSUMED_BAND: _one(level=Text),
    ReasonCode.ASSUMED_USABLE_MEMORY: _one(gpu=Text, physical_gib=Num),
    ReasonCode.ASSUMED_WHOLE_NODES: _one(max_gpus=Count, gpus_per_node=Count, largest=Count),
}  # fmt: skip
"""Each code's wordings. A reason's form is the one whose parameters and ``when`` keys are
exactly its non-null parameters (and whose ``when`` values match): one code may say more when it
knows more (``FITS`` of a serving plan names the weights and the KV cache), never "?"."""

_DECLARED: Final[dict[str, frozenset[str]]] = {
    c.value: frozenset().union(*(f.keys for f in forms)) for c, forms in FORMS.items()
}
_BY_KEYS: Final[dict[str, dict[frozenset[str], tuple[Form, ...]]]] = {
    c.value: {k: tuple(f for f in forms if f.keys == k) for k in {f.keys for f in forms}}
    for c, forms in FORMS.items()
}
"""Code -> the keys of a form -> the forms with exactly those keys (told apart by ``when``)."""


def _typed(value: object, t: type) -> bool:
    if t is Num:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if t is Count:
        return isinstance(value, int) and not isinstance(value, bool)
    if t is Texts:
        return isinstance(value, list | tuple) and all(isinstance(x, str) for x in value)
    return isinstance(value, t)


def form_of(code: str, params: Mapping[str, Any]) -> Form:
    """The wording ``params`` select for ``code``; :class:`ReasonParamsError` when none does
    (an unknown code, a missing, undeclared or mistyped parameter)."""
    by_keys = _BY_KEYS.get(code)
    if by_keys is None:
        raise ReasonParamsError(f"unknown reason code {code!r}")
    present = frozenset(k for k, v in params.items() if v is not None)
    for form in by_keys.get(present, ()):
        if form.picks(params):
            bad = [k for k, t in form.params.items() if not _typed(params[k], t)]
            if bad:
                raise ReasonParamsError(f"{code}: parameter(s) {bad} of the wrong type")
            return form
    undeclared = set(params) - _DECLARED[code]
    if undeclared:
        raise ReasonParamsError(f"{code}: undeclared parameter(s) {sorted(undeclared)}")
    raise ReasonParamsError(f"{code}: no wording takes the parameters {sorted(present)}")


def form_name(code: str, params: Mapping[str, Any]) -> str | None:
    """The name of the wording ``params`` select for ``code`` (keys and ``when`` values only:
    a reason's types were checked when it was built), or None."""
    for form in _BY_KEYS.get(code, {}).get(frozenset(k for k, v in params.items() if v is not None), ()):
        if form.picks(params):
            return form.name
    return None


@dataclass(frozen=True, slots=True, init=False)
class Reason:
    """A stable code and the numbers a sentence about it needs (the presenter words it). Built
    only with the parameters one of the code's :data:`FORMS` declares."""

    code: ReasonCode
    params: Mapping[str, Any]

    def __init__(self, code: ReasonCode | ReasonCodeName, params: Mapping[str, Any] | None = None) -> None:
        p = dict(params or {})
        _check(code, p)
        object.__setattr__(self, "code", _CODES.get(code) or ReasonCode(code))
        object.__setattr__(self, "params", p)


_CODES: Final[dict[str, ReasonCode]] = {c.value: c for c in ReasonCode}

_VALUE_FREE: Final[frozenset[str]] = frozenset(
    c.value for c, forms in FORMS.items() if all(not f.when and f.check is None for f in forms)
)
"""Codes whose wording depends on which parameters are set and their types only (no ``when``
value, no ``check``): a signature of names and types seen once is valid every time."""

_CHECKED: set[tuple[Any, ...]] = set()
"""(code, names, types) signatures :func:`form_of` accepted: a search builds about a
hundred reasons per request from a few dozen signatures (bounded by the code's forms x the
parameter types the call sites pass)."""


def _check(code: str, params: Mapping[str, Any]) -> None:
    """:func:`form_of`'s check, remembered per signature for value-free codes (a list's items
    are checked every time: their types are not in the signature)."""
    if code not in _VALUE_FREE:
        form_of(code, params)
        return
    sig = (code, tuple(params), tuple(map(type, params.values())))  # C loops, no generator
    if sig in _CHECKED:
        return
    form_of(code, params)
    if not any(isinstance(v, list | tuple) for v in params.values()):
        _CHECKED.add(sig)


_BOUND_CODES: Final[dict[str, ReasonCodeName]] = {
    "compute": "COMPUTE_BOUND",
    "memory": "BANDWIDTH_BOUND",
    "host": "HOST_BOUND",
    "communication": "COMMUNICATION_BOUND",
}


def bound_reason(bound: str, mfu: float, time_shares: Mapping[str, float]) -> Reason:
    """What decides a training plan's speed, as the estimate's largest time share says: a
    host-bound or communication-bound step is not sped up by a faster tensor core, so it is not
    called compute bound."""
    code = _BOUND_CODES.get(bound, "COMPUTE_BOUND")
    params: dict[str, object] = {"mfu": round(mfu, 3)}
    if code in ("HOST_BOUND", "COMMUNICATION_BOUND"):
        params["share_pct"] = round(100.0 * float(time_shares.get(bound, 0.0)))
    return Reason(code, params)
