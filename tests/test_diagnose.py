"""helpers.diagnose: every finding code from a module that must produce it, and none from correct ones (plain
modules; GPT-2, Llama, Mistral, BERT, T5 and BART from tiny configs); the report's forms; the command line's exit
codes, --json and --list-model-types; tools.sweep on a small fixed sample. The tests that build transformers
models are `slow` (make test runs them, make unit does not)."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from helpers import diagnose as diagnose_from_package
from helpers.diagnose import CODES, Diagnosis, Finding, diagnose, hf
from helpers.diagnose.__main__ import main as cli
from helpers.language import speaking
from helpers.masks import causal_mask

E = 8


def attention(x: torch.Tensor, blocked: torch.Tensor, proj: nn.Linear, fill: float = torch.finfo().min) -> torch.Tensor:
    """Single-head attention with a bool mask (N, L, S) or (L, S), True = blocked, filled with `fill` (a finite one
    keeps a left pad's dead row finite, forward and backward): minGPT-sized."""
    q, k, v = proj(x).chunk(3, -1)                                  # (N, L, E) each
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])       # (N, L, S)
    return torch.softmax(scores.masked_fill(blocked, fill), -1) @ v


class Attn(nn.Module):
    """A module that owns its mask: causal or not, a window, and one chosen bug at a time."""

    def __init__(self, causal: bool = False, window: int | None = None, bug: str | None = None,
                 fill: float = torch.finfo().min):
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(E, 3 * E)
        self.pos = nn.Embedding(32, E)
        self.fill = fill
        self.is_causal, self.window, self.bug, self.embed_dim = causal, window, bug, E

    def forward(self, x, key_padding_mask, attn_mask, position_ids=None):
        N, L, _ = x.shape
        if self.bug == "absolute positions":          # positions 0..L-1, whatever the padding (no position_ids)
            x = x + self.pos(torch.arange(L))
        elif self.bug == "learned positions":        # as a Hugging Face decoder: 0..L-1 unless position_ids given
            x = x + self.pos(torch.arange(L) if position_ids is None else position_ids)
        if self.bug == "batch statistics":
            x = x - x.mean(0, keepdim=True)
        blocked = torch.zeros(N, L, L, dtype=torch.bool)
        if self.bug != "ignores padding" and not (self.bug == "no mask at batch size 1" and N == 1):
            blocked |= key_padding_mask[:, None, :]
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        if self.is_causal or self.bug == "causal encoder":
            blocked |= j > i
        if self.window is not None:
            blocked |= i - j >= self.window
        if self.bug == "weak fill":
            q, k, v = self.proj(x).chunk(3, -1)
            scores = q @ k.transpose(-2, -1) / math.sqrt(E) + blocked.float() * -30.0
            return torch.softmax(scores, -1) @ v
        return attention(x, blocked, self.proj, self.fill)


class TwoLayers(nn.Module):
    """Causal attention twice, with a residual: a left pad's query row sees no key, turns NaN, and the second
    layer carries the NaN into every real row (weight 0 times value NaN)."""

    is_causal, embed_dim = True, E

    def __init__(self):
        super().__init__()
        self.a, self.b = Attn(causal=True, fill=-math.inf), Attn(causal=True, fill=-math.inf)

    def forward(self, x, key_padding_mask, attn_mask, position_ids=None):
        h = x + self.a(x, key_padding_mask, None)
        return h + self.b(h, key_padding_mask, None)


class CleanedRows(nn.Module):
    """Pad queries masked too (every key of a pad row blocked, additively): NaN rows, cleaned before the output,
    so the forward is finite but the backward carries NaN into the parameters."""

    is_causal, embed_dim = False, E

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(E, 3 * E)

    def forward(self, x, key_padding_mask, attn_mask):
        q, k, v = self.proj(x).chunk(3, -1)
        blocked = key_padding_mask[:, None, :] | key_padding_mask[:, :, None]
        scores = q @ k.transpose(-2, -1) + torch.zeros_like(blocked, dtype=x.dtype).masked_fill(blocked, -math.inf)
        out = torch.softmax(scores, -1) @ v
        return torch.where(key_padding_mask[..., None], 0.0, out)


