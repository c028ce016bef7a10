"""Does the service say a published serving run can run? (issue 27: answers people act on.)

Every serving run the shipped tables hold ran: NVIDIA's TensorRT-LLM perf-overview tables
(v0.12 to v1.1, offline maximum throughput), TensorRT-LLM v0.14's online table and InferenceX's
fixed-concurrency runs. Each distinct configuration -- model, GPU, GPUs and tensor parallelism,
weight and KV-cache format, engine, input / output length, the row's concurrency (1 where the
source queues everything) -- is asked of ``POST /v1/estimate`` (the real app, a fresh SQLite
database) and counted as *refused* where the answer says it does not fit or gives no serving
figure. A refusal of a run that was published is a wrong answer a team would act on (buy more
GPUs than it needs); the script prints each one with the answer's reason. Models the catalog
has no preset for (GPT-J, Falcon-180B) are counted apart: that is no fit answer.

    python benchmarks/published_fits.py [--as-launched] [--json PATH]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

TABLE_PREFIXES = ("trtllm-perf-overview", "trtllm-online", "inferencex")
FORMATS = {"fp8": "fp8", "fp4": "nvfp4", "mxfp4": "mxfp4", "int8": "int8"}
"""Published precision -> the API's ``quant_method`` (16-bit rows: ``none``)."""
ENGINES = ("tensorrt-llm", "vllm", "sglang")


def _engine(table_id: str, system: str) -> str:
    if table_id.startswith("trtllm"):
        return "tensorrt-llm"
    first = system.split(" ")[0].lower()
    return {"trt": "tensorrt-llm", "trtllm": "tensorrt-llm", "dynamo-trt": "tensorrt-llm"}.get(first, first)


def configurations(as_launched: bool = False) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Distinct request bodies of the published serving runs, each with the tables it is from;
    ``as_launched``: InferenceX's SGLang runs at their launch scripts' memory setting and KV
    cache (``engine_platform_factor.LAUNCHED``), not the engine's defaults."""
    from benchmarks.engine_platform_factor import launch_settings
    from service.core.evidence.published import TABLES

    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for t in TABLES:
        if not t.id.startswith(TABLE_PREFIXES):
            continue
        for r in t.rows:
            if not r.workload.startswith("llm-serve") or r.slug is None or not r.input_len:
                continue
            if _engine(t.id, r.system) not in ENGINES:
                continue  # an engine the service does not model (InferenceX's ATOM)
            body: dict[str, Any] = {
                "model": r.model,
                "gpu": r.slug,
                "gpu_count": r.gpu_count,
                "tensor_parallel": r.tp,
                "mode": "inference",
                "engine": _engine(t.id, r.system),
                "quant_method": FORMATS.get(r.precision, "none"),
                "input_len": r.input_len,
                "output_len": r.output_len or 1,
                "concurrency": r.concurrency or (r.gpu_count // r.tp),
            }
            if r.kv_cache_dtype == "fp8":
                body["kv_cache_dtype"] = "fp8"
            fraction, kv = launch_settings(r.slug, body["engine"], r.precision, r.tp, as_launched)
            if fraction is not None and t.id.startswith("inferencex"):
                body["memory_fraction"] = fraction
                body["kv_cache_dtype"] = kv
            key = tuple(sorted(body.items()))
            out.setdefault(key, {"body": body, "tables": set()})["tables"].add(t.id)
    return out


def _client() -> Any:
    from benchmarks.fresh_app import fresh_client

    return fresh_client("gpua-fits-")


def run(say: Any = print, as_launched: bool = False) -> dict[str, Any]:
    configs = configurations(as_launched)
    refused: list[dict[str, Any]] = []
    asked = collections.Counter()
    unknown: set[str] = set()
    with _client() as client:
        for item in configs.values():
            body = item["body"]
            r = client.post("/v1/estimate", json=body)
            if r.status_code == 422 and "unknown model" in r.text:
                unknown.add(body["model"])  # no preset (GPT-J, Falcon): not a fit answer
                continue
            asked[body["engine"]] += 1
            doc = r.json() if r.status_code == 200 else {}
            ok = r.status_code == 200 and doc["memory"]["fits"] and doc.get("serving") is not None
            if ok:
                continue
            why = (
                [w["message"] for w in doc.get("warnings", []) if w["code"] == "no_serving_as_given"]
                if r.status_code == 200
                else [r.json().get("detail", "")]
            )
            refused.append(
                {"body": body, "tables": sorted(item["tables"]), "status": r.status_code, "why": why}
            )
            say(
                f"REFUSED {body['model']} on {body['gpu_count']}x {body['gpu']} TP{body['tensor_parallel']} "
                f"{body['quant_method']} {body['engine']} {body['input_len']}/{body['output_len']} "
                f"c{body['concurrency']} ({', '.join(sorted(item['tables']))}): {(why or [''])[0][:160]}"
            )
    n = sum(asked.values())
    how = (
        " at InferenceX's SGLang launch settings"
        if as_launched
        else " at the engines' default memory settings"
    )
    say(f"{n} published configurations asked ({dict(asked)}){how}; {len(refused)} refused")
    if unknown:
        say(f"not asked (no preset): {', '.join(sorted(unknown))}")
    return {"asked": n, "refused": refused, "unknown_models": sorted(unknown)}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--as-launched",
        action="store_true",
        help="ask InferenceX's SGLang runs at their launch scripts' memory_fraction and KV cache",
    )
    args = ap.parse_args(argv)
    rep = run(as_launched=args.as_launched)
    if args.json:
        args.json.write_text(json.dumps(rep, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
