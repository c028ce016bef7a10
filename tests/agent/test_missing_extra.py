"""Issue 29: never a traceback for a missing extra. The real `gpu-advisor agent ...` runs in a
process whose Python cannot see the agent extra's packages (torch, torchvision, transformers,
peft, nvidia-ml-py): a path of links to every other installed package, with ``-S`` so the
environment's own site-packages is not added. What a user without `[agent]` gets is one line
naming the extra and an exit code, on stderr; a script asking for JSON gets JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import service
from service.agent import exitcodes

REPO = Path(service.__file__).resolve().parents[1]
EXTRA = re.compile(
    r"^(torch|torchvision|torchgen|functorch|transformers|peft|pynvml|nvidia_ml_py)([-_.].*)?$"
)
MODEL_LIBRARIES = re.compile(r"^(torchvision|transformers|peft)([-_.].*)?$")
EXTRA_LINE = "pip install 'gpu-advisor[agent]'"


def site_without(tmp_path_factory: pytest.TempPathFactory, hidden: re.Pattern[str]) -> Path:
    """A site directory holding every installed package but those ``hidden`` names."""
    site = tmp_path_factory.mktemp("site-without")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if hidden.match(entry.name) or entry.suffix == ".pth":
            continue
        (site / entry.name).symlink_to(entry)
    return site


@pytest.fixture(scope="module")
def without_extra(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return site_without(tmp_path_factory, EXTRA)


def agent(site: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PYTHONPATH": f"{site}:{REPO}:{REPO / 'client'}",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "COLUMNS": "200",  # one line stays one line
    }
    return subprocess.run(
        [sys.executable, "-S", "-m", "service.cli", "agent", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_extra_is_really_absent(without_extra: Path, tmp_path: Path) -> None:
    code = "import importlib.util as u; print([u.find_spec(n) is None for n in ('torch', 'pynvml', 'transformers')])"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": str(without_extra)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "[True, True, True]", out.stderr


def test_probe_without_the_extra_is_one_line_naming_it(without_extra: Path, tmp_path: Path) -> None:
    out = agent(without_extra, tmp_path, "probe")
    assert out.returncode == exitcodes.NO_DRIVER
    assert "Traceback" not in out.stderr + out.stdout
    [line] = out.stderr.strip().splitlines()
    assert line.startswith("error: nvidia-ml-py is not installed") and EXTRA_LINE in line
    as_json = agent(without_extra, tmp_path, "probe", "--json")
    assert as_json.returncode == exitcodes.NO_DRIVER
    assert EXTRA_LINE in json.loads(as_json.stdout)["error"]["message"]


def test_run_smoke_without_torch_is_one_line_naming_it(without_extra: Path, tmp_path: Path) -> None:
    out = agent(without_extra, tmp_path, "run", "--smoke")
    assert out.returncode == exitcodes.ERROR
    assert "Traceback" not in out.stderr + out.stdout and out.stdout == ""
    [line] = out.stderr.strip().splitlines()
    assert line.startswith("error: PyTorch is not installed") and EXTRA_LINE in line
    assert not list(tmp_path.glob("*.json"))  # nothing half-written


def test_run_smoke_with_torch_alone_skips_what_needs_the_rest(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """torch without transformers / peft: those workloads are skipped naming the extra (no
    traceback, and no error result that would be submitted for the GPU)."""
    pytest.importorskip("torch")
    site = site_without(tmp_path_factory, MODEL_LIBRARIES)
    out = agent(
        site, tmp_path, "run", "--smoke", "--workloads", "bert-large-infer,llm-infer", "-o", "runs.json"
    )
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    skipped = [line for line in out.stderr.splitlines() if line.startswith("skipped ")]
    assert [line.split()[1] for line in skipped] == ["bert-large-infer", "llm-infer"], out.stderr
    assert all("transformers is not importable here" in line and EXTRA_LINE in line for line in skipped)
    assert "done: nothing measured; 2 skipped" in out.stderr
    assert not (tmp_path / "runs.json").exists()  # a skip is not a result: nothing to submit