class Cached(nn.Module):
    """Causal attention with the cache protocol; bug=True builds each step's mask for the new tokens alone."""

    is_causal, embed_dim = True, E

    def __init__(self, bug: bool = False):
        super().__init__()
        torch.manual_seed(0)
        self.proj, self.bug = nn.Linear(E, 3 * E), bug

    def forward(self, x, key_padding_mask, attn_mask):
        L = x.shape[1]
        blocked = key_padding_mask[:, None, :] | causal_mask(L)
        return attention(x, blocked, self.proj)

    def forward_with_cache(self, x, cache):
        q, k, v = self.proj(x).chunk(3, -1)
        past_k, past_v = cache if cache is not None else (k[:, :0], v[:, :0])
        k, v = torch.cat([past_k, k], 1), torch.cat([past_v, v], 1)
        T, S = x.shape[1], k.shape[1]
        blocked = torch.ones(T, S, dtype=torch.bool).triu(S - T + 1)       # new token t sees keys <= S - T + t
        if self.bug:
            blocked = blocked.clone()
            blocked[:, : S - T] = True                                       # ... but not the cached ones
        weights = torch.softmax((q @ k.transpose(-2, -1) / math.sqrt(E)).masked_fill(blocked, torch.finfo().min), -1)
        return weights @ v, (k, v)


def codes(model, **kwargs) -> list[str]:
    return diagnose(model, **kwargs).codes


def two_documents(L: int = 16) -> torch.Tensor:
    """Causal within each of two packed documents of 8 tokens: bool (L, L), True = not allowed."""
    doc = torch.arange(L) // 8
    return causal_mask(L) | (doc[:, None] != doc[None, :])


# --- every code from a module that must produce it ---

