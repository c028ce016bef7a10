"""Serving a continuous-batching replica: how many sequences fit, fixed concurrency, static
batches, request-rate queueing and the fewest GPUs for a rate (``serving`` describes the model)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation import serving_engines as se
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.network import spanning_degrees
from service.core.estimation.performance import PCIE_ASSUMED_PER_DIRECTION_GB_PER_S
from service.core.estimation.serving_engines import (
    CONTINUOUS_EFFICIENCIES,
    CONTINUOUS_SPEC,
    Deployment,
    EngineEfficiencies,
)
from service.core.estimation.serving_features import accepted_per_step
from service.core.estimation.serving_lora import admitted, miss_probability
from service.core.estimation.serving_memory import kv_capacity_tokens, smallest_memory_fraction
from service.core.estimation.serving_steps import speculative_step_s

# --------------------------------------------------------------------------------------------
# Memory of a continuous-batching replica: how many sequences fit
# --------------------------------------------------------------------------------------------


_CAP_CACHE: dict[tuple[int, float, float, bool, float], tuple[Deployment, tuple[int, int]]] = {}


def concurrency_cap(
    d: Deployment,
    input_len: float,
    output_len: float,
    offline: bool = False,
    reserve_gib: float = CONTINUOUS_SPEC.reserve_gib,
) -> tuple[int, int]:
    """(sequences a replica runs at once, token budget per iteration): the scheduler's limit and
    the KV cache's (``full`` reservation: ``I + O`` per request; ``on_demand``: ``I + O/2``).
    Memoised (the deployment is immutable)."""
    key = (id(d), input_len, output_len, offline, reserve_gib)
    hit = _CAP_CACHE.get(key)
    if hit is not None and hit[0] is d:
        return hit[1]
    out = _concurrency_cap(d, input_len, output_len, offline, reserve_gib)
    if len(_CAP_CACHE) > 16384:
        _CAP_CACHE.clear()
    _CAP_CACHE[key] = (d, out)
    return out


def _tokens_per_request(d: Deployment, input_len: float, output_len: float) -> float:
    """KV tokens a running request holds: ``I + O`` (``full`` reservation), ``I + O/2`` (``on_demand``),
    at most the sliding window."""
    per_req = input_len + (output_len if d.engine.kv_reservation == "full" else output_len / 2.0)
    return max(min(per_req, float(d.model.sliding_window)) if d.model.sliding_window else per_req, 1.0)


def fraction_for_one_request(
    d: Deployment, input_len: float, output_len: float, reserve_gib: float = CONTINUOUS_SPEC.reserve_gib
) -> float | None:
    """The smallest memory setting whose KV pool holds one request (None: no setting does)."""
    _, budget = se.engine_limits(d.engine, d.gpu)
    return smallest_memory_fraction(d, _tokens_per_request(d, input_len, output_len), budget, reserve_gib)


def _concurrency_cap(
    d: Deployment, input_len: float, output_len: float, offline: bool, reserve_gib: float
) -> tuple[int, int]:
    seqs, budget = se.engine_limits(d.engine, d.gpu, offline)
    cap_kv = kv_capacity_tokens(d, budget, reserve_gib) / _tokens_per_request(d, input_len, output_len)
    n = int(min(seqs, cap_kv))
    if d.lora is not None:  # a batch holds at most max_loras distinct adapters
        n = int(admitted(d.lora, float(n)))
    if d.engine.name == "tensorrt-llm" and offline:
        # trtllm-bench: max_num_tokens = min(bs (1 + n_in/n_out), 32768), at least 2048
        budget = int(min(32768.0, max(2048.0, n * (1.0 + input_len / max(output_len, 1.0)))))
    return n, budget


# --------------------------------------------------------------------------------------------
# Closed forms: offline throughput, static batches, fixed concurrency
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    """Request lengths: means and coefficients of variation (standard deviation / mean) of the
    prompt and output lengths (0 = fixed lengths)."""

    input_len: float
    output_len: float
    input_cv: float = 0.0
    output_cv: float = 0.0

    @property
    def input_median(self) -> float:
        """Median prompt length of a lognormal with this mean and dispersion."""
        return self.input_len / math.sqrt(1.0 + self.input_cv**2)


@dataclass(frozen=True, slots=True)
class ConcurrencyPoint:
    """Steady state of one replica running ``n`` sequences at once (closed loop)."""

    n: float
    iteration_s: float
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    requests_per_s: float


def _steady(d: Deployment, e: EngineEfficiencies, n: float, w: Workload, budget: int) -> ConcurrencyPoint:
    """``n`` requests always in flight; each finished request is replaced at once: every
    iteration decodes ``n`` tokens and prefills ``n I / O`` prompt tokens on average (``n / O``
    prompts), which sets the throughput. One request sees (issue 25: prefill in every path):

    * TTFT: its whole prompt prefilled, in chunks of the token budget the other ``n - 1``
      decodes leave, each chunk an iteration with those decodes -- never below the prompt's
      compute; chunking changes how prefill interleaves, not its total work;
    * TPOT: decode iterations carrying the *other* requests' prompts (``(n - 1) / O`` per
      iteration): a lone request's TPOT is the decode step, independent of its output length
      except through the growing KV read."""
    n_in, n_out = w.input_len, max(w.output_len, 1.0)
    ctx = n_in + n_out / 2.0
    if d.spec_tokens:
        return _steady_speculative(d, e, n, w, budget)
    t_all = se.mean_iteration_s(d, e, n, ctx, n / n_out, n_in, budget)
    others = n - 1.0
    tpot = (
        se.mean_iteration_s(d, e, n, ctx, others / n_out, n_in, budget)
        if others > 0
        else se.iteration_s(d, e, n, ctx)
    )
    chunks = max(1.0, math.ceil(n_in / max(1.0, budget - others)))
    per_chunk = se.iteration_s(d, e, others, ctx, n_in / chunks, n_in / 2.0, 1.0 / chunks)
    ttft = e.request_s + tpot / 2.0 + chunks * per_chunk
    return ConcurrencyPoint(n, t_all, ttft, tpot, n / t_all, n / (n_out * t_all))


def _steady_speculative(
    d: Deployment, e: EngineEfficiencies, n: float, w: Workload, budget: int
) -> ConcurrencyPoint:
    """:func:`_steady` with speculative decoding: every step drafts ``k`` tokens per sequence and
    verifies them (:func:`speculative_step_s`), emitting ``a = accepted_per_step(k, alpha)``
    tokens per sequence; prompts join at ``n a / O`` per step. TPOT is the step (with the other
    requests' prompts) over ``a``; TTFT as without speculation."""
    n_in, n_out = w.input_len, max(w.output_len, 1.0)
    ctx = n_in + n_out / 2.0
    a = accepted_per_step(d.spec_tokens, d.spec_acceptance)
    step = speculative_step_s(d, e, n, ctx)
    plain = se.iteration_s(d, e, n, ctx)
    others = n - 1.0
    with_all = step + se.mean_iteration_s(d, e, n, ctx, n * a / n_out, n_in, budget) - plain
    with_others = step + (
        se.mean_iteration_s(d, e, n, ctx, others * a / n_out, n_in, budget) - plain if others > 0 else 0.0
    )
    tpot = with_others / a
    chunks = max(1.0, math.ceil(n_in / max(1.0, budget - others)))
    per_chunk = se.iteration_s(d, e, others, ctx, n_in / chunks, n_in / 2.0, 1.0 / chunks)
    ttft = e.request_s + tpot / 2.0 + chunks * per_chunk
    return ConcurrencyPoint(n, with_all, ttft, tpot, n * a / with_all, n * a / (n_out * with_all))


def offline_throughput(
    c: InferenceConfig,
    gpu: GpuSpec,
    e: EngineEfficiencies = CONTINUOUS_EFFICIENCIES,
    d: Deployment | None = None,
) -> ConcurrencyPoint:
    """Maximum throughput of one replica with every request queued at once (``trtllm-bench
    throughput``): as many sequences as the scheduler and the KV cache allow."""
    d = d or se.deployment(c, gpu)
    w = Workload(float(c.input_len), float(max(c.output_len, 1)))
    n, budget = concurrency_cap(d, w.input_len, w.output_len, offline=True, reserve_gib=e.reserve_gib)
    if n < 1:
        raise InvalidConfiguration(
            "batch_size",
            f"no KV cache left for one {c.input_len}+{c.output_len}-token "
            f"request on {gpu.slug} at TP {c.tensor_parallel}",
            code="MEMORY_INSUFFICIENT",
        )
    return _steady(d, e, float(n), w, budget)


def serve_concurrency(
    c: InferenceConfig,
    gpu: GpuSpec,
    e: EngineEfficiencies = CONTINUOUS_EFFICIENCIES,
    concurrency: int | None = None,
    d: Deployment | None = None,
) -> ConcurrencyPoint:
    """One replica with ``concurrency`` (default ``c.batch_size``) clients each keeping one
    request in flight; the engine runs as many as its scheduler and KV cache admit, the others
    wait for a slot (their wait is part of TTFT)."""
    d = d or se.deployment(c, gpu)
    w = Workload(float(c.input_len), float(max(c.output_len, 1)))
    cap, budget = concurrency_cap(d, w.input_len, w.output_len, reserve_gib=e.reserve_gib)
    clients = float(concurrency or c.batch_size)
    running = admitted(d.lora, clients) if d.lora is not None else clients  # max_loras per batch
    n = float(min(running, max(cap, 1)))
    pt = _steady(d, e, n, w, budget)
    if clients > n:  # the rest wait for a slot: Little's law on the admission queue
        pt = replace(pt, ttft_s=pt.ttft_s + (clients - n) / pt.requests_per_s)
    return replace(pt, ttft_s=pt.ttft_s + lora_load_s(d)) if d.lora is not None else pt


def lora_load_s(d: Deployment) -> float:
    """Mean host-to-device adapter load a request pays before its prefill: the miss probability
    (:func:`~service.core.estimation.serving_lora.miss_probability`) times one slot over PCIe."""
    if d.lora is None:
        return 0.0
    pcie = (d.gpu.node.pcie_per_direction_gb_per_s or PCIE_ASSUMED_PER_DIRECTION_GB_PER_S) * 1e9
    return miss_probability(d.lora) * d.lora_slot_bytes / pcie


def static_batch(
    c: InferenceConfig,
    gpu: GpuSpec,
    e: EngineEfficiencies = CONTINUOUS_EFFICIENCIES,
    d: Deployment | None = None,
) -> tuple[float, float, float]:
    """(TTFT, mean TPOT, output tokens/s of the replica) of a compiled engine running one static
    batch (``gptSessionBenchmark``): the whole batch prefilled at once, then ``O - 1`` decode
    steps at the mean context ``I + O/2``."""
    d = d or se.deployment(c, gpu)
    b, n_in, n_out = float(c.batch_size), float(c.input_len), float(max(c.output_len, 1))
    ttft = se.iteration_s(d, e, 0.0, 0.0, b * n_in, n_in / 2.0, b) + e.request_s
    tpot = se.iteration_s(d, e, b, n_in + n_out / 2.0)
    total = ttft + (n_out - 1.0) * tpot
    return ttft, tpot, b * n_out / total


# --------------------------------------------------------------------------------------------
# Request-rate serving
# --------------------------------------------------------------------------------------------


def _erlang_c(c: int, a: float) -> float:
    """Probability of waiting in M/M/c with offered load ``a = lambda / mu`` (Erlang B recursion,
    then C). Large ``c`` at moderate load waits with negligible probability: skipped."""
    if a <= 0:
        return 0.0
    if a >= c:
        return 1.0
    rho = a / c
    if c > 64 and rho < 0.8:
        return 0.0
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b / (1.0 - rho * (1.0 - b))


@dataclass(frozen=True, slots=True)
class RateEstimate:
    """One replica's (and the fleet's) answer at an offered request rate.

    Latencies are **p50** (median prompt length, median admission wait) plus the means the model
    was validated on. ``stable`` is False when the replica cannot keep up (completion rate below
    the arrival rate): latencies are then ``inf``.
    """

    requests_per_s: float
    replicas: int
    tensor_parallel: int
    stable: bool
    ttft_s: float
    tpot_s: float
    ttft_mean_s: float
    tpot_mean_s: float
    in_flight: float
    concurrency_cap: int
    utilisation: float
    output_tokens_per_s: float
    queue_wait_s: float
    bound: str


def _iteration_at(
    d: Deployment, e: EngineEfficiencies, lam: float, w: Workload, t: float, budget: float
) -> float:
    n_in, n_out = w.input_len, max(w.output_len, 1.0)
    return se.mean_iteration_s(d, e, lam * n_out * t, n_in + n_out / 2.0, lam * t, n_in, budget)


def serve_at_rate(
    c: InferenceConfig,
    gpu: GpuSpec,
    requests_per_s: float,
    w: Workload | None = None,
    e: EngineEfficiencies = CONTINUOUS_EFFICIENCIES,
    d: Deployment | None = None,
) -> RateEstimate:
    """Latency and throughput at ``requests_per_s`` offered to ``c.replicas`` replicas of TP
    ``c.tensor_parallel`` (module docstring: the queueing model). Pure and fast (a handful of
    iteration evaluations): the function ``/v1/recommend`` calls per candidate."""
    d = d or se.deployment(c, gpu)
    w = w or Workload(float(c.input_len), float(max(c.output_len, 1)))
    lam = requests_per_s / c.replicas
    n_in, n_out = w.input_len, max(w.output_len, 1.0)
    cap, budget = concurrency_cap(d, n_in, n_out, reserve_gib=e.reserve_gib)
    cap = max(cap, 0)
    inf = math.inf
    if cap < 1:
        return _unserved(c, requests_per_s, 0.0, 0, inf, 0.0, "memory")
    t0 = se.iteration_s(d, e, 0.0, 0.0) if lam > 0 else se.iteration_s(d, e, 1.0, n_in + n_out / 2.0)
    if lam <= 0:
        ttft = e.request_s + se.iteration_s(d, e, 0.0, 0.0, n_in, n_in / 2.0, 1.0)
        return RateEstimate(
            0.0, c.replicas, c.tensor_parallel, True, ttft, t0, ttft, t0, 0.0, cap, 0.0, 0.0, 0.0, "idle"
        )
    t_hi = cap / (lam * n_out)  # in flight reaches the cap

    def h(t: float) -> float:
        return _iteration_at(d, e, lam, w, t, budget) - t

    stable = h(t_hi) < 0 if t_hi > t0 else False
    if not stable:
        return _unserved(c, requests_per_s, float(cap), cap, inf, lam * n_out * c.replicas * 0.0, "overload")
    t = _root(h, t0, t_hi)
    n = lam * n_out * t
    # admission queue in front of the concurrency cap: M/G/c, Allen-Cunneen
    service = n_out * t + se.iteration_s(d, e, n, n_in + n_out / 2.0, n_in, n_in / 2.0, 1.0)
    a = lam * service
    rho = a / cap
    if rho >= 1.0:
        return _unserved(c, requests_per_s, float(cap), cap, rho, 0.0, "concurrency cap")
    return _stable_at_rate(c, d, e, w, requests_per_s, lam, t, service, rho, cap, budget)


def _unserved(
    c: InferenceConfig,
    requests_per_s: float,
    in_flight: float,
    cap: int,
    utilisation: float,
    output_tokens_per_s: float,
    bound: str,
) -> RateEstimate:
    """A rate the replicas cannot serve (no KV cache, overload, or the concurrency cap's queue
    never drains): every latency infinite, ``bound`` saying why."""
    inf = math.inf
    return RateEstimate(
        requests_per_s,
        c.replicas,
        c.tensor_parallel,
        False,
        inf,
        inf,
        inf,
        inf,
        in_flight,
        cap,
        utilisation,
        output_tokens_per_s,
        inf,
        bound,
    )


def _stable_at_rate(
    c: InferenceConfig,
    d: Deployment,
    e: EngineEfficiencies,
    w: Workload,
    requests_per_s: float,
    lam: float,
    t: float,
    service: float,
    rho: float,
    cap: int,
    budget: float,
) -> RateEstimate:
    """A stable replica at arrival rate ``lam``, mean iteration ``t``: the admission wait
    (Erlang C with the Allen-Cunneen correction, its median from the exponential tail), the
    tagged request's own prefill and its decode beside the others in flight."""
    n_in, n_out = w.input_len, max(w.output_len, 1.0)
    n = lam * n_out * t
    a = lam * service
    pw = _erlang_c(cap, a)
    wq = pw / (cap / service - lam) * (1.0 + w.output_cv**2) / 2.0 if pw > 0 else 0.0
    wq_p50 = 0.0 if pw <= 0.5 else (wq / pw) * math.log(2.0 * pw)
    # the tagged request decodes beside the n others Poisson arrivals find in flight (PASTA):
    # its TPOT is an iteration of n + 1 sequences (at a low rate: the lone decode step, KV read
    # included, not a near-empty average iteration)
    tpot = se.mean_iteration_s(d, e, n + 1.0, n_in + n_out / 2.0, lam * t, n_in, budget)
    base = e.request_s + t / 2.0 + lora_load_s(d)
    ttft_mean = base + wq + _own_prefill(d, e, w, lam, t, n, budget, n_in)
    median = w.input_median if w.input_cv > 0 else n_in
    ttft_p50 = base + wq_p50 + _own_prefill(d, e, w, lam, t, n, budget, median)
    util = max(rho, _busy_fraction(d, e, n, t, n_in + n_out / 2.0))
    return RateEstimate(
        requests_per_s=requests_per_s,
        replicas=c.replicas,
        tensor_parallel=c.tensor_parallel,
        stable=True,
        ttft_s=ttft_p50,
        tpot_s=tpot,
        ttft_mean_s=ttft_mean,
        tpot_mean_s=tpot,
        in_flight=n,
        concurrency_cap=cap,
        utilisation=util,
        output_tokens_per_s=requests_per_s * n_out,
        queue_wait_s=wq,
        bound="concurrency cap" if rho > 0.8 else decode_bound(d, e, n),
    )


def _own_prefill(
    d: Deployment,
    e: EngineEfficiencies,
    w: Workload,
    lam: float,
    t: float,
    n: float,
    budget: float,
    prompt: float,
) -> float:
    """The tagged request's prefill of ``prompt`` tokens, chunked into the token budget the ``n``
    decoding sequences leave, each chunk an iteration beside them."""
    n_in, n_out = w.input_len, max(w.output_len, 1.0)
    free = max(1.0, budget - n)
    chunks = max(1, math.ceil(prompt / free))
    per = se.iteration_s(
        d, e, n, n_in + n_out / 2.0, lam * t * n_in + prompt / chunks, n_in / 2.0, lam * t + 1.0 / chunks
    )
    return chunks * per


def _root(h: Callable[[float], float], lo: float, hi: float, rel: float = 1e-6) -> float:
    """Root of ``h`` (``h(lo) > 0 > h(hi)``, ``h`` nearly linear): secant steps from a fixed-point
    step (``t -> t + h(t)``), falling back to bisection whenever a step leaves the bracket. A
    handful of evaluations for the iteration-time fixed point."""
    a, fa = lo, h(lo)
    b = min(lo + fa, hi)  # one fixed-point step: t -> g(t)
    fb = h(b)
    for _ in range(50):
        if fb > 0:
            lo = b
        else:
            hi = b
        if abs(fb) <= rel * b or hi - lo <= rel * b:
            return b
        t = b - fb * (b - a) / (fb - fa) if fb != fa else 0.5 * (lo + hi)
        if not lo < t < hi:
            t = 0.5 * (lo + hi)
        a, fa = b, fb
        b, fb = t, h(t)
    return b


def _busy_fraction(d: Deployment, e: EngineEfficiencies, n: float, t: float, ctx: float) -> float:
    """Utilisation of the processor-sharing server: ``1 - t_1 / t``, the share of an iteration
    due to the load (``t_1``: an iteration with a single sequence). For an iteration time
    linear in the load, ``t = t_1 / (1 - rho)``, so this is ``rho``."""
    t_one = se.iteration_s(d, e, 1.0, ctx)
    return max(0.0, min(1.0, 1.0 - t_one / t)) if t > 0 else 0.0


def decode_bound(d: Deployment, e: EngineEfficiencies, n: float) -> str:
    """``compute`` when ``n`` decoding sequences make the GEMMs compute-bound, else ``memory``."""
    rate = d.peak_gemm * (e.mm8 if d.w8a8 else e.mm16)
    flops = n * (d.flops_per_token + d.expert_flops_per_token)
    return "compute" if flops / rate > (d.w_dense + d.w_experts) / (d.bandwidth * e.bw) else "memory"


def capacity_at_slo(
    c: InferenceConfig,
    gpu: GpuSpec,
    w: Workload,
    ttft_target_s: float | None,
    tpot_target_s: float | None,
    e: EngineEfficiencies = CONTINUOUS_EFFICIENCIES,
    d: Deployment | None = None,
    max_utilisation: float = 0.9,
) -> float:
    """Largest request rate one replica sustains with p50 TTFT and TPOT within the targets
    (requests/s; 0 when even a lone request misses them). Latency grows with the rate, so the
    answer is found by bisection."""
    d = d or se.deployment(c, gpu)
    one = replace(c, replicas=1)

    def ok(lam: float) -> bool:
        r = serve_at_rate(one, gpu, lam, w, e, d)
        if not r.stable or r.utilisation > max_utilisation:
            return False
        if ttft_target_s is not None and r.ttft_s > ttft_target_s:
            return False
        return not (tpot_target_s is not None and r.tpot_s > tpot_target_s)

    if not ok(1e-6):
        return 0.0
    hi = 1.0
    while ok(hi):
        hi *= 2.0
        if hi > 1e6:
            return hi
    lo = hi / 2.0 if hi > 1.0 else 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-3 * max(lo, 1e-3):
            break
    return lo


@dataclass(frozen=True, slots=True)
class ServingPlan:
    """``replicas x tensor_parallel`` GPUs serving ``requests_per_s`` within the targets."""

    tensor_parallel: int
    replicas: int
    gpus: int
    capacity_per_replica: float
    estimate: RateEstimate
    headroom: float  # fleet capacity at the targets / offered rate - 1
    considered: tuple[tuple[int, int, float], ...] = ()  # (tp, replicas needed, per-replica capacity)


def tp_candidates(m: DecoderSpec, gpu: GpuSpec, limit: int = 8) -> list[int]:
    """Tensor-parallel degrees worth trying: powers of two dividing the KV heads, or a multiple of
    them (each head replicated, as vLLM and SGLang do), up to the NVLink domain (or 8 GPUs)."""
    top = max(gpu.node.nvlink_domain_size, 1) if gpu.node.nvlink_topology == "switched" else limit
    out, k = [], 1
    while k <= min(limit, max(top, 1)):
        if m.tp_splits_heads(k):
            out.append(k)
        k *= 2
    return out or [1]


def plan_min_gpus(
    c: InferenceConfig,
    gpu: GpuSpec,
    requests_per_s: float,
    w: Workload,
    ttft_target_s: float | None,
    tpot_target_s: float | None,
    e: EngineEfficiencies = CONTINUOUS_EFFICIENCIES,
    max_gpus: int = 4096,
) -> ServingPlan | None:
    """Fewest GPUs (``replicas x TP``) that serve ``requests_per_s`` within the p50 targets: for
    every TP degree that fits, the replicas needed at the per-replica capacity; ties go to the
    larger TP (lower latency). ``None`` when no TP degree meets the targets."""
    best: ServingPlan | None = None
    considered: list[tuple[int, int, float]] = []
    fitted = False
    inside = tp_candidates(c.model, gpu)
    for tp in [*inside, *spanning_degrees(c, gpu)]:
        if fitted and tp > inside[-1]:
            break  # beyond one node only where nothing inside one holds the model
        cfg = replace(c, tensor_parallel=tp, replicas=1)
        try:
            d = se.deployment(cfg, gpu)
        except InvalidConfiguration:
            continue
        cap_seqs, _ = concurrency_cap(d, w.input_len, w.output_len, reserve_gib=e.reserve_gib)
        if cap_seqs < 1:
            continue
        fitted = True
        per = capacity_at_slo(cfg, gpu, w, ttft_target_s, tpot_target_s, e, d)
        if per <= 0:
            considered.append((tp, 0, 0.0))
            continue
        reps = max(1, math.ceil(requests_per_s / per * (1.0 - 1e-9)))
        considered.append((tp, reps, per))
        if reps * tp > max_gpus:
            continue
        if best is None or reps * tp < best.gpus or (reps * tp == best.gpus and tp > best.tensor_parallel):
            est = serve_at_rate(replace(cfg, replicas=reps), gpu, requests_per_s, w, e, d)
            best = ServingPlan(tp, reps, reps * tp, per, est, reps * per / requests_per_s - 1.0)
    if best is None:
        return None
    return replace(best, considered=tuple(considered))
