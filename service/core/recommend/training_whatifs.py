"""What-ifs of a training search: changes the caller ruled out (or did not ask for) --
checkpointing, QLoRA instead of LoRA, the fused AdamW step, micro-batch 1 with gradient
accumulation -- that fit the job on fewer GPUs; and, for a GPU that no count up to ``max_gpus``
holds, the fewest whole nodes beyond it that do."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.memory import MemoryEstimate, TrainConfig, estimate_training
from service.core.recommend.candidates import _count_cap, _gib
from service.core.recommend.models import Exclusion, Option, WhatIf
from service.core.recommend.ranking import admitted
from service.core.recommend.training_counts import _Timed

if TYPE_CHECKING:
    from service.core.recommend.training import _TrainingSearch

_Relax = tuple[str, dict[str, Any], Callable[[TrainConfig], TrainConfig]]


def _relaxed(
    search: _TrainingSearch, code: str, f: Callable[[TrainConfig], TrainConfig], cfg: TrainConfig
) -> MemoryEstimate | None:
    key = (code, cfg.gpu_count, cfg.sharding, cfg.gradient_checkpointing, cfg.tensor_parallel, cfg.batch_size)
    memo = search._relaxed_memo
    if key not in memo:
        search.counter.memory += 1
        try:
            memo[key] = estimate_training(f(cfg))
        except InvalidConfiguration:
            memo[key] = None
    return memo[key]


def _relaxations(search: _TrainingSearch) -> list[_Relax]:
    """The changes a what-if may propose for this job: (code, request change, config change)."""
    base = search.base
    relax: list[_Relax] = []
    if not search.q.constraints.allow_gradient_checkpointing and not base.gradient_checkpointing:
        relax.append(
            (
                "WITH_GRADIENT_CHECKPOINTING",
                {"constraints.allow_gradient_checkpointing": True},
                lambda c: replace(c, gradient_checkpointing=True),
            )
        )
    if (
        base.finetune == "lora" and "finetune" not in search.job.stated and base.precision != "fp32"
    ) or base.finetune == "lora":
        relax.append(
            (
                "WITH_QLORA",
                {"workload.finetune": "qlora"},
                lambda c: replace(
                    c, finetune="qlora", sharding="ddp" if c.sharding in ("zero2", "zero3") else c.sharding
                ),
            )
        )
    if base.batch_size > 1 and not search.global_batch_held:
        # the micro-batch was taken as given per GPU: the same sequences per step, one at a time
        relax.append(
            (
                "WITH_GRADIENT_ACCUMULATION",
                {"workload.batch_size": 1, "workload.global_batch": base.batch_size},  # x ranks, below
                lambda c: replace(c, batch_size=1, global_batch=base.batch_size * c.data_parallel),
            )
        )
    if base.optimizer == "adamw" and base.optimizer_impl != "fused":
        relax.append(
            (
                "WITH_FUSED_OPTIMIZER",
                {"workload.optimizer_impl": "fused"},
                lambda c: replace(c, optimizer_impl="fused"),
            )
        )
    return relax


def training_what_ifs(
    search: _TrainingSearch, options: Sequence[Option], excluded: Sequence[Exclusion]
) -> list[WhatIf]:
    """At most three: changes the caller ruled out (or did not ask for) that fit the job on
    fewer GPUs of a kind (:func:`_relaxed_what_ifs`), and more GPUs than ``max_gpus`` where no
    count up to it fits (:func:`_more_gpus`); fewest GPUs first, then the smaller card."""
    out = _more_gpus(search, excluded) + _relaxed_what_ifs(search, options, excluded)
    out.sort(key=lambda w: (w.gpu_count, w.gpu.fit_memory_bytes or 0, w.code, w.gpu.slug))
    return out[:3]


def _relaxed_what_ifs(
    search: _TrainingSearch, options: Sequence[Option], excluded: Sequence[Exclusion]
) -> list[WhatIf]:
    """Checkpointing, QLoRA instead of LoRA, the fused AdamW step, micro-batch 1: each at the
    fewest GPUs of a kind it fits on, where that is fewer than the job needs as asked."""
    out: list[WhatIf] = []
    relax = _relaxations(search)
    if not relax:
        return out
    # under a deadline an option's count is the deadline's, not memory's: fitting on fewer GPUs
    # changes nothing it can act on (24 H200 meet it; "fits on 1 instead of 2" is beside the point)
    timed = search.q.constraints.deadline_hours is not None
    current: dict[str, int] = {
        o.gpu.slug: search.fewest.get(o.gpu.slug, o.gpu_count)
        for o in options
        if not (timed and o.gpu_count > search.fewest.get(o.gpu.slug, o.gpu_count))
    }
    for ex in excluded:
        if ex.reason.code == "MEMORY_INSUFFICIENT":
            current.setdefault(ex.gpu.slug, 10**9)
    specs = search.data.specs
    seen: set[tuple[str, str]] = set()
    for slug in sorted(current, key=lambda s: (-(current[s]), s)):
        gpu = specs.get(slug)
        if gpu is None:
            continue
        usable = int(gpu.fit_memory_bytes or 0)
        now = current[slug]
        cap, _ = _count_cap(gpu, search.q.constraints)
        for code, change, f in relax:
            if (code, slug) in seen:
                continue
            for n in search.counts(max(cap, 1), gpu):
                if n >= now:
                    break
                p = search.lightest(n, search._node(gpu))
                if p is None:
                    continue
                mem = _relaxed(search, code, f, p.cfg)
                if mem is not None and mem.fits(usable) and _in_time(search, gpu, f(p.cfg), mem, usable):
                    seen.add((code, slug))
                    if "workload.global_batch" in change:  # the relaxation's own: per GPU x ranks
                        change = {**change, "workload.global_batch": f(p.cfg).global_batch}
                    out.append(
                        WhatIf(
                            code,
                            gpu,
                            n,
                            change,
                            {
                                "gpu": gpu.name or slug,
                                "gpu_count": n,
                                "needed_gib": _gib(mem.device_memory_band.high),
                                "usable_gib": _gib(usable),
                                "instead_of": None if now >= 10**9 else now,
                                **(
                                    {"global_batch": gb}
                                    if (gb := change.get("workload.global_batch"))
                                    else {}
                                ),
                            },
                        )
                    )
                    break
    return out


def _in_time(
    search: _TrainingSearch, gpu: GpuSpec, cfg: TrainConfig, mem: MemoryEstimate, usable: int
) -> bool:
    """Under a deadline, whether the relaxed plan meets it at its band's upper end, as the
    search judges every plan: a what-if that fits but misses it led the caller to a plan the
    next answer excludes as MISSES_DEADLINE (5 A100 40GB PCIe at up to 30.6 h for a 12 h one)."""
    deadline = search.q.constraints.deadline_hours
    if deadline is None:
        return True
    from service.core.recommend.training import _Plan

    o = search._option(gpu, _Plan(cfg, mem), usable)
    return o is not None and o.hours_band is not None and o.hours_band[1] <= deadline


MORE_GPUS_FACTOR = 4
"""How far past ``max_gpus`` a what-if looks (whole nodes up to this many times the cap): far
enough for a sharded job whose states did not fit to find the count that holds them, not a
search of every cluster size."""


CLOSE_MISS = 2.0
"""Only a GPU whose lightest configuration at the largest count tried needed at most this many
times its usable memory is tried beyond ``max_gpus`` (activations do not shard with the states:
a card that far off is the wrong card, and the search stays within the answer's time budget)."""


def _more_gpus(search: _TrainingSearch, excluded: Sequence[Exclusion]) -> list[WhatIf]:
    """For each GPU excluded as too small at every count up to ``max_gpus`` (and bound by
    ``max_gpus``, not by an inventory or a power cap), the fewest whole nodes beyond the cap on
    which the lightest allowed configuration fits (and, under a deadline, on which the fastest
    plan that fits meets it): sharded states fall as 1 / GPUs, so "no option" can be one node
    short (70B full fine-tuning with ``max_gpus`` 20 on H100: 16 GPUs need 79.9 GiB of 79.6, 24
    fit)."""
    cons = search.q.constraints
    if cons.pools is not None:
        return []
    out: list[WhatIf] = []
    for ex in excluded:
        gpu = ex.gpu
        if ex.reason.code != "MEMORY_INSUFFICIENT" or gpu.slug not in search.data.specs:
            continue
        cap, _ = _count_cap(gpu, cons)
        if cap != cons.max_gpus:  # a power cap binds: more GPUs are not the caller's to add
            continue
        usable = int(gpu.fit_memory_bytes or 0)
        needed = float(ex.reason.params.get("needed_gib") or 0.0)
        if not needed or needed > CLOSE_MISS * _gib(usable):  # far off: more GPUs are not the fix
            continue
        node = max(search._node(gpu), 1)
        counts = [k * node for k in range(cap // node + 1, MORE_GPUS_FACTOR * max(cap, 1) // node + 1)]
        found = _fewest_beyond(search, gpu, counts, usable, node)
        if found is None:
            continue
        n, high, hours_high = found
        out.append(
            WhatIf(
                "WITH_MORE_GPUS",
                gpu,
                n,
                {"constraints.max_gpus": n},
                {
                    "gpu": gpu.name or gpu.slug,
                    "gpu_count": n,
                    "needed_gib": _gib(high),
                    "usable_gib": _gib(usable),
                    "max_gpus": cap,
                    "nodes": n // node,
                    **(
                        {"hours_high": round(hours_high, 1), "deadline_hours": cons.deadline_hours}
                        if hours_high is not None
                        else {}
                    ),
                },
            )
        )
    return out


def _fewest_beyond(
    search: _TrainingSearch, gpu: GpuSpec, counts: list[int], usable: int, node: int
) -> tuple[int, float, float | None] | None:
    """The fewest of ``counts`` (whole nodes past the cap, ascending) with a plan the search would
    keep: it fits, the constraints admit it (a cost objective needs a price for that many: 40 A100
    40GB PCIe have none, so naming them led to NO_PRICE) and, under a deadline, it meets it at its
    band's upper end. Every fitting plan is timed, as the search judges a count, not only the
    lightest (the largest tensor-parallel degree, recomputing: 70B full fine-tuning on H100 with
    ``max_gpus`` 20 and an 8 h deadline got no what-if from it, while 56 GPUs of ZeRO-3 meet it
    at up to 7.8 h). With it the count and the plan's memory high in bytes -- the lightest kept,
    or under a deadline the fastest kept with its band's upper end in hours."""
    fit = [n for n in counts if (p := search.lightest(n, node)) is not None and p.mem.fits(usable)]
    deadline = search.q.constraints.deadline_hours
    timed = _Timed(search, gpu, usable)

    def kept(n: int) -> list[Option]:
        return [
            o
            for o in timed.plans(n)
            if admitted(o, search.q, search.data)
            and (deadline is None or (o.hours_band is not None and o.hours_band[1] <= deadline))
        ]

    # under a deadline the most GPUs first: where they miss, fewer are not searched (past a node
    # the collectives' growth does not outrun the compute's fall in any plan the search times)
    if not fit or (deadline is not None and not kept(fit[-1])):
        return None
    found = next((ok for n in fit if (ok := kept(n))), None)
    if found is None:
        return None
    if deadline is None:
        light = min(found, key=lambda o: o.memory_high_bytes)
        return light.gpu_count, float(light.memory_high_bytes), None
    fast = min(found, key=lambda o: o.hours_band[1] if o.hours_band else math.inf)
    return fast.gpu_count, float(fast.memory_high_bytes), fast.hours_band[1] if fast.hours_band else None
