"""Chapter 9 (helpers.chapters.ch09_batched_generation), its tiny LM and its explorer: cached = uncached,
left-padded batch = one at a time, training is reproducible, and the masks do what the chapter says."""

import pytest
import torch

from helpers.chapters import ch09_batched_generation as ch09
from helpers.exercises import Mistake
from helpers.language import speaking
from helpers.masks import positions_from_mask


@pytest.fixture(scope="module")
def untrained() -> ch09.TinyLM:
    torch.manual_seed(0)
    return ch09.TinyLM().eval()


def _alone(model, prompts, steps=5):
    runs = [ch09.generate(model, torch.tensor([ch09.encode(p)]), steps=steps) for p in prompts]
    return torch.cat([r.tokens for r in runs]), torch.cat([r.logits for r in runs])


@pytest.mark.parametrize("cache", [True, False])
def test_left_padded_batch_equals_one_at_a_time(untrained, cache):
    prompts = ("3 5", "1 2 3 4 5 6", "7", "9 9 9")
    tokens, logits = _alone(untrained, prompts)
    ids, mask = ch09.padded_batch(prompts, "left")
    batch = ch09.generate(untrained, ids, mask, steps=5, cache=cache)
    assert torch.equal(batch.tokens, tokens)
    assert (batch.logits - logits).abs().max() < 1e-5


def test_cached_equals_uncached(untrained):
    ids, mask = ch09.padded_batch(("3 5", "1 2 3 4"), "left")
    cached, uncached = (ch09.generate(untrained, ids, mask, steps=6, cache=c) for c in (True, False))
    assert torch.equal(cached.tokens, uncached.tokens)
    assert (cached.logits - uncached.logits).abs().max() < 1e-5
    for a, b in zip(cached.weights, uncached.weights, strict=True):
        assert (a - b).abs().max() < 1e-5


def test_cache_step_matches_full_forward(untrained):
    ids = torch.tensor([[3, 5, 7, 9]])
    with torch.no_grad():
        full = untrained(ids)
        prefix = untrained(ids[:, :3])
        step = untrained(ids[:, 3:], past=prefix.past)
    assert step.past.keys[0].shape[2] == 4
    assert (step.logits[:, 0] - full.logits[:, 3]).abs().max() < 1e-5


def test_pads_get_zero_weight_and_bugs_show(untrained):
    ids, mask = ch09.padded_batch(("3 5", "1 2 3 4"), "left")
    pads = ids == ch09.PAD_ID
    good = ch09.generate(untrained, ids, mask, steps=3)
    assert all((w[:, :ids.shape[1]][pads] == 0).all() for w in good.weights)
    prompt_only = ch09.generate(untrained, ids, mask, steps=3, mask="prompt only")
    assert (prompt_only.weights[0][:, :ids.shape[1]][pads] == 0).all()
    assert (prompt_only.weights[1][:, :ids.shape[1]][pads] > 0).all()       # step 2: the pads are visible
    naive = ch09.generate(untrained, ids, mask, steps=3, positions="naive")
    assert (naive.logits - good.logits).abs().max() > 1e-3


def test_fill_inf_spreads_nan_finite_fill_does_not(untrained):
    ids, mask = ch09.padded_batch(("3 5", "1 2 3 4"), "left")
    pos = positions_from_mask(mask)
    with torch.no_grad():
        finite = untrained(ids, mask, pos)
        inf = untrained(ids, mask, pos, fill="-inf")
    assert finite.logits.isfinite().all()
    assert inf.logits[0, 2:].isnan().all()          # item 0's real tokens, reached through block 2's values


def test_positions_from_mask():
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1], [0, 1, 1, 1]])
    assert positions_from_mask(mask).tolist() == [[0, 0, 0, 1], [0, 1, 2, 3], [0, 0, 1, 2]]


