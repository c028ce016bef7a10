"""Loading a script under ``benchmarks/`` as a module, for tests of its functions (the scripts
are not a package: they run as ``python benchmarks/NAME.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(script: str, module: str) -> Any:
    """``benchmarks/<script>`` executed as module ``module`` (registered in ``sys.modules``, so
    its dataclasses resolve string annotations)."""
    spec = importlib.util.spec_from_file_location(module, BENCHMARKS / script)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
