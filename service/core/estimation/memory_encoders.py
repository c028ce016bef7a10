"""Training and inference memory of encoders (BERT) and CNNs (ResNet)."""

from __future__ import annotations

from dataclasses import dataclass

from service.core.catalog.models import CnnSpec, EncoderSpec
from service.core.catalog.precision import TRAIN_MODES as _MODES
from service.core.errors import InvalidConfiguration
from service.core.estimation.memory_band import (
    FITTED_MEMORY_BANDS,
    _band_for,
    _finish,
)
from service.core.estimation.memory_config import (
    MemoryEstimate,
    MiB,
    TrainConfig,
)
from service.core.estimation.memory_layers import (
    _optimizer_bytes,
)

# --------------------------------------------------------------------------------------------
# Encoder (BERT) and CNN (ResNet) training
# --------------------------------------------------------------------------------------------


def _training_encoder(m: EncoderSpec, c: TrainConfig) -> MemoryEstimate:
    """BERT (``BertForMaskedLM``) under the reference loop.

    Per layer under autocast (``T = b*s``): q/k/v input casts ``3*2Th``, SDPA ``q,k,v,out``
    ``4*2Th`` (dropout inside the fused kernel keeps only an RNG seed), two dropout masks
    ``2*1Th``, two fp32 LayerNorm inputs ``2*4Th``, intermediate input cast ``2Th``, GELU
    input and output ``2*2Tf`` -> ``26Th + 4Tf``; fp32: ``4`` bytes everywhere (``~44Th+8Tf``).
    The MLM head saves ``~12Th`` and the loss ``4*N*V`` (fp32 log-softmax), with the fp32
    copy of the logits alive while it is computed.
    """
    mode = c.mode
    P = float(m.total_params)
    T = float(c.batch_size * c.seq_len)
    h, f = float(m.hidden_size), float(m.intermediate_size)
    V = float(m.vocab_size)
    cb = mode.compute
    if mode.autocast:
        layer = 26.0 * T * h + 4.0 * T * f
        copies = cb * float(m.matmul_params_per_token)
    elif cb == 4:
        layer = 44.0 * T * h + 8.0 * T * f
        copies = 0.0
    else:
        layer = 24.0 * T * h + 4.0 * T * f
        copies = 0.0
    acts = (
        (mode.residual * T * h * m.num_layers + layer) if c.gradient_checkpointing else layer * m.num_layers
    )
    head = 12.0 * T * h
    NV = T * V
    loss = (cb * NV + 8.0 * NV) if cb != 4 else 8.0 * NV
    w = mode.param * P
    g = mode.grad * P
    opt_state, opt_temp = _optimizer_bytes(c, int(P), mode.state, int(V * h))
    base = w + opt_state + 32 * MiB
    phases = {
        "backward-loss": base + copies + acts + head + 12.0 * NV,
        "forward-loss": base + copies + acts + head + loss,
        "optimizer-step": base + g + opt_temp,
    }
    if c.keeps_outputs:  # the MLM logits held by the loop (see the decoder)
        phases = {k: v + cb * NV for k, v in phases.items()}
    peak_phase = max(phases, key=lambda k: phases[k])
    peak = phases[peak_phase]
    components = {"parameters": int(w), "optimizer_states": int(opt_state)}
    if peak_phase == "optimizer-step":
        components["gradients"] = int(g)
    else:
        components.update(
            autocast_weight_copies=int(copies),
            activations=int(acts + head),
            logits_and_loss=int(phases[peak_phase] - base - copies - acts - head),
        )
    components["workspace"] = int(peak - sum(components.values()))
    persistent = {"parameters": int(w), "optimizer_states": int(opt_state)}
    return _finish(
        c, peak, phases, peak_phase, components, persistent, ["BertForMaskedLM, SDPA attention"], _band_for(c)
    )


