"""Solve-for targets of an estimate: the largest micro-batch, context or concurrency that fits and
the fewest GPUs."""

from __future__ import annotations

from dataclasses import replace

from service.core.catalog.models import (
    DecoderSpec,
    EncoderSpec,
)
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.estimate_answers import (
    Notice,
    SolveAnswer,
)
from service.core.estimation.estimate_inputs import (
    Job,
)
from service.core.estimation.memory import (
    BatchInferenceConfig,
    InferenceConfig,
    TrainConfig,
    estimate_inference,
    fewest_gpus,
    largest_context,
    largest_micro_batch,
    most_concurrent_sequences,
)
from service.core.estimation.network import spanning_degrees
from service.core.estimation.serving import (
    CONTINUOUS_EFFICIENCIES,
    ENGINE_CLASSES,
    ServingPlan,
    concurrency_cap,
    deployment,
    plan_min_gpus,
    tp_candidates,
)


def _context_capped(model_id: str, limit: int) -> Notice:
    return Notice(
        "context_capped_at_model_limit",
        f"{model_id} has max_position_embeddings {limit:,}: the answer is capped there, although memory would allow more",
        {"model": model_id, "limit": limit},
    )


def _solve(job: Job, usable: int, gpu: GpuSpec) -> tuple[SolveAnswer, list[Notice]]:
    """The job's solve-for target, one function per target, with the notices it raises."""
    target = job.solve_for
    assert target is not None
    c = job.config
    if isinstance(c, BatchInferenceConfig):
        raise InvalidConfiguration("solve_for", f"{target} is not modelled for encoder / CNN inference")
    if target == "max_micro_batch":
        return _max_micro_batch(c, usable), []
    if target == "max_context":
        return _max_context(job, c, usable)
    if target == "max_concurrency":
        return _max_concurrency(c, usable, gpu), []
    if isinstance(c, InferenceConfig):
        return _min_gpus_serving(job, c, usable, gpu), []
    return _min_gpus_training(job, c, usable)


def _max_micro_batch(c: TrainConfig | InferenceConfig, usable: int) -> SolveAnswer:
    """The largest per-GPU micro-batch that fits at the band's upper end (training only)."""
    if not isinstance(c, TrainConfig):
        raise InvalidConfiguration(
            "solve_for", "max_micro_batch applies to training; use max_concurrency for inference"
        )
    v = largest_micro_batch(c, usable)
    return SolveAnswer(
        "max_micro_batch",
        v,
        f"largest per-GPU micro-batch at seq_len {c.seq_len} that fits at the band's upper end",
    )


def _max_context(job: Job, c: TrainConfig | InferenceConfig, usable: int) -> tuple[SolveAnswer, list[Notice]]:
    """The longest sequence (training) or prompt (inference, output kept) that fits, capped at
    the model's own position limit -- memory may allow more than the model was trained for."""
    notices: list[Notice] = []
    v = largest_context(c, usable)
    what = (
        "training seq_len"
        if isinstance(c, TrainConfig)
        else f"prompt length with output_len {c.output_len} kept"
    )
    detail = f"longest {what} that fits (multiples of 128)"
    limit = _context_limit(job)
    cap = limit if isinstance(c, TrainConfig) else limit - c.output_len
    if limit and v > cap:
        v = max(0, cap)
        notices.append(_context_capped(job.model.id, limit))
        detail += f", capped at the model's max_position_embeddings ({limit:,})"
    return SolveAnswer("max_context", v, detail), notices


def _max_concurrency(c: TrainConfig | InferenceConfig, usable: int, gpu: GpuSpec) -> SolveAnswer:
    """Sequences one replica runs at once (inference only): a continuous-batching engine's
    scheduler limit and paged KV cache, else the concurrent sequences whose memory fits."""
    if not isinstance(c, InferenceConfig):
        raise InvalidConfiguration(
            "solve_for", "max_concurrency applies to inference; use max_micro_batch for training"
        )
    if ENGINE_CLASSES[c.engine].batching == "continuous" and gpu.bandwidth_gb_per_s:
        cap, _ = concurrency_cap(
            deployment(c, gpu),
            float(c.input_len),
            float(max(c.output_len, 1)),
            reserve_gib=CONTINUOUS_EFFICIENCIES.reserve_gib,
        )
        return SolveAnswer(
            "max_concurrency",
            max(0, cap),
            f"sequences of {c.input_len}+{c.output_len} tokens one replica runs "
            f"at once: {c.engine}'s scheduler limit and paged KV cache",
        )
    v = most_concurrent_sequences(c, usable)
    return SolveAnswer(
        "max_concurrency", v, f"concurrent sequences of {c.input_len}+{c.output_len} tokens that fit"
    )


