"""Training candidates: GPU count x sharding x checkpointing, their memory and their time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.estimate import Job, estimate
from service.core.estimation.frozen import replace
from service.core.estimation.memory import (
    MemoryEstimate,
    TrainConfig,
    estimate_training,
)
from service.core.pricing.cost import (
    cost_per_million_tokens,
    run_cost,
)
from service.core.recommend import deployment as dep
from service.core.recommend.candidates import (
    _Counter,
    _gib,
    _node_size,
    _placement,
    _pool_shape,
    measured_elsewhere,
    on_pool,
)
from service.core.recommend.models import Exclusion, Option, RecommendData, RecommendQuestion, WhatIf
from service.core.recommend.ranking import COST_OBJECTIVES, admitted, bounded, ratio_half_width
from service.core.recommend.ranking import _objective_value as objective_value
from service.core.recommend.reasons import Reason, bound_reason
from service.core.recommend.training_counts import (
    _choose,
    _doubling,
    _fastest,
    _Timed,
    _toward_deadline,
)
from service.core.recommend.training_whatifs import training_what_ifs


class _MemoryTable:
    """Training memory breakdowns keyed by what they depend on (never the GPU)."""

    def __init__(self, base: TrainConfig, counter: _Counter) -> None:
        self.base = base
        self.counter = counter
        self._memo: dict[tuple[int, int, str, bool, int, str], MemoryEstimate | None] = {}

    def get(self, cfg: TrainConfig) -> MemoryEstimate | None:
        tp = cfg.tensor_parallel
        dp = cfg.gpu_count // tp
        n = dp if cfg.sharding not in ("none", "ddp") else min(dp, 2)  # a replica's does not shrink
        key = (
            n,
            tp,
            cfg.sharding,
            cfg.gradient_checkpointing,
            cfg.batch_size,
            cfg.finetune + cfg.optimizer_impl,
        )
        if key not in self._memo:
            self.counter.memory += 1
            try:
                self._memo[key] = estimate_training(cfg)
            except InvalidConfiguration:
                self._memo[key] = None
        return self._memo[key]


@dataclass(frozen=True, slots=True)
class _Plan:
    """One training configuration and its memory."""

    cfg: TrainConfig
    mem: MemoryEstimate


class _TrainingSearch:
    def __init__(self, job: Job, q: RecommendQuestion, data: RecommendData, counter: _Counter) -> None:
        assert isinstance(job.config, TrainConfig)
        self.job = job
        self.q = q
        self.data = data
        self.counter = counter
        self.base: TrainConfig = job.config
        self.table = _MemoryTable(self.base, counter)
        self.global_batch = self.base.global_batch
        self.global_batch_held = bool(self.global_batch)
        cons = q.constraints
        ck: tuple[bool, ...]
        if self.base.gradient_checkpointing:
            ck = (True,)
        elif cons.allow_gradient_checkpointing:
            ck = (False, True)
        else:
            ck = (False,)
        self.checkpointing = ck
        stated = job.stated
        if "sharding" in stated and self.base.sharding not in ("none",):
            self.shardings: tuple[str, ...] = (self.base.sharding,)
        elif self.base.finetune == "qlora":
            self.shardings = ("ddp", "fsdp")  # FSDP-QLoRA; ZeRO-3 QLoRA is not modelled
        else:
            self.shardings = ("ddp", "zero2", "zero3", "fsdp")
        self._plans: dict[tuple[int, str, bool, int], _Plan | None] = {}
        self._relaxed_memo: dict[tuple[str, int, str, bool, int, int], MemoryEstimate | None] = {}
        self.tensor_parallel_fixed = self.base.tensor_parallel > 1 or self.base.pipeline_parallel > 1
        """A layout the workload states is kept (only data parallelism and sharding vary)."""
        self._fitting: dict[tuple[int, int, int], list[_Plan]] = {}
        self.threshold: float | None = None
        """The ``limit``-th best objective value found so far (set by the caller per GPU)."""
        self.fewest: dict[str, int] = {}
        """Per GPU, the fewest GPUs any allowed strategy fits on (what a what-if must beat)."""
        self.unsourced: dict[str, str] = {}  # per GPU, the figure its estimate lacked (NO_TIME_ESTIMATE)

    # ---- configurations ----------------------------------------------------------------

    def _node(self, gpu: GpuSpec) -> int:
        """GPUs per node: the pool's free GPUs per node, else the GPU's node size."""
        shape = _pool_shape(gpu, self.q.constraints)
        return shape[0] if shape is not None and shape[0] > 0 else _node_size(gpu)

    def counts(self, cap: int, gpu: GpuSpec) -> list[int]:
        """Every count that fills whole nodes: 1..node inside one node (any integer, not only
        powers of two), then whole nodes (the pool's free GPUs per node, else the GPU's node
        size), up to ``cap`` and the pool's nodes."""
        shape = _pool_shape(gpu, self.q.constraints)
        node = self._node(gpu)
        nodes = shape[1] if shape is not None and shape[0] > 0 else cap // max(node, 1)
        out = list(range(1, min(node, cap) + 1))
        out += [k * node for k in range(2, nodes + 1) if k * node <= cap]
        return out

    def tp_degrees(self, n: int, node: int) -> tuple[int, ...]:
        """Tensor-parallel degrees worth trying at ``n`` GPUs on nodes of ``node``: inside one
        node (a TP group's all-reduces run on every layer), dividing ``n``, the KV heads and the
        FFN (what the estimator shards), decoders only."""
        m = self.base.model
        if not isinstance(m, DecoderSpec) or self.tensor_parallel_fixed:
            return ()
        return tuple(
            d
            for d in range(2, min(n, node) + 1)
            if n % d == 0 and node % d == 0 and m.num_kv_heads % d == 0 and m.intermediate_size % d == 0
        )

    def _groups(self, n: int, node: int) -> tuple[int, ...]:
        """The model-parallel group sizes tried at ``n``: the workload's stated layout, else no
        tensor parallelism, then :meth:`tp_degrees`."""
        b = self.base
        if self.tensor_parallel_fixed:
            return (b.tensor_parallel,) if n % (b.tensor_parallel * b.pipeline_parallel) == 0 else ()
        return (1, *self.tp_degrees(n, node))

    def plan(self, n: int, sharding: str, ckpt: bool, tp: int = 1) -> _Plan | None:
        """The configuration at ``n`` GPUs in groups of ``tp`` (global batch held when given),
        memoised. One data-parallel rank shards nothing."""
        dp = n // (tp * self.base.pipeline_parallel)
        s = "none" if dp == 1 else sharding
        key = (n, s, ckpt, tp)
        if key in self._plans:
            return self._plans[key]
        self._plans[key] = plan = self._make(n, s, ckpt, tp)
        return plan

    def _make(self, n: int, s: str, ckpt: bool, tp: int) -> _Plan | None:
        b = self.base
        micro = b.batch_size
        g = self.global_batch
        dp = n // (tp * b.pipeline_parallel)
        if g:
            per_rank = g // dp if g % dp == 0 else 0
            if not per_rank:
                return None
            micro = max(d for d in range(1, min(micro, per_rank) + 1) if per_rank % d == 0)
        amp = b.precision.startswith("amp_")
        mixed = b.mixed_precision
        if "mixed_precision" not in self.job.stated:
            mixed = "fsdp_policy" if s == "fsdp" and amp else "autocast"
        elif mixed == "fsdp_policy" and s != "fsdp":
            return None
        try:
            cfg = replace(
                b,
                gpu_count=n,
                tensor_parallel=tp,
                sharding=s,
                gradient_checkpointing=ckpt,
                batch_size=micro,
                global_batch=g,
                mixed_precision=mixed,
            )
        except InvalidConfiguration:
            return None
        mem = self.table.get(cfg)
        return _Plan(cfg, mem) if mem is not None else None

    def fitting(self, n: int, usable: int, node: int) -> list[_Plan]:
        """The configurations at ``n`` GPUs worth timing: per strategy family (DDP, ZeRO-2, FSDP)
        the first that fits, without checkpointing before with it (recomputation against
        sharding's extra collectives: timed, not assumed). Every family is timed: none is faster
        by rule -- ZeRO-2's optimizer step updates a 1/N shard, so it beat DDP on a full
        fine-tune (Llama-3-8B on 8 H200: 3.90 h against 4.43 h), while DDP wins under LoRA. Where the
        model needs it -- no data-parallel plan fits, even with checkpointing -- tensor
        parallelism inside a node (``node`` GPUs) is tried the same way, smallest degree first,
        over the data-parallel families (TP to spare recomputation is not searched: it changed
        no answer of the benchmark's questions and cost a third more CPU)."""
        key = (n, usable, node)
        if key in self._fitting:
            return self._fitting[key]
        out: list[_Plan] = []
        self._fitting[key] = out
        groups = self._groups(n, node)
        for tp in groups:
            if out or (tp > 1 and not self._tp_may_fit(n, usable, groups[-1])):
                break
            self._families(n, usable, tp, out)
        return out

    def _lightest_tp(self, n: int, tp: int, ck: bool) -> _Plan | None:
        """The most-sharded family at ``tp`` (FSDP where allowed; one rank shards nothing)."""
        return self.plan(n, self.shardings[-1], ck, tp)

    def _tp_may_fit(self, n: int, usable: int, top: int) -> bool:
        """Whether any TP plan at ``n`` can fit: memory only falls with the TP degree, the
        sharding and checkpointing, so the largest degree, most sharded, with checkpointing
        where allowed, decides it (one breakdown instead of one per degree and family)."""
        if self.tensor_parallel_fixed:
            return True
        p = self._lightest_tp(n, top, max(self.checkpointing))
        return p is not None and p.mem.fits(usable)

    def _families(self, n: int, usable: int, tp: int, out: list[_Plan]) -> None:
        shardings = ("none",) if n == tp * self.base.pipeline_parallel else self.shardings
        for s in shardings:
            for ck in self.checkpointing:
                self.counter.candidates += 1
                p = self.plan(n, s, ck, tp)
                if p is not None and p.mem.fits(usable):
                    if all(p is not q for q in out):
                        out.append(p)
                    break

    def lightest(self, n: int, node: int = 1) -> _Plan | None:
        """The smallest-footprint configuration allowed at ``n`` GPUs (what an exclusion quotes)."""
        best: _Plan | None = None
        groups = self._groups(n, node)
        for tp in groups if self.tensor_parallel_fixed or len(groups) < 2 else (groups[0], groups[-1]):
            # without TP every family; with it the largest degree, most sharded (the lightest)
            shardings = self.shardings if tp == 1 else self.shardings[-1:]
            for s in ("none",) if n == tp * self.base.pipeline_parallel else shardings:
                for ck in self.checkpointing:
                    p = self.plan(n, s, ck, tp)
                    if p is not None and (
                        best is None or p.mem.device_memory_band.high < best.mem.device_memory_band.high
                    ):
                        best = p
        return best

    # ---- per GPU ----------------------------------------------------------------------------

    def bound(self, gpu: GpuSpec, cap: int) -> float | None:
        """A lower bound on this GPU's objective value from the roofline alone: a trained token
        costs at least ``4 N`` FLOPs (forward ``2 N``, backward through the activations ``2 N``;
        ``6 N`` with weight gradients), run at the dense peak on every GPU allowed. None where
        the objective has no such bound (prices) or a figure is missing."""
        peak = gpu.peak_for(self.base.precision) or gpu.peak_for("bf16")
        if not peak:
            return None
        flops = 4.0 * float(self.job.model.active_params)
        if self.q.objective == "fastest":
            s_per_token = flops / (cap * peak * 1e12)
            return self.job.tokens * s_per_token / 3600.0 if self.job.tokens else 1e6 * s_per_token
        if self.q.objective == "perf_per_watt" and gpu.tdp_w:
            return gpu.tdp_w * flops / (peak * 1e12)  # W per (token/s) on one GPU, perfectly used
        gpu_hours_per_token = flops / (peak * 1e12) / 3600.0
        rate = self._gpu_hour_floor(gpu)
        if rate is None:
            return None
        if self.q.objective == "cheapest" and self.job.tokens:
            return rate * gpu_hours_per_token * self.job.tokens  # the run's cost
        return rate * gpu_hours_per_token * 1e6  # per million tokens trained

    def _may_win(self, gpu: GpuSpec, first: Option) -> bool:
        """Whether more counts could bring this GPU into the answer: a lower bound on the cost at
        any count (the first plan's compute GPU-time, which more GPUs doing the same per-GPU
        work cannot shrink, at the lowest GPU-hour price) under the ``limit``-th value found."""
        rate = self._gpu_hour_floor(gpu)
        value = objective_value(first, self.q.objective)
        if rate is None or value is None or first.quote is None or first.quote.per_hour <= 0:
            return False
        if self.threshold is None:
            return True
        t = first.est.time
        compute = float(t.time_shares.get("compute", 1.0)) if t is not None else 1.0
        floor = value * compute * rate * first.gpu_count / first.quote.per_hour
        return floor < self.threshold

    def _gpu_hour_floor(self, gpu: GpuSpec) -> float | None:
        """The lowest price of one GPU-hour of ``gpu`` any plan of it can pay (rented or owned)."""
        return dep.gpu_hour_floor(self.data, self.q, gpu)

    def screen(self, gpu: GpuSpec, cap: int) -> Exclusion | None:
        """The memory verdict alone (breakdowns are shared, so this is cheap): the exclusion a
        GPU gets when nothing fits, else None. One GPU, and the largest count (a sharded
        breakdown only shrinks with the count, DDP's does not change), decide it."""
        usable = int(gpu.fit_memory_bytes or 0)
        counts = self.counts(cap, gpu)
        node = self._node(gpu)
        if any(self.fitting(n, usable, node) for n in {counts[0], counts[-1]} if counts):
            return None
        found = self.options(gpu, cap)
        return found if isinstance(found, Exclusion) else None

    def options(self, gpu: GpuSpec, cap: int) -> tuple[Option, list[Option]] | Exclusion:
        """This GPU's plan for the objective, and every other plan timed (the frontier's)."""
        usable = int(gpu.fit_memory_bytes or 0)
        counts = self.counts(cap, gpu)
        node = self._node(gpu)
        i0 = next((i for i, n in enumerate(counts) if self.fitting(n, usable, node)), None)
        if i0 is None:
            return self._too_small(gpu, counts, usable)
        n0 = counts[i0]
        self.fewest[gpu.slug] = n0
        timed = _Timed(self, gpu, usable)
        missing = self._missing_figure(gpu)
        deadline = self.q.constraints.deadline_hours
        # fastest without a deadline starts at the largest count (the fewest is rarely kept)
        start = counts[-1] if self.q.objective == "fastest" and deadline is None else n0
        first = (timed.best(start) or timed.best(n0)) if missing is None else None
        if first is None:
            plan = self.fitting(n0, usable, node)[0]
            return Exclusion(
                gpu,
                Reason(
                    "NO_TIME_ESTIMATE",
                    {
                        "gpu": gpu.name or gpu.slug,
                        "gpu_count": n0,
                        "needed_gib": _gib(plan.mem.device_memory_band.high),
                        "usable_gib": _gib(usable),
                        "missing": missing or self.unsourced.get(gpu.slug, "a figure the time model needs"),
                    },
                ),
            )
        ladder = counts[i0:]
        if deadline is not None:
            _toward_deadline(timed, ladder, deadline)
        if self.q.objective == "fastest":
            _fastest(timed, ladder, self._node(gpu))
        cost = self.q.objective in COST_OBJECTIVES and self._may_win(gpu, first)
        if cost or bounded(self.q):
            for n in _doubling(ladder, self._node(gpu), dep.instance_sizes(self.data, self.q, gpu)):
                timed.best(n)  # GPU-hours need not grow with the count (fewer optimizer steps)
        found = timed.all()
        primary = _choose(found, self.q.objective, deadline, lambda o: admitted(o, self.q, self.data))
        if primary is None:
            fastest = min(found, key=lambda o: (o.time_value, o.gpu_count))
            return self._misses_deadline(gpu, fastest, cap, max(o.gpu_count for o in found))
        return self._explained(gpu, self._said(primary), usable, n0), [o for o in found if o is not primary]

    def faster(self, o: Option, cap: int) -> list[Option]:
        """Plans on ``o``'s GPU at about doubling counts above it (the frontier's faster points,
        asked for when the answer's first plan runs longer than :data:`LONG_RUN_HOURS`)."""
        usable = int(o.gpu.fit_memory_bytes or 0)
        ladder = [n for n in self.counts(cap, o.gpu) if n >= o.gpu_count]
        timed = _Timed(self, o.gpu, usable)
        for n in _doubling(ladder, self._node(o.gpu)) if len(ladder) > 1 else []:
            timed.best(n)
        return timed.all()

    def _missing_figure(self, gpu: GpuSpec) -> str | None:
        if not gpu.bandwidth_gb_per_s:
            return "memory bandwidth"
        if not (gpu.peak_for(self.base.precision) or gpu.peak_for("bf16")):
            return f"{self.base.precision} tensor peak"
        return None

    def _too_small(self, gpu: GpuSpec, counts: list[int], usable: int) -> Exclusion:
        """Nothing fits at any count tried: the lightest configuration at the largest count."""
        top = counts[-1] if counts else 1
        light = self.lightest(top, self._node(gpu))
        single = self.lightest(1)
        params: dict[str, Any] = {"gpu": gpu.name or gpu.slug, "usable_gib": _gib(usable), "gpu_count": top}
        if light is not None:
            params.update(
                needed_gib=_gib(light.mem.device_memory_band.high),
                sharding=light.cfg.sharding,
                gradient_checkpointing=light.cfg.gradient_checkpointing,
                tensor_parallel=light.cfg.tensor_parallel,
            )
        if single is not None and top > 1:
            params["single_gpu_needed_gib"] = _gib(single.mem.device_memory_band.high)
        return Exclusion(gpu, Reason("MEMORY_INSUFFICIENT", params))

    def _misses_deadline(self, gpu: GpuSpec, fastest: Option, cap: int, largest: int) -> Exclusion:
        """No count meets the deadline: the fastest plan found is quoted with the largest count
        tried (whole nodes may stop short of ``max_gpus``), and kept for the answer that says no
        plan meets it."""
        assert fastest.hours_band is not None
        return Exclusion(
            gpu,
            Reason(
                "MISSES_DEADLINE",
                {
                    "gpu": gpu.name or gpu.slug,
                    "gpu_count": fastest.gpu_count,
                    "hours_high": round(fastest.hours_band[1], 1),
                    "hours": round(fastest.hours or 0.0, 1),
                    "deadline_hours": self.q.constraints.deadline_hours,
                    "max_gpus": cap,
                    "largest_tried": largest,
                },
            ),
            plan=self._said(fastest),
        )

    def _explained(self, gpu: GpuSpec, primary: Option, usable: int, n0: int) -> Option:
        """The deadline met and the single GPU too small, said on the chosen plan."""
        deadline = self.q.constraints.deadline_hours
        if deadline is not None and primary.hours_band is not None:
            met = Reason(
                "MEETS_DEADLINE", {"hours_high": round(primary.hours_band[1], 1), "deadline_hours": deadline}
            )
            primary = replace(primary, reasons=(*primary.reasons, met))
        if n0 > 1:
            single = self.lightest(1)
            if single is not None:
                small = Reason(
                    "SINGLE_GPU_TOO_SMALL",
                    {
                        "gpu": gpu.name or gpu.slug,
                        "needed_gib": _gib(single.mem.device_memory_band.high),
                        "usable_gib": _gib(usable),
                    },
                )
                primary = replace(primary, reasons=(small, *primary.reasons))
        return primary

    def _option(self, gpu: GpuSpec, plan: _Plan, usable: int) -> Option | None:
        cfg = on_pool(plan.cfg, gpu, self.q.constraints)  # the pool's nodes and network, for the collectives
        cfg = dep.on_rental(self.data, self.q, gpu, cfg)  # else the rented instance's network
        job = replace(self.job, config=cfg, solve_for=None)
        measured = self.data.measured(gpu, job) if self.data.measured is not None else None
        self.counter.timed += 1
        try:
            on = measured_elsewhere(self.data, job)
            est = estimate(gpu, job, self.data.calibrations, measured, breakdown=plan.mem, measured_on=on)
        except (InvalidConfiguration, MissingFigure):
            return None
        t = est.time
        if t is None:
            figure = next(
                (w.params.get("figure") for w in est.warnings if w.code == "no_time_estimate"), None
            )
            if figure:  # the figure the exclusion names
                self.unsourced[gpu.slug] = str(figure)
        if t is None or not est.memory.fits:
            return None
        n = cfg.gpu_count
        nodes, per = _placement(gpu, n, self.q.constraints)
        hours = t.time_to_train_s / 3600.0 if t.time_to_train_s else None
        hb = t.time_to_train_band
        hours_band = (hb.low / 3600.0, hb.high / 3600.0) if hb is not None else None
        deploy = dep.deploy_shape(gpu, nodes, per, tensor_parallel=cfg.tensor_parallel, sharding=cfg.sharding)
        priced = dep.price_plan(self.data, self.q, gpu, deploy, hours=hours, hours_band=hours_band)
        quote, hourly = priced.quote, priced.hourly
        tps = t.tokens_per_s
        time_value = hours if hours is not None else (1e6 / tps if tps > 0 else math.inf)
        run: tuple[float, float, float] | None = None
        cpm = None
        if hourly is not None:
            if hours is not None and hours_band is not None:
                rc = run_cost(
                    hourly, hours, hours_low=min(hours_band[0], hours), hours_high=max(hours_band[1], hours)
                )
                run = (rc.low, rc.amount, rc.high)
            if tps > 0:
                cpm = cost_per_million_tokens(
                    hourly.per_hour, capacity_tokens_per_s=tps, served_tokens_per_s=tps
                )
        return Option(
            gpu=gpu,
            gpu_count=n,
            nodes=nodes,
            gpus_per_node=per,
            est=est,
            memory_high_bytes=int(plan.mem.device_memory_band.high),
            usable_bytes=usable,
            quote=quote,
            hours=hours,
            hours_band=hours_band,
            tokens_per_s=tps,
            power_w=gpu.tdp_w * n if gpu.tdp_w else None,
            provenance=t.provenance,
            time_value=time_value,
            objective_value=None,
            u=ratio_half_width(t),
            run_cost=run,
            cost_per_million_tokens=cpm,
            needs_nvlink=deploy.needs_gpu_link,
            tco=priced.tco,
            network=priced.network,
            price_missing=priced.missing,
        )

    def _said(self, o: Option) -> Option:
        """``o`` with why this plan: built only for the plans an answer may show (the chosen
        plan, the fastest plan that misses a deadline), not for every plan timed."""
        plan = _Plan(cast(TrainConfig, o.train), o.est.memory.estimate)
        reasons = self._reasons(o.gpu, plan, o.usable_bytes, o.est.time, o.nodes, o.gpus_per_node)
        return replace(o, reasons=(*reasons, *o.reasons))

    def _reasons(self, gpu: GpuSpec, plan: _Plan, usable: int, t: Any, nodes: int, per: int) -> list[Reason]:
        """Why this plan: it fits (with the headroom), sharding or checkpointing needed to fit,
        more than one node, a measured figure, what bounds its speed."""
        cfg = plan.cfg
        n = cfg.gpu_count
        reasons = [
            Reason(
                "FITS",
                {
                    "gpu": gpu.name or gpu.slug,
                    "gpu_count": n,
                    "needed_gib": _gib(plan.mem.device_memory_band.high),
                    "usable_gib": _gib(usable),
                    "headroom_gib": _gib(usable - plan.mem.device_memory_band.high),
                },
            )
        ]
        if cfg.sharding in ("fsdp", "zero3") and n > 1:
            ddp = self.plan(n, "ddp", cfg.gradient_checkpointing, cfg.tensor_parallel)
            if ddp is not None and not ddp.mem.fits(usable):
                reasons.append(
                    Reason(
                        "SHARDED_TO_FIT",
                        {
                            "sharding": cfg.sharding,
                            "gpu_count": n,
                            "ddp_needed_gib": _gib(ddp.mem.device_memory_band.high),
                            "usable_gib": _gib(usable),
                        },
                    )
                )
        if cfg.gradient_checkpointing and not self.base.gradient_checkpointing:
            off = self.plan(n, cfg.sharding, False, cfg.tensor_parallel)
            if off is not None:
                reasons.append(
                    Reason(
                        "CHECKPOINTING_TO_FIT",
                        {
                            "needed_without_gib": _gib(off.mem.device_memory_band.high),
                            "usable_gib": _gib(usable),
                        },
                    )
                )
        if cfg.tensor_parallel > 1 and not self.tensor_parallel_fixed:
            reasons.append(self._tp_reason(cfg, usable))
        if nodes > 1:
            reasons.append(dep.multi_node_reason(nodes, per, t.network, cfg.rdma, self.q, gpu))
        if t.provenance == "measured":
            reasons.append(Reason("MEASURED_HERE", {"gpu": gpu.name or gpu.slug}))
        reasons.append(bound_reason(t.bound, t.mfu, t.time_shares))
        return reasons

    def _tp_reason(self, cfg: TrainConfig, usable: int) -> Reason:
        """Tensor parallelism is tried only where no plan without it fits: what the lightest
        plan without it needs at the same count."""
        n, ck = cfg.gpu_count, cfg.gradient_checkpointing
        without = [
            p.mem.device_memory_band.high
            for s in (("none",) if n == 1 else self.shardings)
            for c in self.checkpointing
            if (p := self.plan(n, s, c)) is not None
        ]
        return Reason(
            "TENSOR_PARALLEL_TO_FIT",
            {
                "tensor_parallel": cfg.tensor_parallel,
                "data_parallel": cfg.data_parallel,
                "gpu_count": n,
                "gradient_checkpointing": ck,
                "without_needed_gib": _gib(min(without)) if without else None,
                "usable_gib": _gib(usable),
                "global_batch": self.global_batch if not without and self.global_batch_held else None,
            },
        )

    # ---- what-ifs -----------------------------------------------------------------------------

    def what_ifs(self, options: Sequence[Option], excluded: Sequence[Exclusion]) -> list[WhatIf]:
        """Changes the caller ruled out that fit the job on fewer GPUs (:mod:`.training_whatifs`)."""
        return training_what_ifs(self, options, excluded)
