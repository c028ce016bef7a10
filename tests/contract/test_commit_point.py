"""One commit point (docs/architecture.md): a write use case is decorated with
``usecases.transaction.commits``, and nothing else in ``service/usecases`` calls ``commit()``."""

from __future__ import annotations

import ast
from pathlib import Path

from service.usecases import benchmark_admin, benchmarks, catalog, keys

USECASES = Path(__file__).resolve().parents[2] / "service" / "usecases"
NOT_YET_CONVERTED: set[str] = set()


def test_use_cases_never_call_commit_themselves() -> None:
    offenders: list[str] = []
    for path in sorted(USECASES.glob("*.py")):
        if path.name == "transaction.py" or path.name in NOT_YET_CONVERTED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "commit"
            ):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, f"commit() outside usecases.transaction.commits: {offenders}"


def test_write_use_cases_commit_through_the_decorator() -> None:
    writes = [
        catalog.upsert_catalog,
        catalog.create_gpu,
        catalog.patch_gpu,
        catalog.delete_gpu,
        catalog.add_price,
        catalog.add_fx_rate,
        keys.create_key,
        keys.revoke_key,
        benchmarks.submit_run,
        benchmarks.builtin_principal,
        benchmark_admin.acknowledge_alert,
        benchmark_admin.map_pending,
        benchmark_admin.review_result,
        benchmark_admin.set_retracted,
    ]
    for fn in writes:
        assert getattr(fn, "__wrapped__", None) is not None, fn.__name__


def test_the_layers_contract_lists_every_package() -> None:
    """import-linter's layers contract cannot be exhaustive without containers: check here that
    every top-level package and module of ``service`` has a layer."""
    import tomllib

    root = USECASES.parent
    config = tomllib.loads((root.parent / "pyproject.toml").read_text())
    layers = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")["layers"]
    listed = {name.strip() for layer in layers for name in layer.split("|")}
    present = {
        f"service.{p.stem}"
        for p in root.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.stem != "__init__")
    }
    assert present - listed == set(), f"packages without a layer: {sorted(present - listed)}"