@pytest.mark.parametrize(("model", "kwargs", "code"), [
    (nn.MultiheadAttention(E, 2, batch_first=True).eval(), {"expect": "causal"}, "future-leak"),
    (Attn(bug="causal encoder"), {}, "over-masking"),
    (Attn(causal=True, window=4), {"expect": "sliding_window", "window": 3}, "window-mismatch"),
    (Attn(causal=True, window=3), {"expect": "sliding_window", "window": 4}, "window-mismatch"),
    (Attn(causal=True), {"expect": two_documents()}, "document-leak"),
    (Attn(bug="ignores padding"), {}, "pad-leak"),
    (Attn(bug="no mask at batch size 1"), {}, "pad-leak"),
    (Attn(bug="weak fill"), {}, "pad-leak"),
    (Attn(causal=True, bug="absolute positions"), {}, "pad-leak"),
    (Attn(causal=True, bug="learned positions"), {}, "position-ids"),
    (Cached(bug=True), {}, "cache-mismatch"),
    (TwoLayers(), {}, "nan-forward"),
    (CleanedRows(), {}, "nan-gradient"),
    (nn.MultiheadAttention(E, 2, dropout=0.5, batch_first=True), {"expect": "bidirectional"}, "nondeterministic"),
    (Attn(bug="batch statistics"), {}, "batch-dependence"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_each_code_is_found(model, kwargs, code):
    found = diagnose(model, **kwargs)
    assert code in found.codes, str(found)
    assert found.passed is (code == "position-ids")   # a warning: the model is right when given position ids


def test_every_code_is_tested_and_explained():
    tested = {"future-leak", "over-masking", "window-mismatch", "document-leak", "pad-leak", "position-ids",
              "cache-mismatch", "nan-forward", "nan-gradient", "nondeterministic", "batch-dependence"}
    assert set(CODES) == tested


def test_a_finding_message_says_what_where_how_much_and_the_usual_cause():
    found = diagnose(Attn(bug="no mask at batch size 1"))
    leak = next(f for f in found.findings if f.code == "pad-leak")
    assert isinstance(leak, Finding) and leak.where == "model"
    assert "batch size 1" in leak.message and "worst difference" in leak.message and "position" in leak.message
    assert "Usually the padding mask is dropped on one path" in leak.message
    with speaking("ja"):
        leak_ja = next(f for f in diagnose(Attn(bug="no mask at batch size 1")).findings if f.code == "pad-leak")
    assert "バッチサイズ 1" in leak_ja.message and "多くの場合" in leak_ja.message


def test_the_japanese_report_says_its_own_words():
    """In Japanese: real tokens are 実トークン, a padding side reads 右パディングで実行すると … or
    左右どちらのパディングで実行しても, a given expectation is
    「expect= で指定」, a list's 'more' is Japanese, and a finding's part of the model is followed by 「：」."""
    with speaking("ja"):
        text = str(diagnose(Attn(bug="no mask at batch size 1"), expect="bidirectional"))
        pattern = str(diagnose(Attn(), expect="causal"))
    assert "本物" not in text and "実トークンの出力" in text
    assert "パディングしたサンプル単独（バッチサイズ 1）を左右どちらのパディングで実行しても、" in text
    assert "（expect= で指定）" in text and "given expect=" not in text and "[pad-leak] model：" in text
    assert "、…（ほか " in pattern and "more)" not in pattern
    from helpers.diagnose.report import CAUSES
    assert not any("本物" in c.ja or "経路" in c.ja for c in CAUSES.values())


# --- correct modules: no finding ---

@pytest.mark.parametrize(("model", "kwargs"), [
    (nn.MultiheadAttention(E, 2, batch_first=True).eval(), {"expect": "bidirectional"}),
    (nn.MultiheadAttention(E, 2, batch_first=True).eval(), {"expect": "causal", "attn_mask": causal_mask(16)}),
    (Attn(), {}),
    (Attn(causal=True), {}),
    (Attn(causal=True, window=3), {"expect": "sliding_window", "window": 3}),
    (Attn(causal=True, bug="learned positions"), {"expect": "causal", "attn_mask": causal_mask(16)}),
    (Cached(), {}),
    (nn.TransformerEncoderLayer(E, 2, 16, dropout=0.0, batch_first=True).eval(), {"expect": "bidirectional"}),
], ids=["mha", "mha+causal mask", "encoder", "decoder", "window", "forwarded mask", "cache", "encoder layer"])
def test_correct_modules_pass(model, kwargs):
    found = diagnose(model, **kwargs)
    assert found.passed and found.findings == [], str(found)


def test_without_an_expectation_the_mask_is_described_not_judged():
    found = diagnose(nn.MultiheadAttention(E, 2, batch_first=True).eval())
    assert found.passed and found.findings == []
    assert any("no expectation" in note and "bidirectional" in note for note in found.notes)
    assert ("model", "mask pattern", "skipped: no expectation (inferred only)") in found.ran


def test_a_module_s_is_causal_is_its_expectation():
    found = diagnose(Attn(causal=True))
    assert found.expectations == [("model", "causal", "the module's is_causal=True")]
    assert diagnose(Attn()).expectations == [("model", "bidirectional", "the module's is_causal=False")]


def test_nan_at_pad_positions_only_is_a_note():
    found = diagnose(nn.MultiheadAttention(E, 2, batch_first=True).eval(), expect="causal",
                     attn_mask=causal_mask(16))
    assert found.passed and any("NaN or inf at pad positions only" in note for note in found.notes)


def test_nondeterministic_stops_the_other_checks():
    found = diagnose(nn.MultiheadAttention(E, 2, dropout=0.5, batch_first=True), expect="bidirectional")
    assert found.codes == ["nondeterministic"]
    assert all(r.outcome.startswith("skipped") for r in found.ran if r.check != "determinism")


def test_the_report_as_text_json_and_figure(monkeypatch):
    found = diagnose(nn.MultiheadAttention(E, 2, batch_first=True).eval(), expect="causal")
    assert isinstance(found, Diagnosis) and not found.passed
    assert str(found).startswith("diagnose MultiheadAttention: FAILED (future-leak)")
    data = json.loads(json.dumps(found.to_dict()))
    assert data["passed"] is False and data["codes"] == ["future-leak"]
    assert data["findings"][0]["code"] == "future-leak" and data["patterns"][0]["expected"][0][1] == 1
    import matplotlib
    matplotlib.use("Agg")
    figures = found.show()
    assert len(figures) == 1


def test_helpers_diagnose_is_the_function():
    assert diagnose_from_package is diagnose


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"expect": "windowed"}, ValueError, "expect must be one of"),
    ({"expect": 3}, TypeError, "expect must be a pattern name"),
    ({"expect": "sliding_window"}, ValueError, "needs window="),
    ({"expect": "causal", "window": 3}, ValueError, "window goes with expect='sliding_window'"),
    ({"length": 1}, ValueError, "length"),
    ({"attn_mask": torch.zeros(4, 4)}, TypeError, "attn_mask"),
    ({"attn_mask": torch.zeros(4, 5, dtype=torch.bool)}, ValueError, "square"),
    ({"dtype": "bfloat16"}, TypeError, "dtype must be a torch.dtype"),
])
def test_bad_arguments_are_refused_by_name(kwargs, error, message):
    with pytest.raises(error, match=message):
        diagnose(nn.MultiheadAttention(E, 2, batch_first=True).eval(), **kwargs)


