"""Hugging Face transformers models for `diagnose`: their parts as Subjects, what their configs declare, their
caches, and tiny random models built offline from a config class. transformers is imported here only."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
from torch import nn

from helpers.checks.core import AttnCallError, Tolerance, working_dtype
from helpers.checks.core import position_ids as positions_of
from helpers.diagnose.run import CACHE_LENGTH, Subject, cache_mismatches
from helpers.language import say

# Small sizes for a tiny random model: each is set when the config class has that attribute.
TINY = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, intermediate_size=32,
            vocab_size=64, max_position_embeddings=64, head_dim=8, n_embd=16, n_layer=2, n_head=2, n_positions=64,
            n_inner=32, d_model=16, d_ff=32, d_kv=8, num_layers=2, num_decoder_layers=2, num_heads=2,
            encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
            encoder_ffn_dim=32, decoder_ffn_dim=32, bos_token_id=0, eos_token_id=1, pad_token_id=2,
            decoder_start_token_id=0,
            initializer_range=0.2)   # transformers' 0.02 makes a 2-layer window's farthest dependence ~1e-6: unseen
TINY_WINDOW = 3   # a sliding window short enough to see inside the checks' 16 tokens


def is_transformers_model(model: object) -> bool:
    """A transformers PreTrainedModel, told apart without importing transformers."""
    return isinstance(model, nn.Module) and hasattr(model, "config") and any(
        cls.__module__.startswith("transformers.") and cls.__name__ == "PreTrainedModel"
        for cls in type(model).__mro__)


def _takes(module: nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


def _dtype(module: nn.Module) -> torch.dtype:
    return next((p.dtype for p in module.parameters() if p.is_floating_point()), torch.float32)


def model_type(model: nn.Module) -> str:
    return str(getattr(model.config, "model_type", type(model).__name__))


def declared(model: nn.Module) -> tuple[str | None, str, int | None, int]:
    """What the config declares for the model's self-attention: (expect, source, window, layers). The order: an
    explicit bidirectional or causal flag, then is_decoder, then how transformers lists the architecture (a masked
    LM is bidirectional, a causal LM causal); a sliding window when the config has one and every layer uses it.
    A multimodal decoder's language model declares them in its text config (Gemma 3's `text_config`)."""
    from transformers.models.auto import modeling_auto as auto

    config, kind = _text_config(model.config), model_type(model)
    layers = int(getattr(config, "num_hidden_layers", None) or getattr(config, "num_layers", None) or 1)
    expect, source = None, say(f"{kind}: no declaration found", f"{kind}：宣言が見つからない")
    if getattr(config, "use_bidirectional_attention", None) is True:
        expect, source = "bidirectional", "config.use_bidirectional_attention=True"
    elif isinstance(getattr(config, "is_causal", None), bool):
        expect, source = ("causal" if config.is_causal else "bidirectional"), f"config.is_causal={config.is_causal}"
    elif getattr(config, "is_decoder", None) is True:
        expect, source = "causal", "config.is_decoder=True"
    elif getattr(config, "is_decoder", None) is False and _self_attention_flags(model) == {False}:
        expect, source = "bidirectional", say(
            "config.is_decoder=False, and every self-attention module has is_causal=False",
            "config.is_decoder=False で、どの自己アテンションのモジュールも is_causal=False")
    elif kind in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        expect, source = "bidirectional", say(
            f"transformers lists {kind} as a masked LM and config.is_decoder is not set",
            f"transformers は {kind} をマスク言語モデルとして登録し、config.is_decoder は設定されていない")
    elif kind in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        expect, source = "causal", say(f"transformers lists {kind} as a causal LM",
                                       f"transformers は {kind} を因果言語モデルとして登録している")
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if expect == "bidirectional" and isinstance(window, int) and types and all("sliding" in str(t) for t in types):
        return bidirectional_window(window), source + say(
            f"; every layer a bidirectional window, |i - j| <= {window} (config.sliding_window, layer_types)",
            f"。どの層も双方向のウィンドウ |i - j| <= {window}（config.sliding_window、layer_types）"), None, layers
    if expect == "causal" and isinstance(window, int) and getattr(config, "use_sliding_window", True) is not False:
        language_model = getattr(model, "language_model", None) or model   # not a vision tower's patch convolution
        convolutions = sorted({type(m).__name__ for m in language_model.modules() if "Conv" in type(m).__name__
                               and type(m).__module__ != "transformers.pytorch_utils"})   # GPT-2's Conv1D: linear
        if convolutions:   # a convolution along the sequence widens each layer's reach past the window
            return expect, source + say(
                f"; config.sliding_window={window}, but its layers also mix tokens by convolution "
                f"({', '.join(convolutions)}), so the window does not bound what they see: checked as causal",
                f"。config.sliding_window={window} だが、層は畳み込み（{'、'.join(convolutions)}）でもトークンを"
                "混ぜるので、ウィンドウでは見える範囲が決まらない。因果として検査した"), None, layers
        types = getattr(config, "layer_types", None)
        if not types or all("sliding" in str(t) for t in types):
            return "sliding_window", f"{source}, config.sliding_window={window}", window, layers
        source += say(f"; config.sliding_window={window} in {sum('sliding' in str(t) for t in types)} of "
                      f"{len(types)} layers, so the stack sees the whole past",
                      f"。config.sliding_window={window} は {len(types)} 層のうち "
                      f"{sum('sliding' in str(t) for t in types)} 層だけなので、層を重ねると過去全体が見える")
    return expect, source, None, layers


def _text_config(config: object) -> object:
    """The config of the language model that reads inputs_embeds: the text sub-config of a multimodal decoder
    (`get_text_config`), the config itself otherwise."""
    if getattr(config, "sub_configs", None) and not getattr(config, "is_encoder_decoder", False):
        text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
        return text if text is not None else config
    return config


def bidirectional_window(window: int) -> Callable:
    """The mask_mod of transformers' bidirectional sliding window (masking_utils: distance <= window, inclusive,
    unlike the causal window, which counts `window` keys with the query itself)."""
    def within(b: object, h: object, q_idx: torch.Tensor, kv_idx: torch.Tensor) -> torch.Tensor:
        return (q_idx - kv_idx).abs() <= window
    within.window = window              # type: ignore[attr-defined]  (read by diagnose's messages)
    within.described = f"bidirectional window |i - j| <= {window}"   # type: ignore[attr-defined]
    return within


def _self_attention_flags(model: nn.Module) -> set[bool]:
    """The is_causal flags of the model's self-attention modules (cross-attention left out): where a BERT-like
    model's code reads config.is_decoder (gpt_neox keeps is_decoder=False and is causal all the same)."""
    return {m.is_causal for name, m in model.named_modules()
            if isinstance(getattr(m, "is_causal", None), bool) and "cross" not in name.lower()}


