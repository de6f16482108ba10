"""helpers.library: the installed source lines a chapter quotes, and tiny seeded models."""

import pytest
import torch
import transformers
from transformers import masking_utils
from transformers.integrations import sdpa_attention

from helpers import library


def test_source_lines_name_file_and_line():
    lines = library.source_lines(sdpa_attention.sdpa_attention_forward, 'getattr(module, "is_causal", True)')
    assert len(lines) == 1 and lines[0].startswith("transformers/integrations/sdpa_attention.py:")
    unwrapped = library.source_lines(masking_utils.create_causal_mask, 'if not getattr(config, "is_causal", True)')
    assert unwrapped[0].startswith("transformers/masking_utils.py:")        # past the deprecate_kwarg decorator
    with pytest.raises(ValueError, match="none of"):
        library.source_lines(sdpa_attention.sdpa_attention_forward, "no such line anywhere")
    with pytest.raises(ValueError, match="needles"):
        library.source_lines(sdpa_attention.sdpa_attention_forward)
    with pytest.raises(TypeError, match="function"):
        library.source_lines("sdpa", "x")


def test_show_source_prints_nothing_for_bad_arguments(capsys):
    with pytest.raises(ValueError, match="none of"):
        library.show_source(sdpa_attention.sdpa_attention_forward, "no such line anywhere")
    assert capsys.readouterr().out == ""


def test_tiny_is_seeded_small_and_refuses_what_is_not_a_class():
    sizes = dict(hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=4)
    a, b = library.tiny(transformers.LlamaConfig, **sizes), library.tiny(transformers.LlamaConfig, **sizes)
    assert not a.training and a.config.vocab_size == 20 and a.config.initializer_range == 0.5
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    other = library.tiny(transformers.LlamaConfig, transformers.LlamaForCausalLM, seed=1, **sizes)
    assert type(other).__name__ == "LlamaForCausalLM"
    assert not torch.equal(other.model.embed_tokens.weight, a.embed_tokens.weight)
    with pytest.raises(TypeError, match="config_class"):
        library.tiny(transformers.LlamaConfig(), **sizes)
    with pytest.raises(TypeError, match="model_class"):
        library.tiny(transformers.LlamaConfig, "llama", **sizes)
    with pytest.raises(TypeError, match="seed"):
        library.tiny(transformers.LlamaConfig, seed=0.5, **sizes)