def _training_cnn(m: CnnSpec, c: TrainConfig) -> MemoryEstimate:
    """torchvision ResNet under the reference loop (SGD with momentum by default).

    Saved per image: :attr:`CnnSpec.saved_elements_per_image` in the compute dtype (BatchNorm
    runs in the input dtype under autocast, with fp32 statistics), the max-pool indices
    (int64, ``base_width x (image/4)^2``) and the input's cast; at the start of backward one
    gradient pair of the largest activation is added; cuDNN workspaces ~64 MiB.
    """
    mode = c.mode
    P = float(m.total_params)
    side = -(-m.image_size // 4)
    per_image = (
        float(m.saved_elements_per_image) * mode.compute
        + 8.0 * m.base_width * side * side
        + float(m.in_channels * m.image_size * m.image_size) * (mode.compute if mode.autocast else 0)
    )
    acts = per_image * c.batch_size
    if c.gradient_checkpointing:
        acts *= 0.35
    transient = 2.0 * mode.compute * m.largest_activation_elements * c.batch_size
    copies = mode.compute * P if mode.autocast else 0.0
    w = mode.param * P
    g = mode.grad * P
    opt_state, opt_temp = _optimizer_bytes(c, int(P), mode.state, 2048 * 1000)
    workspace = 64.0 * MiB
    base = w + opt_state + workspace
    phases = {
        "backward-start": base + copies + acts + transient,
        "optimizer-step": base + g + opt_temp,
    }
    peak_phase = max(phases, key=lambda k: phases[k])
    peak = phases[peak_phase]
    components = {"parameters": int(w), "optimizer_states": int(opt_state), "workspace": int(workspace)}
    if peak_phase == "optimizer-step":
        components["gradients"] = int(g)
    else:
        components["autocast_weight_copies"] = int(copies)
        components["activations"] = int(peak - base - copies)
    persistent = {"parameters": int(w), "optimizer_states": int(opt_state)}
    return _finish(
        c,
        peak,
        phases,
        peak_phase,
        components,
        persistent,
        ["torchvision ResNet, channels_last, cuDNN"],
        _band_for(c),
    )


def estimate_cnn_inference(m: CnnSpec, precision: str, batch_size: int) -> MemoryEstimate:
    """ResNet inference (eval, ``inference_mode``): parameters (fp32 under autocast; autocast
    keeps no weight copies outside autograd, each cast is freed after its conv), the fp32 input,
    and the working set at a stage-1 residual sum -- block input, branch output, their sum and
    BatchNorm temporaries, ~3.5 tensors of the largest activation -- plus ~32 MiB of cuDNN
    workspace and per-layer weight casts. Band fitted on the committed H200 results (residuals
    -6.3 %..+1.3 %): :data:`~service.core.estimation.memory_band.FITTED_MEMORY_BANDS`."""
    mode = _MODES.get(precision, _MODES["amp_bf16"])
    P = float(m.total_params)
    w = mode.param * P
    img = float(m.in_channels * m.image_size * m.image_size)
    acts = batch_size * (3.5 * mode.compute * m.largest_activation_elements + mode.param * img)
    workspace = 32.0 * MiB
    peak = w + acts + workspace
    comps = {"parameters": int(w), "activations": int(acts), "workspace": int(workspace)}
    return _finish(
        None,
        peak,
        {"forward": peak},
        "forward",
        comps,
        {"parameters": int(w)},
        ["torchvision ResNet, eval, channels_last"],
        FITTED_MEMORY_BANDS["cnn-infer"],
        multi_gpu=False,
    )


@dataclass(frozen=True, slots=True)
class BatchInferenceConfig:
    """Batched inference of an encoder (BERT, ``BertForMaskedLM`` in eval + ``inference_mode``)
    or a CNN (torchvision ResNet in eval, channels_last): ``batch_size`` inputs per forward
    (sequences of ``seq_len`` tokens, or images), on one GPU per replica; ``replicas`` GPUs each
    run their own copy. What the agent's ``bert-large-infer`` / ``resnet50-infer`` measure."""

    model: EncoderSpec | CnnSpec
    precision: str = "bf16"
    batch_size: int = 1
    seq_len: int = 128
    replicas: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.model, EncoderSpec | CnnSpec):
            raise InvalidConfiguration("model", "batched inference is modelled for encoders and CNNs")
        if self.precision not in _MODES:
            raise InvalidConfiguration("precision", f"precision must be one of {', '.join(_MODES)}")
        if self.batch_size < 1 or self.seq_len < 1 or self.replicas < 1:
            raise InvalidConfiguration("batch_size", "batch_size, seq_len and replicas must be >= 1")

    @property
    def gpu_count(self) -> int:
        return self.replicas


def estimate_encoder_inference(
    m: EncoderSpec, precision: str, batch_size: int, seq_len: int
) -> MemoryEstimate:
    """BERT masked-LM inference (eval, ``inference_mode``): parameters (fp32 under autocast, whose
    per-layer weight casts are freed after use), and the working set at the MLM head, the
    largest moment: the logits over every token (``T x V`` in the compute dtype; the MLM head
    scores all positions) plus the head transform's output, GELU and LayerNorm buffers
    (``~10 T h`` bytes under autocast, whose LayerNorm runs in fp32; ``6 T h`` in pure 16-bit)
    and ~32 MiB of cuBLAS workspace. Checked against the H200 ``bert-large-infer`` sweep."""
    mode = _MODES.get(precision, _MODES["amp_bf16"])
    T = float(batch_size * seq_len)
    w = mode.param * float(m.total_params)
    logits = mode.compute * T * m.vocab_size
    head = (10.0 if mode.autocast else 3.0 * mode.compute) * T * m.hidden_size
    workspace = 32.0 * MiB
    peak = w + logits + head + workspace
    comps = {
        "parameters": int(w),
        "logits": int(logits),
        "activations": int(head),
        "workspace": int(workspace),
    }
    return _finish(
        None,
        peak,
        {"mlm-head": peak},
        "mlm-head",
        comps,
        {"parameters": int(w)},
        ["HF BertForMaskedLM, eval + inference_mode, logits over every position"],
        FITTED_MEMORY_BANDS["encoder-infer"],
        multi_gpu=False,
    )


def estimate_batch_inference(c: BatchInferenceConfig) -> MemoryEstimate:
    """Per-GPU memory of :class:`BatchInferenceConfig` (encoder or CNN)."""
    if isinstance(c.model, CnnSpec):
        return estimate_cnn_inference(c.model, c.precision, c.batch_size)
    return estimate_encoder_inference(c.model, c.precision, c.batch_size, c.seq_len)