def _base(model: nn.Module) -> nn.Module:
    base = getattr(model, "base_model", model)
    return base if isinstance(base, nn.Module) else model


def _embed_dim(model: nn.Module, embed_dim: int | None) -> int:
    if embed_dim is not None:
        return embed_dim
    embeddings = model.get_input_embeddings()
    return int(embeddings.embedding_dim if hasattr(embeddings, "embedding_dim") else embeddings.weight.shape[-1])


def _adapter(module: nn.Module, with_position_ids: bool, extra: Callable[[int], dict] | None = None) -> Callable:
    """module(inputs_embeds=x, attention_mask=1 for real tokens[, position_ids], **extra(N)).last_hidden_state."""
    dtype, takes_use_cache = _dtype(module), _takes(module, "use_cache")

    def call(x: torch.Tensor, kpm: torch.Tensor, position_ids: torch.Tensor | None) -> torch.Tensor:
        kwargs = dict(inputs_embeds=x.to(dtype, copy=True), attention_mask=(~kpm).long())
        if position_ids is not None:
            kwargs["position_ids"] = position_ids
        if takes_use_cache:
            kwargs["use_cache"] = False
        kwargs.update(extra(x.shape[0]) if extra else {})
        return module(**kwargs).last_hidden_state
    if with_position_ids:
        def attn(x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: torch.Tensor | None,
                 position_ids: torch.Tensor) -> torch.Tensor:
            return call(x, key_padding_mask, position_ids)
        return attn

    def attn_without(x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
        return call(x, key_padding_mask, None)
    return attn_without


def subjects(model: nn.Module, *, expect: object, window: int | None, embed_dim: int | None,
             dtype: torch.dtype | None) -> list[Subject]:
    """The parts diagnose checks: the model (decoder-only or encoder-only), or an encoder-decoder's encoder,
    decoder self-attention and cross-attention."""
    base = _base(model)
    E = _embed_dim(base, embed_dim)
    if getattr(model.config, "is_encoder_decoder", False):
        return _encoder_decoder(base, E, expect, window, dtype)
    declared_expect, source, declared_window, layers = declared(model)
    if expect is not None:
        source, declared_window = say("given expect=", "expect= で指定"), window
    else:
        expect = declared_expect
    takes = _takes(base, "position_ids")
    return [Subject(model_type(model), _adapter(base, takes), E, expect, source,
                    declared_window if window is None else window, layers,
                    without_position_ids=_adapter(base, False) if takes else None,
                    sides="both" if takes else "right",
                    cache=_decoder_cache(base, E, dtype) if expect in ("causal", "sliding_window") else None,
                    parameters=_trainable(base))]


def _trainable(module: nn.Module) -> list[torch.Tensor]:
    return [p for p in module.parameters() if p.requires_grad]


def _encoder_decoder(base: nn.Module, E: int, expect: object, window: int | None,
                     dtype: torch.dtype | None) -> list[Subject]:
    encoder, decoder = base.get_encoder(), base.get_decoder()
    g = torch.Generator().manual_seed(1234)
    memory = torch.randn(1, 5, E, generator=g)          # the decoder's fixed source for its own checks
    target = torch.randn(1, 64, E, generator=g)         # the cross-attention's fixed target tokens
    dt = _dtype(base)

    def with_memory(N: int) -> dict:
        return dict(encoder_hidden_states=memory.expand(N, -1, -1).to(dt, copy=True),
                    encoder_attention_mask=torch.ones(N, memory.shape[1], dtype=torch.long))

    def cross(rows: int | None) -> Callable:
        def attn(x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
            T = x.shape[1] if rows is None else rows
            tgt = target[:, :T].expand(x.shape[0], -1, -1).to(dt)
            return base(inputs_embeds=x.to(dt, copy=True), attention_mask=(~key_padding_mask).long(),
                        decoder_inputs_embeds=tgt.clone(), use_cache=False).last_hidden_state
        return attn
    kind = model_type(base)
    source = say(f"{kind} is an encoder-decoder (config.is_encoder_decoder)",
                 f"{kind} はエンコーダ・デコーダ（config.is_encoder_decoder）")
    enc_pos, dec_pos = _takes(encoder, "position_ids"), _takes(decoder, "position_ids")
    return [
        Subject(say("encoder", "エンコーダ"), _adapter(encoder, enc_pos), E, "bidirectional", source,
                without_position_ids=_adapter(encoder, False) if enc_pos else None,
                sides="both" if enc_pos else "right", parameters=_trainable(encoder)),
        Subject(say("decoder self-attention", "デコーダの自己アテンション"), _adapter(decoder, dec_pos, with_memory), E,
                expect or "causal", source if expect is None else say("given expect=", "expect= で指定"), window,
                without_position_ids=_adapter(decoder, False, with_memory) if dec_pos else None,
                sides="both" if dec_pos else "right", cache=_decoder_cache(decoder, E, dtype, with_memory),
                parameters=_trainable(decoder)),
        Subject(say("cross-attention", "クロスアテンション"), cross(4), E, "bidirectional",
                say("every target token sees every real source token",
                    "どのターゲットトークンも、ソースの実トークンをすべて見る"),
                pooled=True, pattern=cross(None), sides="right", parameters=_trainable(base)),
    ]


def _decoder_cache(module: nn.Module, E: int, dtype: torch.dtype | None,
                   extra: Callable[[int], dict] | None = None) -> Callable[[int], list[tuple[str, str]]] | None:
    """A cached multi-token step and 3-token chunks against one full pass, unpadded and with item 1 left-padded."""
    key = next((n for n in ("cache", "past_key_values") if _takes(module, n)), None)  # 5.x: cache; 4.x: past_...
    if key is None or not _takes(module, "use_cache"):
        return None
    dt, takes_positions = _dtype(module), _takes(module, "position_ids")

    def forward(x: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, cache: object, use_cache: bool) -> object:
        # a copy: some models scale inputs_embeds in place (CTRL: docs/diagnose-findings.md)
        kwargs = dict(inputs_embeds=x.to(dt, copy=True), attention_mask=mask, use_cache=use_cache)
        if cache is not None:
            kwargs[key] = cache
        if takes_positions:
            kwargs["position_ids"] = positions
        kwargs.update(extra(x.shape[0]) if extra else {})
        try:
            return module(**kwargs)
        except Exception as error:   # the model's own error, named with the run it came from
            raise AttnCallError(f"the model raised {type(error).__name__} in a cached forward of "
                                f"{x.shape[1]} token(s) after {mask.shape[1] - x.shape[1]}: {error}") from error

    def runs(seed: int) -> list[tuple[str, str]]:
        L, found = CACHE_LENGTH, []
        x = torch.randn(2, L, E, generator=torch.Generator().manual_seed(seed + 3))
        for padded in (False, True):
            if padded and not takes_positions:
                continue
            kpm = torch.zeros(2, L, dtype=torch.bool)
            if padded:
                kpm[1, :3] = True
            mask, positions = (~kpm).long(), positions_of(kpm)
            with torch.no_grad():
                full = forward(x, mask, positions, None, False).last_hidden_state
                tolerance = Tolerance.default(working_dtype(module, (), full.dtype, dtype), None, None)

                def step(start: int, end: int, cache: object, mask: torch.Tensor = mask,
                         positions: torch.Tensor = positions) -> tuple[torch.Tensor, object]:   # this padding's
                    out = forward(x[:, start:end], mask[:, :end], positions[:, start:end], cache, True)
                    return out.last_hidden_state, getattr(out, key)
                case = say(", item 1 left-padded by 3", "、サンプル 1 を 3 つ左パディング") if padded else ""
                found += cache_mismatches(step, full, tolerance, ~kpm, case)
        return found
    return runs


# Sizes of the parts some architectures add (rotary slices, low-rank attention, experts), set where they exist.
TINY_PARTS = dict(rotary_dim=4, qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=8, kv_lora_rank=8, q_lora_rank=8,
                  num_experts=4, num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                  moe_intermediate_size=16, first_k_dense_replace=1, expert_intermediate_size=16)
# What is tried, in order, until a model builds and runs 4 tokens (one item left-padded): all the small sizes;
# then without the head shapes (the config derives them); then twice as wide with 2 key-value heads (some need an
# even number).
VARIANTS = ({**TINY, **TINY_PARTS},
            {k: v for k, v in {**TINY, **TINY_PARTS}.items() if k not in ("head_dim", "num_key_value_heads", "d_kv")},
            {**TINY, **TINY_PARTS, "hidden_size": 32, "n_embd": 32, "d_model": 32, "num_attention_heads": 4,
             "n_head": 4, "num_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "intermediate_size": 64})


def _sizes(default: object, variant: dict, parts: bool, window: bool = True) -> dict:
    """The variant's sizes that `default` (a config) has; every vocabulary of more than 64 entries cut to 64 (LUKE's
    500,000 entities, RoCBert's shapes); a sliding window of TINY_WINDOW where it has one; and, with `parts`, each
    sub-config (a multimodal model's vision or audio tower, an encoder-decoder's halves) made small the same way,
    since a tower at its default size makes a tiny model take minutes to build. An encoder-decoder's halves keep
    their own (long) windows: `diagnose` checks them as plain encoder and decoder (T5Gemma 2's halves slide)."""
    sizes = {k: v for k, v in variant.items() if hasattr(default, k)}
    for name, value in vars(default).items():
        if name.endswith(("vocab_size", "_vocab")) and type(value) is int and value > 64:
            sizes[name] = 64
    if window and isinstance(getattr(default, "sliding_window", None), int):
        sizes["sliding_window"] = TINY_WINDOW
    halves = getattr(default, "is_encoder_decoder", False)
    for name in getattr(default, "sub_configs", {}) if parts else ():
        sub = getattr(default, name, None)
        if sub is not None and hasattr(sub, "to_dict"):
            sizes[name] = type(sub)(**_sizes(sub, variant, parts, window=window and not halves))
    return sizes


def tiny_model(kind: str, attn_implementation: str = "sdpa", dtype: torch.dtype | None = None) -> nn.Module:
    """A tiny random base model of a transformers architecture (AutoModel), from its config class with small sizes
    (VARIANTS, the first that builds and runs 4 tokens, padded and not, with its sub-configs small too, else the
    first with them at their defaults; a sliding window of TINY_WINDOW where a config has one: `_sizes`), seeded,
    in eval mode. Nothing is downloaded. The last variant's error if none works."""
    import transformers
    from transformers import CONFIG_MAPPING, AutoModel

    if not isinstance(kind, str) or kind not in CONFIG_MAPPING:
        raise ValueError(f"model type must be one of transformers {transformers.__version__}'s config names (see "
                         f"--list-model-types), got {kind!r}")
    config_class = CONFIG_MAPPING[kind]
    with _quiet():
        default = config_class()
    error: Exception | None = None
    # every variant with its sub-configs made small too; then the first with them at their defaults
    for variant, parts in [*((v, True) for v in VARIANTS), (VARIANTS[0], False)]:
        torch.manual_seed(0)
        try:
            with _quiet():
                model = AutoModel.from_config(config_class(**_sizes(default, variant, parts)),
                                              attn_implementation=attn_implementation,
                                              **({"dtype": dtype} if dtype is not None else {})).eval()
                E = _embed_dim(_base(model), None)
                with torch.no_grad():   # 4 tokens, item 1 left-padded: some sizes fail only with a mask
                    x = torch.randn(2, 4, E, dtype=_dtype(model))
                    mask = torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1]])
                    if getattr(model.config, "is_encoder_decoder", False):
                        model(inputs_embeds=x, attention_mask=mask, decoder_inputs_embeds=x)
                    else:
                        model(inputs_embeds=x, attention_mask=mask)
            return model
        except Exception as failed:   # noqa: BLE001  (try the next sizes; the last error is raised)
            if "attention implementation" in str(failed):
                raise
            error = failed
    assert error is not None
    raise error


class _quiet:
    """transformers' warnings about tiny configs (token ids outside a 64-word vocabulary) off for a while."""

    def __enter__(self) -> None:
        from transformers.utils import logging

        self.level = logging.get_verbosity()
        logging.set_verbosity_error()

    def __exit__(self, *exc: object) -> None:
        from transformers.utils import logging

        logging.set_verbosity(self.level)


def model_types() -> list[str]:
    """transformers' architectures with a base model (AutoModel) that is a decoder-only, encoder-only or
    encoder-decoder language model (listed as a causal, masked or sequence-to-sequence LM)."""
    from transformers.models.auto import modeling_auto as auto

    text = set(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) | set(auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES) | set(
        auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES)
    return sorted(text & set(auto.MODEL_MAPPING_NAMES))


__all__ = ["declared", "is_transformers_model", "model_types", "subjects", "tiny_model"]
