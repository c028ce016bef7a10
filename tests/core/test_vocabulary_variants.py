"""The llm-train loop variants in the vocabulary (loop, optimizer_impl, mixed_precision), the
optimizer-step peak metric and bert-large-infer: stored cells keep their hash, the variants are
cells of their own, invalid combinations are refused naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.core.catalog.vocabulary import (
    WORKLOADS,
    VocabularyError,
    canonical_parameters,
    check_metric,
    parameter_value,
    parameters_hash,
    stable_hash,
)
from tests.benchmark_scripts import load_benchmark

REPO = Path(__file__).resolve().parents[2]
# Files committed before the variants existed: their stored parameters are the canonical form
# of the vocabulary of that time, and their cells must not move.
BEFORE_VARIANTS = sorted(
    [
        *REPO.glob("data/benchmarks/*2026-12-02*.json"),
        *REPO.glob("data/benchmarks/raw/*2026-12-02-pass*.json"),
    ]
)
BASE: dict[str, Any] = {
    "model": "gt-llama-1b-v128k",
    "precision": "amp_bf16",
    "batch_size": 4,
    "seq_len": 2048,
}


def _stored_results() -> list[dict[str, Any]]:
    return [r for f in BEFORE_VARIANTS for run in json.loads(f.read_text()) for r in run["results"]]


def test_every_result_committed_before_the_variants_keeps_its_cell() -> None:
    results = _stored_results()
    assert len(BEFORE_VARIANTS) >= 6 and len(results) > 400
    assert {r["workload"] for r in results} >= {
        "llm-train",
        "gemm",
        "resnet50-train",
        "bert-large-train",
        "llm-infer",
    }
    for r in results:
        canon = canonical_parameters(r["workload"], r["parameters"])
        assert canon == r["parameters"]  # no new key appears in the canonical (stored) form
        # the hash the service stored: SHA-256 of the stored parameters, as before the variants
        assert parameters_hash(r["workload"], canon) == stable_hash(
            {"workload": r["workload"], "parameters": r["parameters"]}
        )


def test_pinned_hashes_from_before_the_variants() -> None:
    """Values computed with the vocabulary as it was at commit 0c333be (before the variants)."""
    assert parameters_hash("llm-train", canonical_parameters("llm-train", BASE)) == "f03d05108c78c47b"
    fsdp = {"model": "gt-llama-350m", "precision": "amp_bf16", "batch_size": 4, "seq_len": 2048,
            "sharding": "fsdp", "global_batch": 16}  # fmt: skip
    assert parameters_hash("llm-train", canonical_parameters("llm-train", fsdp)) == "87dfed288eb4f00c"
    # workloads the change did not touch keep their definition hash
    for name, h in (("gemm", "d50002de3773f81d"), ("resnet50-infer", "3fdb1790ea391e2f"),
                    ("bert-large-train", "d5ae0556c12a27d1"), ("collective", "3330397c85ed5dd3")):  # fmt: skip
        assert WORKLOADS[name].definition_hash == h


def test_new_parameters_at_their_default_are_the_stored_cell() -> None:
    explicit = {**BASE, "loop": "loss_only", "optimizer_impl": "FUSED", "mixed_precision": "autocast"}
    assert canonical_parameters("llm-train", explicit) == canonical_parameters("llm-train", BASE)
    canon = canonical_parameters("llm-train", BASE)
    assert {"loop", "optimizer_impl", "mixed_precision"}.isdisjoint(canon)
    assert (parameter_value("llm-train", canon, "loop"), parameter_value("llm-train", canon, "optimizer_impl"),
            parameter_value("llm-train", canon, "mixed_precision")) == ("loss_only", "fused", "autocast")  # fmt: skip
    assert parameter_value("llm-train", canon, "batch_size") == 4
    with pytest.raises(KeyError):
        parameter_value("llm-train", canon, "no_such_parameter")


def test_each_variant_is_a_cell_of_its_own() -> None:
    variants = [
        BASE,
        {**BASE, "loop": "keeps_outputs"},
        {**BASE, "optimizer_impl": "foreach"},
        {**BASE, "optimizer_impl": "forloop"},
        {**BASE, "optimizer_impl": "foreach", "loop": "keeps_outputs"},
        {**BASE, "sharding": "fsdp"},
        {**BASE, "sharding": "fsdp", "mixed_precision": "fsdp_policy"},
        {**BASE, "sharding": "fsdp", "mixed_precision": "fsdp_policy", "optimizer_impl": "foreach"},
    ]
    canon = [canonical_parameters("llm-train", v) for v in variants]
    assert len({parameters_hash("llm-train", c) for c in canon}) == len(variants)
    assert canon[1]["loop"] == "keeps_outputs" and canon[6]["mixed_precision"] == "fsdp_policy"
    assert "mixed_precision" not in canon[5]  # fsdp with autocast: the stored fsdp cells


@pytest.mark.parametrize(
    ("params", "field", "text"),
    [
        ({**BASE, "mixed_precision": "fsdp_policy"}, "mixed_precision", "needs sharding 'fsdp'"),
        ({**BASE, "sharding": "ddp", "mixed_precision": "fsdp_policy"}, "mixed_precision", "needs sharding 'fsdp'"),
        ({**BASE, "precision": "bf16", "sharding": "fsdp", "mixed_precision": "fsdp_policy"}, "mixed_precision",
         "amp_*"),
        ({**BASE, "precision": "fp32", "sharding": "fsdp", "mixed_precision": "fsdp_policy"}, "mixed_precision",
         "amp_*"),
        ({**BASE, "loop": "keeps_logits"}, "loop", "one of loss_only, keeps_outputs"),
        ({**BASE, "optimizer_impl": "apex"}, "optimizer_impl", "one of fused, foreach, forloop"),
        ({**BASE, "mixed_precision": "policy"}, "mixed_precision", "one of autocast, fsdp_policy"),
    ],
)  # fmt: skip
def test_invalid_variants_are_refused_naming_the_field(params: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(VocabularyError) as exc:
        canonical_parameters("llm-train", params, loc=("results", 3, "parameters"))
    assert exc.value.loc == ("results", 3, "parameters", field)
    assert text in exc.value.message


def test_fsdp_policy_with_amp_fp16_is_vocabulary() -> None:
    canon = canonical_parameters("llm-train", {**BASE, "precision": "amp_fp16", "sharding": "fsdp",
                                               "mixed_precision": "fsdp_policy"})  # fmt: skip
    assert canon["mixed_precision"] == "fsdp_policy"


def test_optimizer_step_peak_is_a_memory_metric_in_bytes() -> None:
    m = WORKLOADS["llm-train"].metric("optimizer_step_peak_allocated_bytes")
    assert m is not None and m.unit == "B" and m.higher_is_better is False
    assert check_metric("llm-train", m.name, 135 * 2**30, "B", ("m",)) == float(135 * 2**30)
    with pytest.raises(VocabularyError):
        check_metric("llm-train", m.name, 1.0, "GiB", ("m",))
    assert WORKLOADS["llm-train"].main_metric == "throughput"


def test_bert_large_infer() -> None:
    w = WORKLOADS["bert-large-infer"]
    assert w.main_metric == "throughput" and w.metric("throughput") is not None
    assert w.metric("throughput").unit == "samples/s"  # type: ignore[union-attr]
    canon = canonical_parameters("bert-large-infer", {"precision": "AMP_BF16", "batch_size": 32.0})
    assert canon == {"precision": "amp_bf16", "batch_size": 32, "seq_len": 512}
    with pytest.raises(VocabularyError) as exc:
        canonical_parameters("bert-large-infer", {"precision": "bf16", "batch_size": 8, "seq_len": 4})
    assert exc.value.loc == ("parameters", "seq_len")


def test_definitions_say_which_parameters_are_omitted_at_default() -> None:
    params = {p["name"]: p for p in WORKLOADS["llm-train"].as_dict()["parameters"]}
    assert {n for n, p in params.items() if p.get("omitted_at_default")} == {
        "loop",
        "optimizer_impl",
        "mixed_precision",
    }
    assert params["loop"]["choices"] == ["loss_only", "keeps_outputs"]
    assert (
        params["optimizer_impl"]["default"] == "fused" and params["mixed_precision"]["default"] == "autocast"
    )


def test_estimate_validation_predicts_each_variant_as_declared(tmp_path: Path) -> None:
    """benchmarks/validate_estimates.py compares every variant result with the prediction for
    that variant (the estimator models loop, optimizer_impl and mixed_precision)."""
    mod = load_benchmark("validate_estimates.py", "validate_estimates_variants")
    results = [
        {"workload": "llm-train", "parameters": canonical_parameters("llm-train", {**BASE, **extra}),
         "status": "ok", "metrics": {}, "peak_allocated_bytes": 50 * 2**30, "step_time_s": 0.2}
        for extra in ({}, {"loop": "keeps_outputs"}, {"optimizer_impl": "foreach"})
    ]  # fmt: skip
    f = tmp_path / "runs.json"
    f.write_text(
        json.dumps([{"gpu": {"name": "NVIDIA H200", "slug": "nvidia-h200-sxm"}, "results": results}])
    )
    points = mod.attach_predictions(mod.load_points([str(f)]))
    assert len(points) == 3
    ref, keeps, foreach = (p.memory.phases for p in points)
    assert keeps["forward-loss"] > ref["forward-loss"]
    assert (
        foreach["optimizer-step"] > ref["optimizer-step"] and foreach["forward-loss"] == ref["forward-loss"]
    )
