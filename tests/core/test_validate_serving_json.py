"""`benchmarks/validate_serving.py --json` writes strict JSON: an overloaded deployment's infinite
latency becomes null, never the `Infinity` token that strict parsers refuse."""

from __future__ import annotations

import json
import math

from benchmarks.validate_serving import strict_json


def test_non_finite_floats_become_null_at_any_depth() -> None:
    doc = {"tpot_ms": math.inf, "rows": [1.5, {"ttft_ms": -math.inf, "x": math.nan}], "pair": (2, math.inf)}
    text = json.dumps(strict_json(doc), allow_nan=False)
    assert json.loads(text) == {
        "tpot_ms": None,
        "rows": [1.5, {"ttft_ms": None, "x": None}],
        "pair": [2, None],
    }