def test_bad_arguments_are_named(untrained):
    ids = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match="position_ids"):
        untrained(ids, position_ids=torch.tensor([[0, 1, 16]]))
    with pytest.raises(ValueError, match="attention_mask"):
        untrained(ids, attention_mask=torch.ones(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="positions"):
        ch09.generate(untrained, ids, positions="left edge")
    with pytest.raises(ValueError, match="side"):
        ch09.padded_batch(side="middle")
    with pytest.raises(ValueError, match="step"):
        ch09.generation_view(step=0)


def test_training_is_reproducible_and_learns_to_count():
    trained = ch09.trained_model()
    torch.manual_seed(0)
    again = ch09.TinyLM()
    losses = ch09.train(again, ch09.counting_corpus(), steps=len(trained.losses), seed=0)
    assert losses == trained.losses
    for (name, a), (_, b) in zip(trained.model.state_dict().items(), again.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert [ch09.decode(row) for row in ch09.reference().tokens] == ["7 9 1 3 5 .", "5 6 7 . . .", "4 7 . . . ."]


def test_explorer_view_summaries():
    assert "3/3 items match" in ch09.generation_view().summary
    assert ch09.generation_view().summary.endswith("step 2: weight on pads, summed over the 3 items: 0")
    assert "1/3 items match" in ch09.generation_view(positions="naive (left edge)").summary
    right = ch09.generation_view(padding="right")
    assert "3/3" not in right.summary
    assert right.panels[0].alert and right.panels[0].red_rows


# --- the exercise checks ---

MASK_LEFT = torch.tensor([[0, 0, 0, 1, 1], [0, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
MASK_RIGHT = MASK_LEFT.flip(-1)
MASK_HOLE = torch.tensor([[1, 1, 0, 0, 0, 1, 1], [1, 1, 1, 1, 0, 1, 1], [1, 1, 1, 1, 1, 1, 1]])


def test_check_1_accepts_positions_with_zero_pads_and_names_each_mistake():
    ch09.check_1.solution(lambda m: (m.cumsum(-1) - 1).clamp(min=0) * m, MASK_LEFT, MASK_RIGHT, MASK_HOLE)
    wrong = {
        "a function": torch.zeros(3, 5),
        "mask's shape": lambda m: m.cumsum(-1)[:, :-1],
        "integers": lambda m: ((m.cumsum(-1) - 1).clamp(min=0) * m).float(),
        "never negative": lambda m: m.cumsum(-1) - 1,
        "as positions_from_mask does": positions_from_mask,
        "every pad gets 0": lambda m: ((m.cumsum(-1) - 1).clamp(min=0) * m).masked_fill(m == 0, 1),
        "from the left edge": lambda m: torch.arange(m.shape[1]).expand_as(m) * m,
        "one too many": lambda m: m.cumsum(-1) * m,
        "count the real tokens": lambda m: (m.cumsum(-1) - 1).clamp(min=0) * m // 2,
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch09.check_1(answer, MASK_LEFT, MASK_RIGHT, MASK_HOLE)
    with pytest.raises(TypeError, match="mask_left must hold integers 0/1"):   # helpers.masks.hf_attention_mask
        ch09.check_1(positions_from_mask, MASK_LEFT.float(), MASK_RIGHT, MASK_HOLE)


def test_check_1_never_prints_the_expected_positions():
    with pytest.raises(Mistake) as caught:
        ch09.check_1(lambda m: (m.cumsum(-1) - 1).clamp(min=0) * m // 2, MASK_LEFT, MASK_RIGHT, MASK_HOLE)
    assert "tensor" not in str(caught.value) and "\n" not in str(caught.value)


def test_check_2_accepts_the_last_real_position_and_names_each_mistake():
    ch09.check_2.solution(lambda logits, m: logits[torch.arange(len(logits)), m.sum(1) - 1].argmax(-1))
    wrong = {
        "a function": 3,
        "shape \\(N,\\)": lambda logits, m: logits[:, -1],
        "not logits": lambda logits, m: logits[torch.arange(len(logits)), m.sum(1) - 1].max(-1).values,
        "last column": lambda logits, m: logits[:, -1].argmax(-1),
        "one slot too far": lambda logits, m: logits[torch.arange(len(logits)), m.sum(1).clamp(max=m.shape[1] - 1)
                                                     ].argmax(-1),
        "argmax over the vocabulary": lambda logits, m: logits[torch.arange(len(logits)), 0].argmax(-1),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch09.check_2(answer)


def test_check_3_accepts_the_padding_mask_and_names_each_mistake():
    step = torch.cat([MASK_LEFT, torch.ones(3, 1, dtype=torch.long)], 1)
    ch09.check_3.solution(lambda m: m.bool()[:, None, None, :], step)
    wrong = {
        "a function": step.bool()[:, None, None, :],
        "bool tensor": lambda m: m[:, None, None, :],
        "shape should be": lambda m: m.bool()[:, None, :],
        "MHA's polarity": lambda m: (m == 0)[:, None, None, :],
        "must hide them": lambda m: torch.ones_like(m, dtype=torch.bool)[:, None, None, :],
        "key 0 only": lambda m: torch.nn.functional.pad(torch.ones(len(m), 1, 1, 1, dtype=torch.bool),
                                                          (0, m.shape[1] - 1)),
        "every one of them": lambda m: m.bool()[:, None, None, :] & (torch.arange(m.shape[1]) != m.shape[1] - 1),
    }
    for hint, answer in wrong.items():
        with pytest.raises(Mistake, match=hint):
            ch09.check_3(answer, step)


# --- the Japanese edition ---

def test_the_japanese_edition_reads_a_japanese_summary():
    with speaking("ja"):
        summary = ch09.generation_view("left", "from the mask", "prompt only", True, 3).summary
        assert summary == ("パディング：左、位置 ID：マスクから数える、マスク：プロンプトだけ、KV キャッシュ：オン。"
                           "基準と一致するサンプルは 3/3。ステップ 3：パッドに乗った重み（3 サンプルの合計）は 0.38")
        assert ch09.generation_view("right", mask="off", kv_cache=False).summary.startswith(
            "パディング：右、位置 ID：マスクから数える、マスク：なし、KV キャッシュ：オフ。")
    assert ch09.generation_view("left", "from the mask", "prompt only", True, 3).summary.startswith(
        "padding left, positions from the mask, mask prompt only, KV cache on: 3/3 items match the reference")


def test_the_japanese_edition_hears_japanese_hints():
    step = torch.cat([MASK_LEFT, torch.ones(3, 1, dtype=torch.long)], 1)
    wrong_1 = {
        "^answer_1 は、attention_mask を受け取って position_ids を返す関数": torch.zeros(3, 5),
        r"マスクと同じ形状 \(N, S\)": lambda m: m.cumsum(-1)[:, :-1],
        "位置 ID は整数": lambda m: ((m.cumsum(-1) - 1).clamp(min=0) * m).float(),
        "負になることはない": lambda m: m.cumsum(-1) - 1,
        "positions_from_mask と同じく": positions_from_mask,
        "パッドが違う（左パディングのマスク）": lambda m: ((m.cumsum(-1) - 1).clamp(min=0) * m).masked_fill(m == 0, 1),
        "^左パディングのマスクに対して、これはバッチの左端から": lambda m: torch.arange(m.shape[1]).expand_as(m) * m,
        "^1 つ多い": lambda m: m.cumsum(-1) * m,
        "同じ行でそれより前にある": lambda m: (m.cumsum(-1) - 1).clamp(min=0) * m // 2,
    }
    wrong_2 = {
        "^answer_2 は、.* を受け取って次のトークンを返す関数": 3,
        r"形状 \(N,\) = \(3,\) で返すこと": lambda logits, m: logits[:, -1],
        "ロジットではなく": lambda logits, m: logits[torch.arange(len(logits)), m.sum(1) - 1].max(-1).values,
        "最後の列": lambda logits, m: logits[:, -1].argmax(-1),
        "1 スロット先": lambda logits, m: logits[torch.arange(len(logits)), m.sum(1).clamp(max=m.shape[1] - 1)
                                               ].argmax(-1),
        "最後の実トークンの位置で読み": lambda logits, m: logits[torch.arange(len(logits)), 0].argmax(-1),
    }
    wrong_3 = {
        "^answer_3 は、attention_mask を受け取ってマスクを返す関数": step.bool()[:, None, None, :],
        "bool テンソル（True = 参照してよい）": lambda m: m[:, None, None, :],
        r"形状は \(N, 1, 1, S\) = \(3, 1, 1, 6\)": lambda m: m.bool()[:, None, :],
        "MHA の極性": lambda m: (m == 0)[:, None, None, :],
        "マスクでそれを隠す": lambda m: torch.ones_like(m, dtype=torch.bool)[:, None, None, :],
        "キー 0 しか見えない": lambda m: torch.nn.functional.pad(torch.ones(len(m), 1, 1, 1, dtype=torch.bool),
                                                           (0, m.shape[1] - 1)),
        "過不足なく見え": lambda m: m.bool()[:, None, None, :] & (torch.arange(m.shape[1]) != m.shape[1] - 1),
    }
    with speaking("ja"):
        for hint, answer in wrong_1.items():
            with pytest.raises(Mistake, match=hint):
                ch09.check_1(answer, MASK_LEFT, MASK_RIGHT, MASK_HOLE)
        for hint, answer in wrong_2.items():
            with pytest.raises(Mistake, match=hint):
                ch09.check_2(answer)
        for hint, answer in wrong_3.items():
            with pytest.raises(Mistake, match=hint):
                ch09.check_3(answer, step)
