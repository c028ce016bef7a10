"""The weight format a config.json's checkpoint ships in (``quantization_config``), as the engines
read it: a scheme the estimator has no format for is 16-bit weights, never a guessed 4-bit."""

from __future__ import annotations

from typing import Any

import pytest

from service.core.catalog.decoder import checkpoint_format


def _q(**q: Any) -> dict[str, Any]:
    return {"quantization_config": q}


@pytest.mark.parametrize(
    ("cfg", "fmt"),
    [
        ({}, "none"),
        (_q(quant_method="fp8", weight_block_size=[128, 128]), "fp8"),
        (_q(quant_method="mxfp4"), "mxfp4"),
        (_q(quant_method="awq", bits=4, group_size=128), "awq"),
        (_q(quant_method="gptq", bits=4), "gptq"),
        (_q(quant_method="gptq", bits=8), "none"),  # 8-bit GPTQ is none of the 4-bit formats
        (_q(quant_method="gptq", bits="x"), "none"),
        (_q(quant_method="bitsandbytes", load_in_4bit=True, bnb_4bit_quant_type="nf4"), "bnb-nf4"),
        (_q(quant_method="bitsandbytes", load_in_8bit=True), "bnb-int8"),
        (_q(quant_method="modelopt", quant_algo="FP8"), "fp8"),
        (_q(quant_method="modelopt", quant_algo="NVFP4"), "nvfp4"),
        (_q(quant_method="compressed-tensors", format="nvfp4-pack-quantized"), "nvfp4"),
        (
            _q(
                quant_method="compressed-tensors",
                config_groups={"g": {"weights": {"num_bits": 8, "type": "float"}}},
            ),
            "fp8",
        ),
        (
            _q(
                quant_method="compressed-tensors",
                config_groups={"g": {"weights": {"num_bits": 4, "type": "int"}}},
            ),
            "gptq",
        ),
        (_q(quant_method="compressed-tensors", config_groups=[1]), "none"),
        (_q(quant_method="hqq"), "none"),
    ],
)
def test_quantization_config_is_read_as_the_engines_read_it(cfg: dict[str, Any], fmt: str) -> None:
    assert checkpoint_format(cfg) == fmt
