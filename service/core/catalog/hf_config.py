"""Specs from a Hugging Face ``config.json`` (:func:`from_hf_config`): the modelled types, the
shape checks and the dense/BERT builders; split out of :mod:`service.core.catalog.models`,
which re-exports its public names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.core.catalog.cnn import CnnSpec
from service.core.catalog.decoder import DecoderSpec, UnsupportedArchitecture, checkpoint_format
from service.core.catalog.encoder import EncoderSpec
from service.core.catalog.sparse_models import SPARSE_HF_TYPES, sparse_from_hf_config

ModelSpec = DecoderSpec | EncoderSpec | CnnSpec

_DENSE_TYPES: tuple[str, ...] = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "bert")
HF_CONFIG_TYPES: tuple[str, ...] = (*_DENSE_TYPES, *SPARSE_HF_TYPES)
"""The ``model_type`` values :func:`from_hf_config` models (as Hugging Face writes them)."""
HF_CONFIG_WRAPPED: tuple[str, ...] = ("llama4",)
"""Types whose shape fields sit in ``text_config`` (the multimodal wrapper's text model)."""
MLA_KEYS: tuple[str, ...] = ("kv_lora_rank", "q_lora_rank")
"""Keys of multi-head latent attention: given only with a DeepSeek ``model_type``."""
MLA_TYPES: tuple[str, ...] = ("deepseek_v2", "deepseek_v3")
HF_CONFIG_SIZES: dict[str, int] = {
    "hidden_size": 2**20,
    "num_hidden_layers": 4096,
    "num_attention_heads": 4096,
    "intermediate_size": 2**22,
    "vocab_size": 2**24,
}
"""The shape fields every config.json must give, whole numbers from 1 to these (the largest
published models are far inside: hidden 16,384, 126 layers, vocabularies of ~256k)."""


def _req(cfg: Mapping[str, Any], *names: str) -> Any:
    for n in names:
        if n in cfg and cfg[n] is not None:
            return cfg[n]
    raise UnsupportedArchitecture(str(cfg.get("model_type", "?")), f"config.json lacks {names[0]!r}")


def from_hf_config(cfg: Mapping[str, Any], id: str | None = None) -> ModelSpec:
    """Build a spec from a Hugging Face ``config.json`` body, exactly as published.

    Supported ``model_type``: ``llama``, ``mistral``, ``mixtral``, ``qwen2``, ``qwen3``
    (dense), ``bert``, and the sparse families of :mod:`service.core.catalog.sparse_models`
    (``deepseek_v2``/``deepseek_v3`` with MLA, ``qwen3_moe``, ``llama4``/``llama4_text``,
    ``gpt_oss``). Anything else -- MLA keys on a non-DeepSeek type, an MoE variant of a dense
    family, other multimodal wrappers -- raises :class:`UnsupportedArchitecture`: its parameter
    and KV-cache layout differs and an approximation would be silently wrong.
    """
    mtype, arch = _checked_hf_type(cfg)
    if mtype in SPARSE_HF_TYPES:
        return sparse_from_hf_config(cfg, arch, id)
    if mtype == "bert":
        return _bert_from_hf_config(cfg, arch, id)
    return _dense_from_hf_config(cfg, mtype, arch, id)


def _checked_hf_type(cfg: Mapping[str, Any]) -> tuple[str, str]:
    """The config's ``model_type`` and architecture name, once it is a modelled type whose
    shape fields are whole numbers in range: a wrong field is named before any arithmetic."""
    if not isinstance(cfg, Mapping):
        raise UnsupportedArchitecture("?", "config must be a JSON object")
    mtype = str(cfg.get("model_type", ""))
    archs = cfg.get("architectures") or []
    arch = str(archs[0]) if archs else mtype or "?"
    if mtype not in MLA_TYPES and any(k in cfg for k in MLA_KEYS):
        raise UnsupportedArchitecture(
            arch,
            f"multi-head latent attention (kv_lora_rank, q_lora_rank) is modelled for model_type "
            f"{' and '.join(MLA_TYPES)} only, not {mtype!r}",
        )
    if mtype not in HF_CONFIG_TYPES:
        raise UnsupportedArchitecture(
            arch, f"model_type {mtype!r} is not modelled; supported: {', '.join(HF_CONFIG_TYPES)}"
        )
    sized = cfg.get("text_config") if mtype in HF_CONFIG_WRAPPED else cfg
    if not isinstance(sized, Mapping):
        raise UnsupportedArchitecture(arch, f"a {mtype} config.json needs its text_config object")
    for key, largest in HF_CONFIG_SIZES.items():
        value = sized.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= largest:
            where = "text_config." if sized is not cfg else ""
            raise UnsupportedArchitecture(
                arch, f"config.json needs {where}{key} as a whole number from 1 to {largest}"
            )
    return mtype, arch


def _bert_from_hf_config(cfg: Mapping[str, Any], arch: str, id: str | None) -> EncoderSpec:
    """A BERT encoder from its config.json (defaults as ``BertConfig`` has them)."""
    if cfg["hidden_size"] % cfg["num_attention_heads"]:
        raise UnsupportedArchitecture(arch, "hidden_size must be a multiple of num_attention_heads")
    h = int(_req(cfg, "hidden_size"))
    return EncoderSpec(
        id=id or str(cfg.get("_name_or_path") or "custom-bert"),
        hidden_size=h,
        num_layers=int(_req(cfg, "num_hidden_layers")),
        num_heads=int(_req(cfg, "num_attention_heads")),
        intermediate_size=int(_req(cfg, "intermediate_size")),
        vocab_size=int(_req(cfg, "vocab_size")),
        max_position_embeddings=int(cfg.get("max_position_embeddings", 512)),
        type_vocab_size=int(cfg.get("type_vocab_size", 2)),
        layer_norm_eps=float(cfg.get("layer_norm_eps", 1e-12)),
        hf_id=None,
        family="bert",
        source="config.json",
    )


def _dense_from_hf_config(cfg: Mapping[str, Any], mtype: str, arch: str, id: str | None) -> DecoderSpec:
    """A dense Llama-family decoder (Mixtral's experts included) from its config.json; the
    family's hard-coded layout (Qwen2's q/k/v bias, Qwen3's q/k norm) is applied here."""
    if mtype not in {"llama", "mistral", "mixtral", "qwen2", "qwen3"}:
        raise UnsupportedArchitecture(
            arch,
            f"model_type {mtype!r} is not modelled; supported: llama, mistral, mixtral, qwen2, qwen3, bert",
        )
    if cfg.get("text_config") is not None or cfg.get("vision_config") is not None:
        raise UnsupportedArchitecture(arch, "multimodal wrappers are not modelled")
    h = int(_req(cfg, "hidden_size"))
    heads = int(_req(cfg, "num_attention_heads"))
    kv = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or h // heads)
    if head_dim < 1:
        raise UnsupportedArchitecture(arch, "the attention heads are wider than hidden_size: give head_dim")
    experts = int(cfg.get("num_local_experts") or 1) if mtype == "mixtral" else 1
    if mtype == "mixtral":
        top_k = int(cfg.get("num_experts_per_tok") or 2)
    else:
        top_k = 1
        if cfg.get("num_experts") or cfg.get("num_local_experts"):
            raise UnsupportedArchitecture(arch, "MoE variant of this family is not modelled")
    act = str(cfg.get("hidden_act", "silu"))
    if act not in {"silu", "swish"}:
        raise UnsupportedArchitecture(arch, f"hidden_act {act!r}: only SwiGLU MLPs are modelled")
    attention_bias = bool(cfg.get("attention_bias", False))
    qkv_bias_only = False
    if mtype == "qwen2":  # Qwen2Attention: q/k/v with bias, o_proj without (hard-coded)
        attention_bias, qkv_bias_only = True, True
    rope_theta = cfg.get("rope_theta")
    if rope_theta is None and isinstance(cfg.get("rope_parameters"), Mapping):
        rope_theta = cfg["rope_parameters"].get("rope_theta")  # transformers 5.x layout
    sw = cfg.get("sliding_window") if cfg.get("use_sliding_window", mtype == "mistral") else None
    return DecoderSpec(
        id=id or str(cfg.get("_name_or_path") or f"custom-{mtype}"),
        hidden_size=h,
        num_layers=int(_req(cfg, "num_hidden_layers")),
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=head_dim,
        intermediate_size=int(_req(cfg, "intermediate_size")),
        vocab_size=int(_req(cfg, "vocab_size")),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        attention_bias=attention_bias,
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        gated_mlp=True,
        num_experts=experts,
        experts_per_token=top_k,
        max_position_embeddings=int(cfg.get("max_position_embeddings", 4096)),
        rope_theta=float(rope_theta if rope_theta is not None else 10000.0),
        rms_norm_eps=float(cfg.get("rms_norm_eps", 1e-6)),
        hf_id=None,
        family=mtype,
        qkv_bias_only=qkv_bias_only,
        qk_norm=(mtype == "qwen3"),
        sliding_window=int(sw) if sw else None,
        source="config.json",
        checkpoint_format=checkpoint_format(cfg),
    )
