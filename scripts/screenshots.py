"""Take the README's screenshots of the page: each view in Debian's Chromium (Playwright,
``executable_path``), at desktop width and the compare view at phone width too.

    python scripts/screenshots.py                 # a fresh SQLite database, its own server
    python scripts/screenshots.py --url http://127.0.0.1:8000

Without ``--url`` it builds a temporary database with the real migrations and the shipped
catalog and measurements, starts ``gpu-advisor serve`` on it and stops it afterwards. With
``--example-runs`` it first submits made-up ResNet-50 runs for the L40 and the L20 (to see the
compare chart's measured points and OOM mark on a page that has none): illustrations, never
for the README, and their host names say so. The Chinese screenshot needs a CJK font on the
machine (Debian: ``fonts-wqy-microhei``); the browser tests read text, not glyphs, and do not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWS = [
    ("compare", "#/compare", ".compare-specs"),
    ("recommend", "#/recommend", None),
    (
        "estimate",
        # issue 29's question: a 13B full fine-tune on four 48 GB cards, sharded with FSDP
        "#/estimate?model=llama2-13b&gpu=L40&gpu_count=4&mode=fine-tuning&finetune=full&sharding=fsdp",
        ".estimate-result",
    ),
    ("data", "#/data", "table.coverage"),
    ("gpus", "#/gpus/nvidia-l20", "table.spec"),
    ("gpus-list", "#/gpus?supports=fp8&sort=-usable_memory_bytes", "table.gpu-list"),
    ("legend", "#/legend?term=published", "dl.legend-terms"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fingerprint(pci: str, host: str) -> dict[str, Any]:
    """A complete stack fingerprint for a made-up run (every field the vocabulary requires)."""
    from service.core.catalog.vocabulary import SUITE_VERSION, suite_definition_hash

    return {
        "suite_version": SUITE_VERSION,
        "workload_definition_hash": suite_definition_hash(),
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "torch_version": "2.5.1",
        "attention_backend": "flash",
        "tf32_matmul": False,
        "tf32_cudnn": False,
        "torch_compile": False,
        "ecc_mode": "enabled",
        "mig_mode": "disabled",
        "pci_device_id": pci,
        "host_id": f"mid-{host}-{pci}",
        "cudnn_version": "90100",
        "nccl_version": "2.21.5",
        "transformers_version": "4.46.0",
        "engine_versions": None,
        "power_limit_w": 300,
        "app_clock_sm_mhz": 1980,
        "app_clock_mem_mhz": 2619,
        "pcie_gen": 5,
        "pcie_width": 16,
        "container_image_digest": None,
        "nccl_nvls_enable": None,
    }


def _result(batch_size: int, throughput: float | None) -> dict[str, Any]:
    """A ResNet-50 training result: ``throughput`` in images/s, or an OOM for ``None``."""
    return {
        "workload": "resnet50-train",
        "parameters": {"precision": "amp_bf16", "batch_size": batch_size},
        "status": "oom" if throughput is None else "ok",
        "metrics": {} if throughput is None else {"throughput": {"value": throughput, "unit": "images/s"}},
    }


def example_runs(url: str, key: str) -> None:
    """Illustrative ResNet-50 training runs on the L40 and the L20 (host names say so)."""
    from service.core.catalog.vocabulary import SUITE_VERSION

    for pci, name, mem, scale, oom_at in (
        ("0x26b5", "NVIDIA L40", 46_068 * 2**20, 1.0, None),
        ("0x26ba", "NVIDIA L20", 46_068 * 2**20, 0.72, 512),
    ):
        for host in ("example-a", "example-b"):
            results = []
            for bs in (32, 64, 128, 256, 512):
                if bs == oom_at:
                    results += [_result(bs, None)] * 3
                else:
                    v = scale * 1350 * (bs / 32) ** 0.12
                    results += [_result(bs, v * f) for f in (0.98, 1.0, 1.02)]
            body = {
                "run_id": f"example-{uuid.uuid4().hex}",
                "suite_version": SUITE_VERSION,
                "host": f"made-up-{host}-{pci}",
                "gpu": {"name": name, "pci_device_id": pci, "memory_total_bytes": mem},
                "gpu_count": 1,
                "fingerprint": _fingerprint(pci, host),
                "results": results,
            }
            r = httpx.post(
                f"{url}/v1/benchmark-runs", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60
            )
            r.raise_for_status()


def serve_fresh(tmp: Path, examples: bool) -> tuple[subprocess.Popen[bytes], str]:
    db = f"sqlite:///{tmp / 'screens.db'}"
    env = {**os.environ, "GPU_ADVISOR_DATABASE_URL": db, "GPU_ADVISOR_LOG_FORMAT": "text"}
    subprocess.run([sys.executable, "-m", "service.cli", "migrate"], env=env, check=True, cwd=ROOT)
    key = (
        subprocess.run(
            [
                sys.executable,
                "-m",
                "service.cli",
                "keys",
                "create",
                "--scope",
                "submit",
                "--trusted",
                "--name",
                f"screenshots-{uuid.uuid4().hex[:6]}",
            ],
            env=env,
            check=True,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port), "--no-migrate"],
        env=env,
        cwd=ROOT,
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    if examples:
        example_runs(url, key)
    return proc, url


def shoot(url: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    chromium = os.environ.get("GPU_ADVISOR_CHROMIUM") or shutil.which("chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000}, locale="en-US")
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        for name, hash_, ready in VIEWS:
            page.goto(f"{url}/{hash_}")
            page.wait_for_selector("main:not([aria-busy]) > section.view")
            if name == "recommend":
                page.get_by_role("button", name="Submit").click()
                page.wait_for_selector(".recommend-result, .form-problem .problem")
            if ready:
                page.wait_for_selector(f"{ready}, .problem")
            if name == "recommend":
                page.evaluate(
                    "() => (document.querySelector('.recommend-result') || document.querySelector('form')).scrollIntoView()"
                )
            page.screenshot(path=str(out / f"{name}.png"), full_page=name == "estimate")
            print(f"{out / (name + '.png')}")
        phone = browser.new_page(
            viewport={"width": 390, "height": 844}, locale="zh-CN", device_scale_factor=1
        )
        phone.goto(f"{url}/#/compare")
        phone.wait_for_selector("main:not([aria-busy]) .compare-specs, main:not([aria-busy]) .problem")
        phone.screenshot(path=str(out / "compare-phone-zh.png"))
        print(f"{out / 'compare-phone-zh.png'}")
        browser.close()
        if errors:
            raise SystemExit(f"console errors: {errors}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a running service (default: start one on a fresh database)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument(
        "--example-runs", action="store_true", help="submit made-up L40/L20 runs first (not for the README)"
    )
    a = ap.parse_args()
    if a.url:
        shoot(a.url.rstrip("/"), a.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = serve_fresh(Path(tmp), a.example_runs)
        try:
            shoot(url, a.out)
        finally:
            proc.terminate()
            proc.wait(20)


if __name__ == "__main__":
    main()
