"""The CLI's answers for people: rich tables of the API's JSON documents (``--json`` prints the
documents themselves). Every figure shown is one the document carries, with its unit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

GIB = 2**30


def _console() -> Console:
    """The terminal's width; 160 columns when printing to a pipe or file (rich would take 80
    and wrap every table)."""
    probe = Console()
    return Console(highlight=False, width=None if probe.is_terminal else 160)


def _num(v: Any, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int | float):
        return f"{v:,.{digits}f}" if abs(v) < 1e15 else f"{v:.3g}"
    return str(v)


def _gib(v: Any) -> str:
    return "-" if v is None else f"{v / GIB:,.1f} GiB"


def _band(b: Mapping[str, Any] | None, fmt: Any = _num) -> str:
    return "" if not b else f" ({fmt(b['low'])} – {fmt(b['high'])})"


def _facts(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    t = Table(title=title, box=box.SIMPLE_HEAVY, show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    for k, v in rows:
        t.add_row(k, v)
    return t


def _notices(console: Console, doc: Mapping[str, Any]) -> None:
    for w in doc.get("warnings") or []:
        console.print(f"[yellow]warning[/] {w.get('message') or w.get('code')}")


def estimate(doc: Mapping[str, Any]) -> None:
    c = _console()
    m = doc["memory"]
    gpu, model = doc["gpu"], doc["model"]
    count = doc["configuration"].get("gpu_count", 1)
    rows = [
        ("model", f"{model.get('id')} ({_num(model.get('total_params', 0) / 1e9, 1)} B parameters)"),
        ("GPU", f"{gpu.get('name')} × {count}"),
        ("mode", str(doc.get("mode"))),
        ("fits", "yes" if m["fits"] else "NO"),
        (
            "memory needed",
            f"{_gib(m['device_memory_needed_bytes'])}{_band(m.get('device_memory_band'), _gib)}",
        ),
        ("usable memory", _gib(m["usable_memory_bytes"])),
        ("headroom", _gib(m.get("headroom_bytes"))),
        ("memory provenance", str(m.get("provenance"))),
    ]
    t = doc.get("time")
    if t:
        rows += [
            (
                "step time",
                f"{_num(t['step_time_s'], 3)} s{_band(t.get('step_time_band'), lambda v: _num(v, 3))}",
            ),
            (
                "throughput",
                f"{_num(t['tokens_per_s'], 0)} tokens/s, MFU {_num(100 * (t.get('mfu') or 0), 0)} %",
            ),
            ("bound by", str(t.get("bound"))),
        ]
        if t.get("time_to_train_s"):
            rows.append(("time to train", f"{_num(t['time_to_train_s'] / 3600, 1)} h"))
        rows.append(("time provenance", str(t.get("provenance"))))
    s = doc.get("serving")
    if s:
        for key, label in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT")):
            if s.get(key) is not None:
                rows.append((label, f"{_num(s[key], 1)} ms"))
        if s.get("tokens_per_s") is not None:
            rows.append(("output throughput", f"{_num(s['tokens_per_s'], 0)} tokens/s"))
        rows.append(("serving provenance", str(s.get("provenance"))))
    c.print(_facts("Estimate", rows))
    parts = Table(title="Memory by component", box=box.SIMPLE, title_justify="left")
    parts.add_column("component")
    parts.add_column("GiB", justify="right")
    for k, v in m["components"].items():
        if v:
            parts.add_row(k, f"{v / GIB:,.2f}")
    c.print(parts)
    _notices(c, doc)


def _option_time(o: Mapping[str, Any]) -> str:
    tr, sv = o.get("training"), o.get("serving")
    if tr and tr.get("time_to_train"):
        f = tr["time_to_train"]
        return f"{_num(f['value'], 1)} h{_band(f.get('band'), lambda v: _num(v, 1))}"
    if tr:
        return f"{_num(tr['step_time']['value'], 3)} s/step, {_num(tr.get('tokens_per_s'), 0)} tok/s"
    if sv and sv.get("tpot"):
        return f"TPOT {_num(sv['tpot']['value'], 1)} ms"
    return "-"


def _option_cost(o: Mapping[str, Any]) -> str:
    cost = o.get("cost")
    if not cost:
        return "no price"
    cur = cost.get("currency", "USD")
    bits = []
    if cost.get("per_hour") is not None:
        bits.append(f"{_num(cost['per_hour'])} {cur}/h")
    if cost.get("run"):
        bits.append(f"run {_num(cost['run']['mid'], 0)} {cur}")
    if cost.get("per_million_input") is not None:
        bits.append(
            f"{_num(cost['per_million_input'])} in / {_num(cost['per_million_output'])} out {cur}/1M tokens"
        )
    elif cost.get("per_million_tokens") is not None:
        bits.append(f"{_num(cost['per_million_tokens'])} {cur}/1M tokens")
    return ", ".join(bits) or "no price"


def recommend(doc: Mapping[str, Any]) -> None:
    c = _console()
    t = Table(
        title=f"Options (objective: {doc.get('objective')})", box=box.SIMPLE_HEAVY, title_justify="left"
    )
    for col in ("#", "GPU", "count", "strategy", "memory needed / usable", "time", "cost", "provenance"):
        t.add_column(col, justify="right" if col in ("#", "count") else "left")
    for o in doc.get("options") or []:
        st = o["strategy"]
        how = st.get("sharding") or st.get("engine") or ""
        if st.get("tensor_parallel", 1) and st.get("tensor_parallel", 1) > 1:
            how += f" tp{st['tensor_parallel']}"
        if st.get("expert_parallel"):
            how += " ep"
        if st.get("disaggregated"):
            pools = st["disaggregated"]
            how += f" prefill {pools['prefill_gpus']} + decode {pools['decode_gpus']}"
        best = " ≈ best" if o.get("within_error_of_best") else ""
        t.add_row(
            str(o["rank"]),
            o["gpu"]["name"] + best,
            str(st["gpu_count"]),
            how.strip(),
            f"{_gib(o['memory']['needed_bytes'])} / {_gib(o['memory']['usable_bytes'])}",
            _option_time(o),
            _option_cost(o),
            str(o.get("provenance")),
        )
    if doc.get("options"):
        c.print(t)
        considered = doc.get("considered") or {}
        unsized = len(considered.get("not_ranked") or [])
        more = f"; {unsized} more not sized (ranked below these by a lower bound)" if unsized else ""
        c.print(
            f"{len(doc['options'])} of {considered.get('feasible', len(doc['options']))} feasible GPUs shown{more}; --limit N for more"
        )
    else:
        c.print("[bold]Nothing fits the question.[/]")
    for w in doc.get("what_if") or []:
        c.print(f"what if: {w.get('message')}")
    excluded = doc.get("excluded") or []
    by_code: dict[str, list[str]] = {}
    for e in excluded:
        by_code.setdefault(e["code"], []).append(e["gpu"]["name"])
    if by_code:
        ex = Table(title=f"Excluded ({len(excluded)})", box=box.SIMPLE, title_justify="left")
        ex.add_column("reason")
        ex.add_column("GPUs")
        # the reasons that say something about this job first; "not allowed" last, counted
        for code, names in sorted(by_code.items(), key=lambda kv: (kv[0] == "NOT_ALLOWED", -len(kv[1]))):
            shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
            first = next(e for e in excluded if e["code"] == code)
            ex.add_row(f"{code}: {first['message']}" if len(names) == 1 else code, shown)
        c.print(ex)
    _notices(c, doc)


def compare(doc: Mapping[str, Any]) -> None:
    c = _console()
    names = [g["name"] for g in doc["gpus"]]
    t = Table(title="Specs (ratio to the first)", box=box.SIMPLE_HEAVY, title_justify="left")
    t.add_column("spec")
    for n in names:
        t.add_column(n, justify="right")
    for row in doc["specs"]:
        unit = f" ({row['unit']})" if row.get("unit") else ""
        cells = []
        for v in row["values"]:
            ratio = v.get("ratio_to_first")
            extra = f" ×{ratio:.2f}" if isinstance(ratio, int | float) and ratio != 1 else ""
            cells.append(_num(v.get("value"), 1) + extra)
        t.add_row(row["label"] + unit, *cells)
    per_hour = {p["slug"]: p.get("cheapest_per_gpu_hour") for p in doc.get("prices") or []}
    cur = doc.get("currency", "USD")
    t.add_row(f"cheapest price ({cur}/GPU-h)", *[_num(per_hour.get(g["slug"])) for g in doc["gpus"]])
    c.print(t)
    results = doc.get("results") or []
    if results:
        r = Table(title=f"Results ({len(results)})", box=box.SIMPLE, title_justify="left")
        r.add_column("workload")
        r.add_column("metric")
        for n in names:
            r.add_column(n, justify="right")
        for row in results:
            vals = [_num((cell or {}).get("value"), 1) for cell in row.get("cells", [])]
            r.add_row(str(row.get("workload")), str(row.get("metric") or row.get("label") or ""), *vals)
        c.print(r)
    for g in doc["gpus"]:
        for w in g.get("warnings") or []:
            c.print(f"[yellow]warning[/] {g['name']}: {w.get('message')}")


def gpus(doc: Mapping[str, Any]) -> None:
    c = _console()
    t = Table(title=f"GPUs ({doc.get('count', 0)})", box=box.SIMPLE_HEAVY, title_justify="left")
    for col in ("slug", "name", "usable memory", "bandwidth GB/s", "BF16 TFLOPS", "FP8 TFLOPS", "TDP W"):
        t.add_column(col, justify="left" if col in ("slug", "name") else "right")
    for g in doc.get("items") or []:
        mem, peaks = g.get("memory") or {}, g.get("peaks") or {}
        t.add_row(
            g["slug"],
            g["name"],
            _gib(mem.get("usable_memory_bytes")),
            _num(mem.get("bandwidth_gb_per_s"), 0),
            _num(peaks.get("bf16_tflops"), 0),
            _num(peaks.get("fp8_tflops"), 0),
            _num((g.get("power") or {}).get("tdp_w"), 0),
        )
    c.print(t)
