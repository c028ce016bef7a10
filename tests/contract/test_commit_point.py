"""One commit point (docs/architecture.md): a write use case is decorated with
``usecases.transaction.commits``, and nothing else in ``service/usecases`` calls ``commit()``."""

from __future__ import annotations

import ast
from pathlib import Path

from service.usecases import catalog, keys

USECASES = Path(__file__).resolve().parents[2] / "service" / "usecases"
# Issue 9 converts the benchmark use cases separately; drop each name as it is converted.
NOT_YET_CONVERTED = {"benchmarks.py", "benchmark_admin.py"}


def test_use_cases_never_call_commit_themselves() -> None:
    offenders: list[str] = []
    for path in sorted(USECASES.glob("*.py")):
        if path.name == "transaction.py" or path.name in NOT_YET_CONVERTED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "commit":
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, f"commit() outside usecases.transaction.commits: {offenders}"


def test_write_use_cases_commit_through_the_decorator() -> None:
    writes = [
        catalog.upsert_catalog, catalog.create_gpu, catalog.patch_gpu, catalog.delete_gpu, catalog.add_price,
        catalog.add_fx_rate, keys.create_key, keys.revoke_key,
    ]
    for fn in writes:
        assert getattr(fn, "__wrapped__", None) is not None, fn.__name__