def test_a_model_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="model must be a transformers PreTrainedModel or a callable"):
        diagnose("gpt2")


# --- transformers models from tiny configs ---

@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
@pytest.mark.parametrize(("kind", "expected", "warned"), [
    ("gpt2", [("gpt2", "causal")], ["position-ids"]),
    ("llama", [("llama", "causal")], []),
    ("mistral", [("mistral", "sliding_window (window 3)")], []),
    ("bert", [("bert", "bidirectional")], ["position-ids"]),
    ("t5", [("encoder", "bidirectional"), ("decoder self-attention", "causal"), ("cross-attention", "bidirectional")],
     []),
    ("bart", [("encoder", "bidirectional"), ("decoder self-attention", "causal"),
              ("cross-attention", "bidirectional")], []),
])
def test_tiny_transformers_models_pass_with_what_their_configs_declare(kind, expected, warned):
    found = diagnose(hf.tiny_model(kind))
    assert found.passed and found.codes == warned, str(found)
    assert [(where, what) for where, what, _ in found.expectations] == expected
    assert not [r for r in found.ran if r.outcome.startswith(("error", "failed"))], found.ran


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_a_bert_decoder_used_as_an_encoder_over_masks():
    """BertModel(is_decoder=True) is causal: asked for an encoder, diagnose finds the hidden future."""
    import transformers

    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=32, is_decoder=True)
    model = transformers.BertModel(config).eval()
    assert diagnose(model).expectations[0][1:] == ("causal", "config.is_decoder=True")
    assert "over-masking" in diagnose(model, expect="bidirectional").codes


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_mistral_against_a_wrong_window_and_a_bidirectional_claim():
    model = hf.tiny_model("mistral")
    assert "window-mismatch" in diagnose(model, expect="sliding_window", window=4).codes
    assert "over-masking" in diagnose(model, expect="bidirectional").codes


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_a_cached_transformers_model_is_compared_with_its_full_pass():
    found = diagnose(hf.tiny_model("llama"))
    assert ("llama", "cache", "passed") in found.ran


def test_the_architectures_listed_include_the_three_kinds():
    kinds = hf.model_types()
    assert {"gpt2", "llama", "mistral", "bert", "t5", "bart"} <= set(kinds)
    with pytest.raises(ValueError, match="model type must be one of"):
        hf.tiny_model("no-such-architecture")


# --- the command line ---