def _min_gpus_training(job: Job, c: TrainConfig, usable: int) -> tuple[SolveAnswer, list[Notice]]:
    """The fewest GPUs that fit, sharding as needed. An amp_* job moved onto FSDP takes the
    mixed-precision policy unless the caller chose autocast; where the policy would need fewer
    GPUs than autocast, a notice says so (autocast over FSDP shards keeps every bf16 weight cast)."""
    notices: list[Notice] = []
    amp = c.precision.startswith("amp_")
    keep_autocast = "mixed_precision" in job.stated and c.mixed_precision == "autocast"
    mixed = "autocast" if keep_autocast else "fsdp_policy"
    found = fewest_gpus(c, usable, sharded_mixed_precision=mixed)
    if amp and (keep_autocast or (c.sharding == "fsdp" and c.mixed_precision == "autocast")):
        alt = fewest_gpus(
            replace(c, sharding="fsdp", mixed_precision="fsdp_policy")
            if c.gpu_count > 1 or c.sharding == "fsdp"
            else c,
            usable,
            sharded_mixed_precision="fsdp_policy",
        )
        if alt is not None and (found is None or alt[0] < found[0]):
            notices.append(_try_fsdp_policy(alt[0], None if found is None else found[0]))
    if found is None:
        return SolveAnswer("min_gpus", 0, "does not fit on any GPU count searched (up to 4096)"), notices
    n, _ = found
    shard = c.sharding if c.sharding not in ("none", "ddp") else "fsdp"
    how = shard if n > 1 else c.sharding
    if how == "fsdp" and amp:
        used = c.mixed_precision if c.sharding == "fsdp" else mixed
        how += " with " + (
            "MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)"
            if used == "fsdp_policy"
            else "torch.autocast"
        )
    return SolveAnswer("min_gpus", n, f"fewest GPUs that fit with sharding {how}"), notices


def _try_fsdp_policy(gpus: int, instead_of: int | None) -> Notice:
    return Notice(
        "try_fsdp_mixed_precision_policy",
        (
            f"with FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) it fits on {gpus} GPUs"
            + ("" if instead_of is None else f" instead of {instead_of}")
            + "; torch.autocast over FSDP shards keeps the whole model's bf16 weight casts until it exits"
        ),
        {"gpus": gpus} if instead_of is None else {"gpus": gpus, "instead_of": instead_of},
    )


def _context_limit(job: Job) -> int:
    """The model's own position limit (0: none known)."""
    m = job.model
    if isinstance(m, DecoderSpec | EncoderSpec):
        return int(m.max_position_embeddings)
    return 0


def _min_gpus_serving(job: Job, c: InferenceConfig, usable: int, gpu: GpuSpec) -> SolveAnswer:
    """Serving: with a request rate (continuous engines), the fewest ``replicas x TP`` GPUs that
    meet the p50 targets (:func:`~service.core.estimation.serving.plan_min_gpus`); otherwise the smallest
    TP group one copy of the model fits on."""
    q = job.serving
    if q is not None and q.requests_per_s is not None and gpu.bandwidth_gb_per_s:
        plan: ServingPlan | None = plan_min_gpus(
            c, gpu, q.requests_per_s, q.workload, q.ttft_target_s, q.tpot_target_s
        )
        if plan is None:
            return SolveAnswer(
                "min_gpus",
                0,
                f"no tensor-parallel degree of {gpu.slug} meets the targets at any rate, or the model "
                "does not fit (up to one node; over whole nodes for vllm and sglang where no node holds it)",
            )
        r = plan.estimate
        tried = ", ".join(
            f"TP{tp}: {reps} x {per:.2f} req/s"
            if 0 < reps <= 4 * plan.replicas
            else f"TP{tp}: {per:.2f} req/s per replica"
            if reps
            else f"TP{tp}: misses the targets"
            for tp, reps, per in plan.considered
        )
        return SolveAnswer(
            "min_gpus",
            plan.gpus,
            f"{plan.replicas} replicas x TP{plan.tensor_parallel} = {plan.gpus} GPUs serve {q.requests_per_s:g} req/s "
            f"at p50 TTFT {r.ttft_s * 1e3:.0f} ms, TPOT {r.tpot_s * 1e3:.1f} ms; capacity at the targets "
            f"{plan.capacity_per_replica * plan.replicas:.2f} req/s (headroom {plan.headroom:.0%}); considered {tried}",
            replicas=plan.replicas,
            tensor_parallel=plan.tensor_parallel,
            ttft_s=r.ttft_s,
            tpot_s=r.tpot_s,
            headroom=plan.headroom,
        )
    for tp in tp_candidates(c.model, gpu, limit=64) + spanning_degrees(c, gpu):
        cfg = replace(c, tensor_parallel=tp, replicas=1)
        if estimate_inference(cfg).fits(usable):
            return SolveAnswer(
                "min_gpus",
                tp,
                f"smallest tensor-parallel group one copy fits on (TP{tp}); give "
                "requests_per_s (vllm / tensorrt-llm) to size replicas for a load",
                replicas=1,
                tensor_parallel=tp,
            )
    return SolveAnswer("min_gpus", 0, "does not fit on any tensor-parallel degree searched")
