"""Use cases reach the database only through repositories and commit only through
``service.usecases.transaction.commits`` (docs/architecture.md, "Layers" and "One commit
point"). Checked on the syntax tree, so docstrings that talk about sessions or commits do not
count. Every module of service/usecases except the commit decorator itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(
    str(p.relative_to(ROOT))
    for p in (ROOT / "service" / "usecases").glob("*.py")
    if p.name != "transaction.py"
)
# persistence and wire libraries, the wire schemas, the pydantic settings object, ORM rows
FORBIDDEN = (
    "sqlalchemy",
    "pydantic",
    "pydantic_settings",
    "service.schemas",
    "service.settings",
    "service.db.models",
)


def _tree(path: str) -> ast.Module:
    return ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)


def forbidden_imports(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{a.name}" for a in node.names)
    return [m for m in names if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def session_uses(tree: ast.Module) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "session"]


def commit_calls(tree: ast.Module) -> list[int]:
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "commit"
    ]


@pytest.mark.parametrize("path", MODULES)
def test_imports_no_persistence_or_wire_library(path: str) -> None:
    assert forbidden_imports(_tree(path)) == []


@pytest.mark.parametrize("path", MODULES)
def test_reaches_no_session(path: str) -> None:
    assert session_uses(_tree(path)) == []


@pytest.mark.parametrize("path", MODULES)
def test_calls_no_commit(path: str) -> None:
    assert commit_calls(_tree(path)) == []


def test_the_checks_see_violations() -> None:
    bad = ast.parse(
        "from sqlalchemy import select\n"
        "import service.schemas.benchmarks\n"
        "from service.db import models\n"
        "def f(uow):\n"
        "    uow.session.execute(select(1))\n"
        "    uow.commit()\n"
    )
    assert forbidden_imports(bad) == [
        "sqlalchemy",
        "sqlalchemy.select",
        "service.schemas.benchmarks",
        "service.db.models",
    ]
    assert session_uses(bad) == [5]
    assert commit_calls(bad) == [6]