@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_the_command_line_exit_codes(capsys):
    assert cli(["--model-type", "llama"]) == 0
    assert "diagnose LlamaModel (llama): passed" in capsys.readouterr().out
    assert cli(["--model-type", "mistral", "--expect", "bidirectional"]) == 1
    assert "over-masking" in capsys.readouterr().out
    assert cli([]) == 2
    assert cli(["--model-type", "no-such-architecture"]) == 2
    assert "model type must be one of" in capsys.readouterr().err
    assert cli(["--module", "nothing-here"]) == 2


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_the_command_line_json(capsys):
    assert cli(["--model-type", "gpt2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is True and data["codes"] == ["position-ids"]
    assert data["findings"][0]["severity"] == "warning"


def test_the_command_line_diagnoses_a_module_by_its_factory(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_attention.py").write_text(
        "from torch import nn\n"
        "def make():\n"
        "    return nn.MultiheadAttention(8, 2, batch_first=True).eval()\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert cli(["--module", "my_attention:make", "--expect", "causal"]) == 1
    assert "future-leak" in capsys.readouterr().out
    assert cli(["--module", "my_attention:make", "--expect", "bidirectional"]) == 0


def test_list_model_types(capsys):
    assert cli(["--list-model-types"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert any(line.startswith("llama\t") for line in listed) and len(listed) == len(hf.model_types())


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_pretrained_without_the_network_says_so():
    """Offline (HF_HUB_OFFLINE=1, as on a machine without the network, without the minute of retries)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "helpers.diagnose", "--pretrained", "no-such-org/no-such-model"],
                          capture_output=True, text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"), timeout=120)
    assert done.returncode == 2 and "needs the network" in done.stderr, done.stderr


# --- the sweep, on a small fixed sample ---

@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_the_sweep_on_a_sample(tmp_path):
    from tools import sweep

    assert sweep.main(["--only", "gpt2", "qwen2", "--jobs", "1", "--out", str(tmp_path / "sample")]) == 0
    table = json.loads((tmp_path / "sample.json").read_text())
    assert [(r["model_type"], r["attn_implementation"]) for r in table["rows"]] == [
        ("gpt2", "eager"), ("gpt2", "sdpa"), ("qwen2", "eager"), ("qwen2", "sdpa")]
    assert all(r["built"] and r["passed"] for r in table["rows"])
    assert "| qwen2 | sdpa | yes | yes |" in (tmp_path / "sample.md").read_text()
    assert sweep.main(["--only", "gpt2", "--merge", "--jobs", "1", "--out", str(tmp_path / "sample")]) == 0
    merged = json.loads((tmp_path / "sample.json").read_text())
    assert len(merged["rows"]) == 4 and merged["meta"]["rerun"] == ["gpt2"]
    assert "Run again after a fix to diagnose (`--merge`): gpt2." in (tmp_path / "sample.md").read_text()


def test_f_is_used():   # the module's own attention agrees with SDPA (the tests' reference)
    x = torch.randn(2, 5, E)
    proj = nn.Linear(E, 3 * E)
    q, k, v = proj(x).chunk(3, -1)
    blocked = causal_mask(5)
    assert torch.allclose(attention(x, blocked, proj), F.scaled_dot_product_attention(q, k, v, attn_mask=~blocked),
                          atol=1e-6)


class FailsAlone(Attn):
    """Raises on a batch of one: the checks that need one cannot run."""

    def forward(self, x, key_padding_mask, attn_mask, position_ids=None):
        if x.shape[0] == 1:
            raise RuntimeError("this module needs a batch of at least 2")
        return super().forward(x, key_padding_mask, attn_mask, position_ids)


def test_a_check_the_model_cannot_run_fails_the_diagnosis_and_names_the_error():
    found = diagnose(FailsAlone())
    assert not found.passed and found.errors and found.codes == []
    assert "batch of at least 2" in found.errors[0].outcome
    assert "NOT CHECKED" in str(found)
    assert found.to_dict()["errors"]


class CacheRaises(Cached):
    """A step mask built for the new tokens alone, (T, T) against (T, cached + T) scores: the first call works,
    the first call against a cache raises."""

    def forward_with_cache(self, x, cache):
        if cache is not None:
            raise RuntimeError("The size of tensor a (6) must match the size of tensor b (12)")
        return super().forward_with_cache(x, cache)


def test_an_error_inside_forward_with_cache_is_an_error_outcome_not_a_traceback():
    found = diagnose(CacheRaises())
    cache = [r for r in found.ran if r.check == "cache"]
    assert len(cache) == 1 and cache[0].outcome.startswith("error: forward_with_cache raised RuntimeError")
    assert "after 6 cached" in cache[0].outcome and "must match" in cache[0].outcome
    assert not found.passed and found.codes == [] and found.errors == cache
    assert any("cache" in note and "must match" in note for note in found.notes)
    assert [r.outcome for r in found.ran if r.check != "cache"].count("passed") >= 4   # the rest still ran


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_a_model_that_scales_inputs_embeds_in_place_is_not_called_a_cache_bug():
    """CTRLModel multiplies the caller's inputs_embeds by sqrt(d_model) in place (docs/diagnose-findings.md):
    diagnose gives every call its own copy, so its cache check compares like with like."""
    found = diagnose(hf.tiny_model("ctrl"))
    assert found.passed and found.codes == ["position-ids"], str(found)
    assert ("ctrl", "cache", "passed") in found.ran


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_a_bert_like_encoder_with_is_decoder_false_is_expected_bidirectional():
    found = diagnose(hf.tiny_model("bert-generation"))
    assert found.expectations[0][1] == "bidirectional" and "is_decoder=False" in found.expectations[0][2]
    assert found.passed, str(found)


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_convbert_s_convolution_reads_the_pads():
    """A real leak of transformers' ConvBERT (docs/diagnose-findings.md): its span-based convolution mixes the
    neighbouring positions, pads included, with no mask."""
    assert "pad-leak" in diagnose(hf.tiny_model("convbert", "eager")).codes


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_a_bidirectional_sliding_window_is_expected_as_one():
    """UltraBERT's layers are all sliding_attention: an encoder window, |i - j| <= sliding_window (masking_utils),
    not a bidirectional encoder (the sweep's first run called it over-masking)."""
    found = diagnose(hf.tiny_model("ultrabert"))
    assert found.expectations[0][1] == "bidirectional window |i - j| <= 3", found.expectations
    assert found.passed, str(found)


def test_a_wrong_bidirectional_window_is_a_window_mismatch():
    class Local(Attn):
        def forward(self, x, key_padding_mask, attn_mask, position_ids=None):
            L = x.shape[1]
            i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
            return attention(x, key_padding_mask[:, None, :] | ((i - j).abs() > 3), self.proj)

    assert diagnose(Local(), expect=hf.bidirectional_window(3)).passed
    assert diagnose(Local(), expect=hf.bidirectional_window(2)).codes == ["window-mismatch"]
    assert diagnose(Local(), expect=hf.bidirectional_window(4)).codes == ["window-mismatch"]


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_transformers_models_with_their_bugs():
    """The same codes from transformers models: GPT-2 whose attention modules were told is_causal=False (when
    nothing is padded the mask is None and SDPA's is_causal decides: transformers #48748, #46077) leaks the future
    and cannot be cached; a Llama in training mode with attention dropout is random; T5's decoder, claimed
    bidirectional, over-masks."""
    import transformers

    gpt2 = hf.tiny_model("gpt2")
    for module in gpt2.modules():
        if isinstance(getattr(module, "is_causal", None), bool):
            module.is_causal = False
    assert {"future-leak", "cache-mismatch"} <= set(diagnose(gpt2).codes)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, attention_dropout=0.5)
    assert diagnose(transformers.LlamaModel(config).train()).codes == ["nondeterministic"]
    found = diagnose(hf.tiny_model("t5"), expect="bidirectional")
    assert found.codes == ["over-masking"] and found.findings[0].where == "decoder self-attention"


def _on_the_last_norm(model: nn.Module, change) -> nn.Module:
    """The model with `change` applied to the output of its last normalisation layer (a tensor in every
    architecture, unlike the attention layers' tuples): a fault planted where every real position reads it."""
    norm = [m for m in model.modules() if type(m).__name__.endswith(("Norm", "LayerNorm"))][-1]
    norm.register_forward_hook(lambda module, args, out: change(out))
    return model


def _nan_at_the_first_position(out: torch.Tensor) -> torch.Tensor:
    return out.index_fill(1, torch.tensor([0]), math.nan)


def _nan_only_backward(out: torch.Tensor) -> torch.Tensor:
    """The forward is `out`; the branch torch.where does not take is sqrt of a negative number, whose gradient
    0 × (1 / NaN) is NaN."""
    return torch.where(torch.ones_like(out, dtype=torch.bool), out, (-1 - out.abs()).sqrt())


def _minus_the_batch_mean(out: torch.Tensor) -> torch.Tensor:
    return out - out.mean(0, keepdim=True)


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
@pytest.mark.parametrize(("kind", "change", "kwargs", "code"), [
    ("llama", None, {"expect": two_documents()}, "document-leak"),
    ("bert", _nan_at_the_first_position, {}, "nan-forward"),
    ("bart", _nan_only_backward, {}, "nan-gradient"),
    ("t5", _minus_the_batch_mean, {}, "batch-dependence"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_the_other_codes_from_transformers_models(kind, change, kwargs, code):
    """The codes the tests above do not get from a transformers model, from one: a causal model asked for two
    packed documents (it attends across them: PR#46634's class of bug); a NaN, a NaN gradient and a batch
    statistic planted in the last normalisation layer. The same models unchanged pass (test above)."""
    model = hf.tiny_model(kind)
    found = diagnose(_on_the_last_norm(model, change) if change else model, **kwargs)
    assert code in found.codes and not found.passed, str(found)


def test_tiny_sizes_reach_sub_configs_and_every_vocabulary():
    """A vision tower at its default size made a tiny Gemma 3 take minutes to build: sub-configs get the small sizes
    too, and so does every vocabulary (LUKE's 500,000 entities)."""
    from transformers import CONFIG_MAPPING

    sizes = hf._sizes(CONFIG_MAPPING["gemma3"](), hf.VARIANTS[0], parts=True)
    assert sizes["vision_config"].hidden_size == 16 and sizes["text_config"].num_hidden_layers == 2
    assert sizes["text_config"].sliding_window == hf.TINY_WINDOW
    assert "vision_config" not in hf._sizes(CONFIG_MAPPING["gemma3"](), hf.VARIANTS[0], parts=False)
    assert hf._sizes(CONFIG_MAPPING["luke"](), hf.VARIANTS[0], parts=True)["entity_vocab_size"] == 64


@pytest.mark.slow   # transformers models (seconds each): in make test, not in make unit
def test_a_multimodal_decoder_declares_its_window_in_its_text_config():
    """Gemma 3's language model slides (text_config.layer_types); its vision tower's patch convolution is not a
    convolution along the text, so the window is what is checked."""
    found = diagnose(hf.tiny_model("gemma3"))
    assert found.passed, str(found)
    assert found.expectations[0][1] == "sliding_window (window 3)", found.expectations


class GatedConv(nn.Module):
    """A causal depthwise convolution with no attn_mask to take, forward(x, key_padding_mask), and forward_with_cache;
    gated=True zeroes the pads only when the batch has more than one item (the batch-of-one gate)."""

    is_causal, embed_dim = True, 8

    def __init__(self, gated: bool):
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.gated = nn.Conv1d(8, 8, 4, groups=8), gated

    def forward_with_cache(self, x, cache, key_padding_mask=None):
        if key_padding_mask is not None and (x.shape[0] > 1 or not self.gated):
            x = x.masked_fill(key_padding_mask[..., None], 0.0)
        window = torch.cat([torch.zeros(x.shape[0], 3, 8) if cache is None else cache, x], 1)
        return self.conv(window.transpose(1, 2)).transpose(1, 2), window[:, -3:]

    def forward(self, x, key_padding_mask):
        return self.forward_with_cache(x, None, key_padding_mask)[0]


def test_a_module_without_an_attn_mask_is_diagnosed_and_the_batch_of_one_gate_is_found():
    window = {"expect": "sliding_window", "window": 4}              # a kernel of 4: the band of chapter 13
    assert diagnose(GatedConv(gated=False), **window).codes == []   # its padding, pattern and cache checks pass
    report = diagnose(GatedConv(gated=True), **window)
    assert report.codes == ["pad-leak"] and "batch size 1" in report.findings[0].message
