"""The `derived` source kind: a catalog figure computed from a sibling's documented per-SM, per-clock rate
must name the sibling, list its figures, show the arithmetic, and may carry an alternative sibling's value."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from service.schemas.gpus import GpuDocument, Source

DERIVATION = "sibling X: 1,024 FLOP/SM/clock x 64 SMs x 1.695 GHz = 111.1 TFLOPS"


def _doc(**source: Any) -> dict[str, Any]:
    derived = {
        "group": "peaks",
        "title": "Derived from X",
        "source_kind": "derived",
        "note": DERIVATION,
        "figures": ["bf16_tflops"],
        "derived_from": "nvidia-x",
    }
    derived.update(source)
    return {
        "slug": "nvidia-y",
        "vendor": "nvidia",
        "name": "Y",
        "form_factor": "pcie",
        "peaks": {"bf16_tflops": 111.1, "fp32_tflops": 27.8},
        "sources": [
            {
                "group": "peaks",
                "title": "Y datasheet",
                "source_kind": "vendor-datasheet",
                "figures": ["fp32_tflops"],
            },
            {k: v for k, v in derived.items() if v is not None},
        ],
    }


def test_a_derived_source_validates_and_gives_a_band() -> None:
    doc = GpuDocument.model_validate(
        _doc(alternative={"sibling": "nvidia-z", "values": {"bf16_tflops": 55.5}})
    )
    fig = doc.derived_figures()["peaks.bf16_tflops"]
    assert (fig.value, fig.low, fig.high) == (111.1, 55.5, 111.1)
    assert (fig.derived_from, fig.alternative_sibling) == ("nvidia-x", "nvidia-z")
    single = GpuDocument.model_validate(_doc()).derived_figures()["peaks.bf16_tflops"]
    assert single.low == single.high == 111.1 and single.alternative_sibling is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"derived_from": None}, "derived_from"),
        ({"figures": None}, "figures"),
        ({"note": None}, "derivation"),
        ({"note": "  "}, "derivation"),
        ({"figures": ["bf16"]}, "figures must name keys"),
        ({"figures": ["bandwidth_gb_per_s"]}, "figures must name keys"),
        ({"alternative": {"sibling": "nvidia-z", "values": {"tf32_tflops": 1.0}}}, "not among the derived"),
        ({"alternative": {"sibling": "nvidia-x", "values": {"bf16_tflops": 1.0}}}, "must differ"),
        (
            {"alternative": {"sibling": "nvidia-z", "values": {"bf16_tflops": -1.0}}},
            "greater than or equal to 0",
        ),
        ({"alternative": {"sibling": "nvidia-z", "values": {}}}, "at least 1"),
        ({"derived_from": "nvidia-y"}, "derived from the GPU itself"),
        ({"figures": ["tf32_tflops"]}, "listed as derived but has no value"),
        ({"derived_from": "Not A Slug"}, "pattern"),
        ({"extra": 1}, "Extra inputs"),
    ],
)
def test_bad_derived_sources_are_refused(change: dict[str, Any], message: str) -> None:
    doc = _doc(**change)  # a None value drops the key
    with pytest.raises(ValidationError, match=message):
        GpuDocument.model_validate(doc)


def test_only_derived_sources_name_a_sibling() -> None:
    with pytest.raises(ValidationError, match="derived_from and alternative"):
        Source.model_validate(
            {"group": "peaks", "title": "t", "source_kind": "whitepaper", "derived_from": "nvidia-x"}
        )
    with pytest.raises(ValidationError, match="derived_from and alternative"):
        Source.model_validate(
            {
                "group": "peaks",
                "title": "t",
                "source_kind": "whitepaper",
                "alternative": {"sibling": "nvidia-x", "values": {"bf16_tflops": 1.0}},
            }
        )
    ok = Source.model_validate(
        {"group": "peaks", "title": "t", "source_kind": "whitepaper", "figures": ["fp32_tflops"]}
    )
    assert ok.figures == ["fp32_tflops"]


def test_groups_without_figures_cannot_be_derived() -> None:
    with pytest.raises(ValidationError, match="figures must name keys"):
        Source.model_validate(
            {
                "group": "identity",
                "title": "t",
                "source_kind": "derived",
                "note": DERIVATION,
                "figures": ["compute_capability"],
                "derived_from": "nvidia-x",
            }
        )
