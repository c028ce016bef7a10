"""The leave-one-source-out accuracy of cross-GPU ratios per workload family, as answers quote it.

``python benchmarks/validate_transfer.py --write-accuracy`` measures it (issue 27: every shipped
published source left out in turn, the operator-class transfer of
:mod:`service.core.estimation.transfer_sources` fitted on the others, every GPU pair of the left-out
source predicted, datasheet arithmetic beside it) and writes ``transfer_accuracy.json`` here
(package data). Kept apart from the transfer itself so that quoting it does not load the tables.
Pure: the file is read once, on first use; a missing file means no statement (never an error).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

__all__ = ["ACCURACY_FILE", "CLASSES", "CLASS_OF_WORKLOAD", "factor_key", "loso_note", "loso_table"]

CLASSES: Final[dict[str, str]] = {
    "cnn-train": "convolutional network training (ResNet-50)",
    "cnn-infer": "convolutional network inference (ResNet-50)",
    "detection": "detection networks (SSD / RetinaNet), training and inference",
    "bert-train": "BERT training and fine-tuning",
    "llm-train": "decoder LLM pre-training and LoRA fine-tuning",
    "llm-serve": "LLM serving throughput (decode-heavy)",
    "llm-online": "LLM serving at a fixed client concurrency (latency-bound decode)",
    "llm-prefill": "LLM time to first token (prefill)",
    "diffusion": "diffusion models (Stable Diffusion, SDXL, FLUX), training and inference",
    "recsys": "recommendation (DLRM-DCNv2)",
    "gnn": "graph networks (R-GAT)",
    "unet3d": "3D U-Net segmentation",
    "speech": "speech recognition (Whisper)",
}


ACCURACY_FILE: Final = "transfer_accuracy.json"
"""Written by ``python benchmarks/validate_transfer.py --write-accuracy`` (package data)."""

CLASS_OF_WORKLOAD: Final[dict[str, str]] = {
    "llm-train": "llm-train",
    "llm-infer": "llm-serve",
    "resnet50-train": "cnn-train",
    "resnet50-infer": "cnn-infer",
    "bert-large-train": "bert-train",
}


def factor_key(family: str, stack: str) -> str:
    """The key a compute factor of a precision family on a kind of stack (``infer`` or ``train``,
    :data:`~.transfer_sources.STACK_KINDS`) is fitted and shipped under (the ``families`` of the
    table's ``architectures``): the family for an inference stack, ``fp8/train`` for a training
    one."""
    return family if stack == "infer" else f"{family}/{stack}"


@cache
def loso_table() -> Mapping[str, Any]:
    """The shipped leave-one-source-out figures (empty when the file is absent: no statement)."""
    try:
        text = resources.files("service.core.estimation").joinpath(ACCURACY_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return {}
    doc = json.loads(text)
    return doc if isinstance(doc, dict) else {}


def loso_note(workload: str) -> str | None:
    """How well cross-GPU ratios of this workload's family held on sources left out of the fit,
    beside datasheet arithmetic on the same GPU pairs (None when the family has no figure)."""
    doc = loso_table()
    cls = CLASS_OF_WORKLOAD.get(workload)
    if cls is None:
        return None
    fam = (doc.get("by_family") or {}).get(cls)
    if not fam or not fam.get("n"):
        return None
    pooled = doc.get("pooled") or {}
    return (
        f"cross-GPU accuracy for {CLASSES[cls]} (leave one source out over {len(doc.get('sources', []))} "
        f"published sources, operator-class transfer): ratio error {fam['mape']:.0%} against "
        f"{fam['baseline_mape']:.0%} for datasheet arithmetic over {fam['n']} GPU pairs "
        f"(all families {pooled.get('mape', float('nan')):.0%} against {pooled.get('baseline_mape', float('nan')):.0%}); "
        "a check beside this answer, not the model that computed it"
    )
