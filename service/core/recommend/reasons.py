"""Reason codes: a stable code and the numbers a sentence about it needs (the presenter words it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

REASON_CODES: Final[tuple[str, ...]] = (
    # exclusions
    "EXCLUDED_BY_USER",
    "NOT_ALLOWED",
    "NOT_IN_INVENTORY",
    "VENDOR_NOT_ALLOWED",
    "FORM_FACTOR",
    "NO_NVLINK",
    "OVER_POWER_CAP",
    "POWER_UNKNOWN",
    "NO_MEMORY_FIGURE",
    "PRECISION_UNSUPPORTED",
    "MEMORY_INSUFFICIENT",
    "NO_PLACEMENT",
    "OVER_GPU_LIMIT",
    "NO_TIME_ESTIMATE",
    "MISSES_DEADLINE",
    "MISSES_TTFT",
    "MISSES_TPOT",
    "PROVENANCE_BELOW_MIN",
    "BAND_TOO_WIDE",
    "NO_PRICE",
    "NO_MATCHING_INSTANCE",
    "NO_PURCHASE_PRICE",
    "NO_POWER_FIGURE",
    "OVER_BUDGET",
    # options
    "FITS",
    "SHARDED_TO_FIT",
    "TENSOR_PARALLEL_TO_FIT",
    "CHECKPOINTING_TO_FIT",
    "SINGLE_GPU_TOO_SMALL",
    "MEETS_DEADLINE",
    "MEETS_TARGETS",
    "BANDWIDTH_BOUND",
    "COMPUTE_BOUND",
    "BEST_FOR_OBJECTIVE",
    "WITHIN_ERROR_OF_BEST",
    "MEASURED_HERE",
    "QUANTISED_WEIGHTS",
    "MULTI_NODE",
    # what-ifs
    "WITH_GRADIENT_CHECKPOINTING",
    "WITH_QLORA",
    "WITH_FUSED_OPTIMIZER",
    "WITH_FP8_WEIGHTS",
    # warnings
    "NO_OPTION",
    "NO_PLAN_MEETS_DEADLINE",
    "LONG_RUN",
    "ENGINE_ASSUMED",
    # assumptions
    "ASSUMED_OPTIMIZER_STATES",
    "ASSUMED_LOOP",
    "ASSUMED_STACK",
    "ASSUMED_NETWORK",
    "ASSUMED_ENGINE",
    "ASSUMED_PRICES",
    "ASSUMED_BAND",
    "GLOBAL_BATCH_HELD",
)
"""Every code the recommender emits (docs/architecture.md lists them with their meaning); the
presenter has a sentence for each in every language (tests/api/test_recommend_sentences.py)."""


@dataclass(frozen=True, slots=True)
class Reason:
    """A stable code and the numbers a sentence about it needs (the presenter words it)."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)
