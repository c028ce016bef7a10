"""Serving candidates: weight format x tensor-parallel degree x replicas against the targets."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.engine_support import served_format
from service.core.estimation.estimate import Estimate, Job, estimate
from service.core.estimation.memory import InferenceConfig, MemoryEstimate, estimate_inference
from service.core.estimation.network import SPANNING_ENGINES
from service.core.estimation.serving import (
    CONTINUOUS_EFFICIENCIES,
    ENGINE_CLASSES,
    OPS_PER_DECODE_STEP,
    OPS_PER_LAYER_DECODE,
    serve_at_rate,
)
from service.core.estimation.serving_disagg_layout import Disaggregation
from service.core.pricing.cost import cost_per_million_tokens
from service.core.recommend import serving_nodes as sn
from service.core.recommend.candidates import _Counter, _gib, _pool_shape
from service.core.recommend.deployment import price_plan
from service.core.recommend.models import Exclusion, Option, RecommendData, RecommendQuestion, WhatIf
from service.core.recommend.ranking import _rank_again, admitted, bounded, ratio_half_width
from service.core.recommend.reasons import Reason
from service.core.recommend.replicas import (
    GUESS_MARGIN,
    _fastest_replicas,
    best_tpot,
    fewest_from,
    replicas_needed,
)
from service.core.recommend.serving_clients import in_flight_memory, replica_admits, size_for_clients
from service.core.recommend.serving_exclusion import no_plan
from service.core.recommend.serving_formats import formats_for
from service.core.recommend.serving_layouts import layout_options
from service.core.recommend.serving_memory import _memory_answer, _serving_memory, fp8_what_ifs
from service.core.recommend.serving_misses import closest_miss, headroom, latency_miss
from service.core.recommend.serving_offline import (
    deadline_met,
    offline_hours,
    offline_in_flight,
    offline_replicas,
    offline_run_cost,
)
from service.core.recommend.serving_order import paid_gpus, settle_ties, within_gpu
from service.core.recommend.serving_price import affordable, serving_layout
from service.core.recommend.serving_published import published_record, published_run


class _ServingSearch:
    def __init__(self, job: Job, q: RecommendQuestion, data: RecommendData, counter: _Counter) -> None:
        assert isinstance(job.config, InferenceConfig)
        self.job = job
        self.q = q
        self.data = data
        self.counter = counter
        self.base: InferenceConfig = job.config
        self.serving = job.serving
        self.continuous = ENGINE_CLASSES[self.base.engine].batching == "continuous"
        self.rate = self.serving.requests_per_s if self.serving is not None else None
        self.closed = (
            self.continuous and self.rate is None and bool(self.serving and self.serving.concurrency)
        )
        """A closed loop of ``concurrency`` clients over the replicas (:mod:`.serving_clients`):
        a GPU fits where one replica holds one sequence, as at a rate."""
        self.offline = bool(
            self.serving and self.serving.offline
        )  # a serving question is a continuous engine's
        """A batch of ``tokens`` output tokens (:mod:`.serving_offline`)."""
        self.missed: dict[str, tuple[Option, Reason]] = {}
        """By slug: the fastest plan that misses the deadline and why (shown where no plan meets it)."""
        self._mem: dict[tuple[str, int], MemoryEstimate] = {}
        self.spanning: set[str] = set()  # GPUs (slugs) whose replicas span nodes (:meth:`must_span`)
        self.host_floor_s = 0.0
        """Eager generate launches every op of a decode step from Python: the host profile's
        dispatch cost per op bounds TPOT from below on every GPU alike (``service.core.estimation.serving``)."""
        if not self.continuous:
            host = data.calibrations.host_profile("llm-infer", self.base.precision)
            m = self.base.model
            if host is not None and isinstance(m, DecoderSpec):
                self.host_floor_s = host.dispatch_s * (
                    m.num_layers * OPS_PER_LAYER_DECODE + OPS_PER_DECODE_STEP
                )
        self._rejected: dict[str, Reason] = {}
        self.threshold: float | None = None  # set by the caller; the serving search does not use it
        cons = q.constraints
        self.eager = cons.max_band_pct is not None or cons.min_provenance is not None
        """The constraints read a plan's band or provenance: each plan gets its full estimate
        when it is made (else only the plans returned do, in :meth:`finish`)."""

    def formats_on(self, gpu: GpuSpec) -> tuple[str, ...]:
        """The weight formats tried on ``gpu`` (:func:`.serving_formats.formats_for`): the served
        format of the checkpoint where the workload names none (:func:`served_format`)."""
        b = self.base
        stated = "quant_method" in self.job.stated
        own = served_format(b.quant_method, stated, b.kv_cache_dtype, b.engine, gpu)
        return formats_for(
            own, self.q.constraints.allow_quantization, b.engine, b.kv_cache_dtype, gpu, stated
        )

    def memory(self, fmt: str, tp: int) -> MemoryEstimate:
        key = (fmt, tp)
        if key not in self._mem:
            self.counter.memory += 1
            one = replace(self.base, quant_method=fmt, tensor_parallel=tp, replicas=1)
            self._mem[key] = estimate_inference(replace(one, batch_size=1) if self.closed else one)
        return self._mem[key]

    def tp_degrees(self, gpu: GpuSpec, cap: int) -> tuple[list[int], int]:
        """TP degrees that split the heads (:meth:`~.DecoderSpec.tp_splits_heads`) up to the NVLink
        domain (8 on a PCIe node) and the free GPUs of one node (the second value); where none
        holds the model, whole multiples of the node: one replica over several nodes."""
        node = gpu.node
        top = max(node.nvlink_domain_size, 1) if node.nvlink_topology == "switched" else 8
        per_node = top
        shape = _pool_shape(gpu, self.q.constraints)
        if shape is not None:
            per_node = shape[0]
        if self.q.constraints.nvlink_required and node.nvlink_topology == "pairwise":
            top = min(top, 2)
        out = [k for k in sn.powers_of_two(min(top, cap, 64)) if self.base.model.tp_splits_heads(k)]
        if self.must_span(gpu, out, per_node):
            self.spanning.add(gpu.slug)
            out += [
                k for k in sn.powers_of_two(min(cap, 64)) if k > per_node and self.placeable(gpu, k, per_node)
            ]
        return out, per_node

    def must_span(self, gpu: GpuSpec, tps: list[int], per_node: int) -> bool:
        """No weight format at any TP degree inside one node holds a replica: the only serving
        left is over several nodes (searched only then: slower, and no cheaper)."""
        if self.base.engine not in SPANNING_ENGINES or self.base.disaggregated or self.base.expert_parallel:
            return False
        usable, inside = int(gpu.fit_memory_bytes or 0), [tp for tp in tps if tp <= per_node]
        return not any(self.memory(fmt, tp).fits(usable) for fmt in self.formats_on(gpu) for tp in inside)

    def placeable(self, gpu: GpuSpec, tp: int, per_node: int) -> bool:
        """Inside one node, or over whole nodes where nothing fits one (:func:`.serving_nodes.spans`)."""
        free = sn.free_nodes(gpu, self.q.constraints, per_node)
        return tp <= per_node or (gpu.slug in self.spanning and sn.spans(self.base.model, tp, per_node, free))

    def bound(self, gpu: GpuSpec, cap: int) -> float | None:
        """A lower bound on the objective from the roofline: every decode step streams the
        weights a GPU holds (``fastest``: TPOT >= weight bytes per GPU / bandwidth at the largest
        TP that fits and can be placed); ``perf_per_watt`` at a request rate: at least one TP
        group of the smallest degree that fits draws its board power for the same tokens."""
        if not gpu.bandwidth_gb_per_s:
            return None
        usable = int(gpu.fit_memory_bytes or 0)
        tps, per_node = self.tp_degrees(gpu, cap)
        fitting = [
            (fmt, tp)
            for fmt in self.formats_on(gpu)
            for tp in tps
            if self.placeable(gpu, tp, per_node) and self.memory(fmt, tp).fits(usable)
        ]
        if not fitting:
            return None
        m = self.base.model
        active = float(m.active_params) / float(m.total_params) if m.total_params else 1.0
        if self.q.objective == "fastest":
            stream = min(
                float(self.memory(fmt, tp).persistent.get("weights", 0))
                * active
                / (gpu.bandwidth_gb_per_s * 1e9)
                for fmt, tp in fitting
            )
            return max(stream, self.host_floor_s)
        if self.q.objective == "perf_per_watt" and gpu.tdp_w and self.rate and self.serving is not None:
            return min(tp for _f, tp in fitting) * gpu.tdp_w / (self.rate * self.serving.workload.output_len)
        return None

    def screen(self, gpu: GpuSpec, cap: int) -> Exclusion | None:
        """Memory and placement alone: ``MEMORY_INSUFFICIENT`` when no TP degree holds a replica,
        ``NO_PLACEMENT`` when the ones that do cannot be placed, else None."""
        usable = int(gpu.fit_memory_bytes or 0)
        tps, per_node = self.tp_degrees(gpu, cap)
        fits = [(fmt, tp) for fmt in self.formats_on(gpu) for tp in tps if self.memory(fmt, tp).fits(usable)]
        if fits and any(self.placeable(gpu, tp, per_node) for _f, tp in fits):
            return None
        found = self.options(gpu, cap)
        return found if isinstance(found, Exclusion) else None

    def options(self, gpu: GpuSpec, cap: int) -> tuple[Option, list[Option]] | Exclusion:
        usable = int(gpu.fit_memory_bytes or 0)
        tps, per_node = self.tp_degrees(gpu, cap)
        candidates: list[Option] = []
        smallest_need: tuple[float, int, str] | None = None
        placement_block: int | None = None
        latency_miss: Reason | None = None
        over_limit: Reason | None = None
        no_time = not gpu.bandwidth_gb_per_s or not (gpu.peak_for("bf16") or gpu.peak_for("fp16"))
        fastest = self.q.objective == "fastest"
        targets = self.serving is not None and bool(self.serving.ttft_target_s or self.serving.tpot_target_s)
        for fmt in self.formats_on(gpu):
            for tp in reversed(tps) if fastest else tps:
                self.counter.candidates += 1
                mem = self.memory(fmt, tp)
                need = mem.device_memory_band.high
                if (
                    fastest
                    and not self.offline  # a batch's time is not its TPOT
                    and (ok := self._kept(candidates))
                    and self._tpot_floor(gpu, mem) > best_tpot(ok)
                ):
                    continue  # even streaming the weights alone is slower than a plan found (that is kept)
                if not mem.fits(usable):
                    if smallest_need is None or need < smallest_need[0]:
                        smallest_need = (need, tp, fmt)
                    continue
                if not self.placeable(gpu, tp, per_node):
                    placement_block = tp if placement_block is None else min(placement_block, tp)
                    continue
                if no_time:
                    if smallest_need is None or smallest_need[0] > 0:
                        smallest_need = (-need, tp, fmt)  # marks "fits" for the exclusion
                    continue
                fewest = (
                    None
                    if fastest or self.offline  # a larger TP lowers TPOT (holds more sequences): every degree
                    else min(
                        (paid_gpus(o) for o in candidates if o.est.job.config.quant_method == fmt),  # type: ignore[union-attr]
                        default=None,
                    )
                )
                if fewest is not None and tp > fewest:
                    break  # one replica of this TP already needs more GPUs than the best plan
                found = self._plan(gpu, fmt, tp, cap, usable, mem, fewest, per_node)
                if isinstance(found, Reason):
                    if found.code in ("MISSES_TTFT", "MISSES_TPOT"):
                        latency_miss = closest_miss(latency_miss, found)
                    elif found.code in ("OVER_GPU_LIMIT", "MISSES_DEADLINE"):
                        over_limit = over_limit or found
                    continue
                if found is not None:
                    candidates.append(found)
                if not (self.continuous and self.rate is not None) and not (
                    fastest or targets or self.offline
                ):
                    break  # no load to size and nothing to meet: the smallest TP group that fits
        one_node = [tp for tp in tps if tp <= per_node]
        candidates += layout_options(self, gpu, cap, one_node, per_node, candidates)
        if not candidates:
            return no_plan(
                self,
                gpu,
                usable,
                tps,
                per_node,
                smallest_need,
                placement_block,
                over_limit or latency_miss,
                no_time,
            )
        candidates = settle_ties(self.q.objective, candidates, self.full)
        candidates.sort(key=within_gpu(self.q.objective, self._kept(candidates) or candidates))
        kept = self._kept(candidates)
        first = kept[0] if kept else candidates[0]  # none kept: the exclusion says why
        return first, [o for o in candidates if o is not first]

    def _kept(self, candidates: list[Option]) -> list[Option]:
        """The plans the constraints keep (a budget, provenance or band limit), in order."""
        return [o for o in candidates if admitted(o, self.q, self.data)] if bounded(self.q) else candidates

    def _tpot_floor(self, gpu: GpuSpec, mem: MemoryEstimate) -> float:
        """TPOT of a plan is at least its weights per GPU streamed once (and the host floor)."""
        m = self.base.model
        active = float(m.active_params) / float(m.total_params) if m.total_params else 1.0
        weights = float(mem.persistent.get("weights", 0)) * active
        return (
            max(weights / (gpu.bandwidth_gb_per_s * 1e9), self.host_floor_s)
            if gpu.bandwidth_gb_per_s
            else 0.0
        )

    def _ok(self, r: Any) -> bool:
        s = self.serving
        if not r.stable or r.utilisation > 0.9:
            return False
        if s is not None and s.ttft_target_s is not None and r.ttft_s > s.ttft_target_s:
            return False
        return not (s is not None and s.tpot_target_s is not None and r.tpot_s > s.tpot_target_s)

    def _plan(
        self,
        gpu: GpuSpec,
        fmt: str,
        tp: int,
        cap: int,
        usable: int,
        mem: MemoryEstimate,
        fewest: int | None = None,
        per_node: int = 8,
    ) -> Option | Reason | None:
        """The fewest replicas of TP ``tp`` that meet the targets at the rate (None: not fewer
        GPUs than ``fewest``, found by a smaller TP of the same format); for ``fastest``, the
        fewest replicas within :data:`NEAR_TIE` of the lowest TPOT the GPU limit allows."""
        nodes = sn.replica_nodes(self.data, self.q, gpu, tp, per_node)
        cap = sn.span_cap(gpu, self.q.constraints, per_node, cap) if tp > per_node else cap
        cfg = replace(self.base, quant_method=fmt, tensor_parallel=tp, replicas=1, nodes=nodes)
        if self.continuous and self.rate is not None:
            sized = self._size_for_rate(gpu, cfg, tp, cap, fewest)
            if sized is None or isinstance(sized, Reason):
                return sized
            replicas, r = sized
            return self._option(gpu, fmt, tp, usable, mem, replace(cfg, replicas=replicas), r)
        if self.offline:
            reps = offline_replicas(self, gpu, cfg, tp, cap, mem)
            if isinstance(reps, Reason):
                if reps.code == "MISSES_DEADLINE":
                    self._missed(gpu, fmt, tp, usable, mem, replace(cfg, replicas=max(1, cap // tp)), reps)
                return reps
            return self._option(gpu, fmt, tp, usable, mem, replace(cfg, replicas=reps), None)
        if self.closed:
            clients = size_for_clients(self, gpu, fmt, tp, cap, fewest)
            if clients is None or isinstance(clients, Reason):
                return clients
            return self._option(gpu, fmt, tp, usable, clients[1], clients[0], None)
        return self._option(gpu, fmt, tp, usable, mem, cfg, None)

    def _missed(
        self,
        gpu: GpuSpec,
        fmt: str,
        tp: int,
        usable: int,
        mem: MemoryEstimate,
        cfg: InferenceConfig,
        why: Reason,
    ) -> None:
        """Keep the fastest plan of ``gpu`` that misses the deadline, with its reason."""
        made = self._option(gpu, fmt, tp, usable, mem, cfg, None)
        kept = self.missed.get(gpu.slug)
        if isinstance(made, Option) and (kept is None or made.time_value < kept[0].time_value):
            self.missed[gpu.slug] = (made, why)

    def _size_for_rate(
        self, gpu: GpuSpec, cfg: InferenceConfig, tp: int, cap: int, fewest: int | None
    ) -> tuple[int, Any] | Reason | None:
        """Replicas for the rate (exponential then binary search on the count, one queueing
        evaluation per step) and the queueing result of one replica at its share."""
        name = gpu.name or gpu.slug
        assert self.serving is not None
        w = self.serving.workload
        admits = replica_admits(gpu, cfg, w, tp)
        if isinstance(admits, Reason):
            return admits
        d, seqs = admits
        max_rep = max(1, cap // tp)
        rate = self.rate
        assert rate is not None
        one = cfg  # replicas=1: each replica takes rate / reps
        seen: dict[int, Any] = {}

        def ok(reps: int) -> bool:
            if reps not in seen:
                self.counter.timed += 1
                seen[reps] = serve_at_rate(one, gpu, rate / reps, w, CONTINUOUS_EFFICIENCIES, d)
            return self._ok(seen[reps])

        s = self.serving

        def lone_misses() -> Reason | None:
            """A lone request must meet the targets, else no replica count helps."""
            self.counter.timed += 1
            lone = serve_at_rate(cfg, gpu, 1e-6, w, CONTINUOUS_EFFICIENCIES, d)
            return latency_miss(self.serving, name, tp, lone.ttft_s, lone.tpot_s)

        over = Reason(
            "OVER_GPU_LIMIT",
            {"gpu": name, "tensor_parallel": tp, "max_gpus": cap, "replicas_needed_more_than": max_rep},
        )
        lo, hi = 0, 1
        # the replicas the decode throughput and the TPOT target allow at best (a bound up
        # to the iteration time's curvature, hence the margin): what cannot fit under the
        # GPU limit, or beat a smaller TP's plan, is not searched
        # gates and the floor use the count unrounded: rounded up, 1.04 replicas said 2 where
        # one served the rate, and a plan under the GPU limit was given up unevaluated
        least = replicas_needed(d, w, seqs, rate, s.tpot_target_s)
        guess = max(1, math.ceil(least))
        if least > max_rep * GUESS_MARGIN:  # unless no count helps: a lone request misses already
            return lone_misses() or Reason(
                "OVER_GPU_LIMIT", {**over.params, "replicas_at_least": math.ceil(least)}
            )
        floor = max(0, int(least / GUESS_MARGIN) - 1)  # taken as too few: the search starts there
        if fewest is not None:
            most = fewest // tp  # ties go to the larger TP (lower latency)
            if most < 1 or least > most * GUESS_MARGIN or not ok(most):
                return None
            hi, lo = most, min(floor, most - 1)
        else:
            hi = min(max_rep, guess)
            if ok(hi):
                lo = min(floor, hi - 1)
            elif hi >= max_rep:
                return lone_misses() or over
            else:
                lo, hi = hi, min(max_rep, hi * 2)
        while not ok(hi):
            lo = hi
            if hi >= max_rep:
                return lone_misses() or over
            hi = min(max_rep, hi * 2)
        hi = fewest_from(ok, lo, hi)
        if self.q.objective == "fastest":
            hi = _fastest_replicas(ok, seen, hi, affordable(self.data, self.q, gpu, tp, hi, max_rep))
        return hi, seen[hi]

    def _option(
        self,
        gpu: GpuSpec,
        fmt: str,
        tp: int,
        usable: int,
        mem: MemoryEstimate,
        cfg: InferenceConfig,
        r: Any,
    ) -> Option | Reason:
        """The option for ``cfg``: at a rate, ``r`` (one replica at its share of the rate)
        gives the fleet's latencies; otherwise the estimate does, and it is judged against the
        targets the same way (a closed loop that misses them is no option)."""
        name = gpu.name or gpu.slug
        replicas = cfg.replicas
        n = replicas * tp
        job = replace(self.job, config=cfg, solve_for=None)
        if self.closed and job.serving is not None:  # each replica's share of the clients
            job = replace(job, serving=replace(job.serving, concurrency=cfg.batch_size))
        nodes, per, deploy = serving_layout(gpu, cfg, tp, self.q.constraints)
        priced = price_plan(self.data, self.q, gpu, deploy)
        quote, hourly = priced.quote, priced.hourly
        full: Estimate | None = None
        if r is not None:
            assert self.serving is not None and self.rate is not None
            tpot, ttft, bound = r.tpot_s, r.ttft_s, r.bound
            served = self.rate * self.serving.workload.output_len
            held = getattr(r, "in_flight", 1.0)  # disaggregated: a decode replica's
            mem = in_flight_memory(self, cfg, held, mem, usable)
        else:
            got = self._estimated(gpu, job, mem, name, tp)
            if isinstance(got, Reason):
                return got
            full, (tpot, ttft, served, bound) = got
            if self.offline and full.serving is not None:  # the sequences a full replica holds
                held = offline_in_flight(cfg, full.serving.concurrency_per_replica)
                mem = in_flight_memory(self, cfg, held, mem, usable)
        placeholder = (
            full if full is not None else Estimate(job=job, gpu=gpu, memory=_memory_answer(mem, usable))
        )
        cpm = (
            cost_per_million_tokens(hourly.per_hour, capacity_tokens_per_s=served, served_tokens_per_s=served)
            if hourly is not None and served > 0
            else None
        )
        hours = offline_hours(full) if self.offline else None
        made = Option(
            gpu=gpu,
            gpu_count=n,
            nodes=nodes,
            gpus_per_node=per,
            est=placeholder,
            memory_high_bytes=int(mem.device_memory_band.high),
            usable_bytes=usable,
            quote=quote,
            hours=hours[0] if hours else None,
            hours_band=hours[1] if hours else None,
            tokens_per_s=served,
            power_w=gpu.tdp_w * n if gpu.tdp_w else None,
            provenance=full.serving.provenance
            if full is not None and full.serving is not None
            else ENGINE_CLASSES[cfg.engine].provenance,
            time_value=hours[0] if hours else tpot if math.isfinite(tpot) else math.inf,
            objective_value=None,
            u=ratio_half_width(full.serving) if full is not None and full.serving is not None else 0.0,
            reasons=self._reasons(gpu, fmt, tp, usable, mem, replicas, ttft, tpot, bound, cfg.disaggregated)
            + published_run(full, name)
            + published_record(cfg, gpu, name, full)
            + deadline_met(self.q.constraints.deadline_hours, hours)
            + sn.across_nodes(cfg, gpu),
            cost_per_million_tokens=cpm,
            run_cost=offline_run_cost(hourly, hours),
            needs_nvlink=deploy.needs_gpu_link,
            tco=priced.tco,
            network=priced.network,
            price_missing=priced.missing,
        )
        return self.full(made, mem) if self.eager else made

    def _estimated(
        self, gpu: GpuSpec, job: Job, mem: MemoryEstimate, name: str, tp: int
    ) -> tuple[Estimate, tuple[float, float, float, Any]] | Reason:
        """A plan without a rate: the estimate's latencies, judged against the targets."""
        self.counter.timed += 1
        measured = self.data.measured(gpu, job) if self.data.measured is not None else None
        try:
            full = estimate(gpu, job, self.data.calibrations, measured, breakdown=mem)
        except (InvalidConfiguration, MissingFigure):
            return Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": "a figure the time model needs"})
        sv = full.serving
        if sv is None:
            return Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": "a figure the time model needs"})
        missed = latency_miss(
            self.serving, name, tp, sv.ttft_s, sv.tpot_s, job.serving.concurrency if job.serving else None
        )
        if missed is not None:
            return missed
        return full, (sv.tpot_s, sv.ttft_s, sv.output_tokens_per_s, sv.decode_bound)

    def _reasons(
        self,
        gpu: GpuSpec,
        fmt: str,
        tp: int,
        usable: int,
        mem: MemoryEstimate,
        replicas: int,
        ttft: float,
        tpot: float,
        bound: str,
        pools: Disaggregation | None = None,
    ) -> tuple[Reason, ...]:
        name = gpu.name or gpu.slug
        headroom = _gib(usable - mem.device_memory_band.high)
        fits = {"gpu": name, "gpu_count": replicas * tp, "tensor_parallel": tp, "headroom_gib": headroom}
        reasons = [Reason("FITS", {**fits, **_serving_memory(mem, usable)})]
        if tp > 1:
            alone = self.memory(fmt, 1)
            if not alone.fits(usable):
                reasons.append(
                    Reason("SINGLE_GPU_TOO_SMALL", {"gpu": name, **_serving_memory(alone, usable)})
                )
        s = self.serving
        if s is not None and (s.ttft_target_s or s.tpot_target_s) and (self.rate or s.concurrency):
            reasons.append(
                Reason(
                    "MEETS_TARGETS",
                    {
                        # split pools are a prefill and a decode pool, not replicas
                        **(
                            {"prefill_gpus": pools.prefill_gpus, "decode_gpus": pools.decode_gpus}
                            if pools is not None
                            else {"replicas": replicas, "tensor_parallel": tp}
                        ),
                        "rate": self.rate,
                        "concurrency": None
                        if self.rate or not s.concurrency
                        else -(-s.concurrency // replicas),
                        "ttft_ms": round(ttft * 1e3, 1),
                        "tpot_ms": round(tpot * 1e3, 2),
                        "ttft_target_ms": round(s.ttft_target_s * 1e3, 1) if s.ttft_target_s else None,
                        "tpot_target_ms": round(s.tpot_target_s * 1e3, 2) if s.tpot_target_s else None,
                    },
                )
            )
        if bound == "memory":
            reasons.append(Reason("BANDWIDTH_BOUND", {"bandwidth_gb_per_s": gpu.bandwidth_gb_per_s}))
        elif bound == "compute":
            reasons.append(Reason("COMPUTE_BOUND", {}))
        if fmt != "none":
            reasons.append(Reason("QUANTISED_WEIGHTS", {"quant_method": fmt}))
        return tuple(reasons)

    def finish(self, options: Sequence[Option]) -> list[Option]:
        """The full estimate (bands, provenance, accuracy, capacity) for the options returned."""
        return _rank_again([self.full(o) for o in options], self.q.objective)

    def full(self, o: Option, mem: MemoryEstimate | None = None) -> Option:
        """``o`` with its full estimate (``mem``: the plan's memory breakdown, where it is not
        the aggregated one of its format and TP degree); ``o`` itself where it has one already
        or none can be made."""
        if o.est.serving is not None:
            return o
        job = o.est.job
        assert isinstance(job.config, InferenceConfig)
        measured = self.data.measured(o.gpu, job) if self.data.measured is not None else None
        breakdown = mem or self.memory(job.config.quant_method, job.config.tensor_parallel)
        try:
            est = estimate(o.gpu, job, self.data.calibrations, measured, breakdown=breakdown)
        except (InvalidConfiguration, MissingFigure):
            return o
        sv = est.serving
        if sv is None:
            return o
        return replace(
            o, est=est, provenance=sv.provenance, u=ratio_half_width(sv), reasons=o.reasons + headroom(sv)
        )

    def what_ifs(self, options: Sequence[Option], excluded: Sequence[Exclusion]) -> list[WhatIf]:
        """FP8 weights where quantisation was not allowed: fewer GPUs per replica."""
        if self.q.constraints.allow_quantization or self.base.quant_method != "none":
            return []
        return fp8_what_ifs(options, self.memory)
