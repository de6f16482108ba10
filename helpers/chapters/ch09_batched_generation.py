"""Chapter 9: batched greedy generation with a tiny decoder-only language model, and its explorer.

The model (TinyLM) is GPT-style: every mask it uses is visible, and it has a KV cache. It is trained in a few
seconds on counting lines ("3 5 7 9 1 3 5 . . . . ."); `trained_model()` trains it once per process (seeded,
one thread, deterministic), so the notebook and the explorer share it. `batched()` generates the padded batch
for one choice of padding side, position ids, mask and KV cache, once per combination (cached).
The explorer: padding side, position ids, mask and KV cache -> each item's continuation next to the
one-at-a-time reference, and the attention of the newest query at one decoding step; an update only builds
the tables from batched(). Both tables colour on a fixed 0-1 scale (probabilities and weights).
Last, the chapter's exercise checks.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import ipywidgets as widgets
import torch
from torch import nn

from helpers.attention import attention_steps
from helpers.exercises import Mistake, exercise
from helpers.explorer import RED, Explorer, Panel, View, explorer
from helpers.language import Bilingual, labeller, say
from helpers.masks import Fill, from_hf_attention_mask, hf_attention_mask, left_pad, positions_from_mask
from helpers.training import Adam, deterministic

# --- the model: TinyLM, with a KV cache, and greedy generation ---

TOKENS, PAD_ID = tuple("0123456789") + (".", "<pad>"), 11   # token id = the digit for 0-9; "." ends a line


class Cache(NamedTuple):
    keys: tuple[torch.Tensor, ...]    # per block (N, H, S, E/H): every key seen so far
    values: tuple[torch.Tensor, ...]  # per block (N, H, S, E/H)


class LMOutput(NamedTuple):
    logits: torch.Tensor               # (N, L, vocab)
    past: Cache                        # keys and values including this call's tokens
    weights: tuple[torch.Tensor, ...]  # per block: attention weights (N, H, L, S)


class Block(nn.Module):
    """Pre-norm causal self-attention (via helpers.attention_steps) plus an MLP, both residual."""

    def __init__(self, d: int, n_heads: int):
        super().__init__()
        self.n_heads, self.ln1, self.ln2 = n_heads, nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None,
                past: tuple[torch.Tensor, torch.Tensor] | None, fill: Fill):
        N, L, E = x.shape
        q, k, v = (t.view(N, L, self.n_heads, -1).transpose(1, 2) for t in self.qkv(self.ln1(x)).chunk(3, -1))
        if past is not None:                       # the cache: earlier keys and values, computed once
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        S = k.shape[2]
        # causal, aligned bottom-right: query i is position S - L + i and may not see a later key
        future = ~torch.ones(L, S, dtype=torch.bool).tril(diagonal=S - L)
        steps = attention_steps(q, k, v, key_padding_mask=key_padding_mask, attn_mask=future, fill=fill)
        x = x + self.proj(steps.output.transpose(1, 2).reshape(N, L, E))
        return x + self.mlp(self.ln2(x)), k, v, steps.weights


class TinyLM(nn.Module):
    """Token + learned absolute position embeddings, causal blocks, an LM head."""

    def __init__(self, vocab_size: int = len(TOKENS), d_model: int = 32, n_heads: int = 2,
                 n_layers: int = 2, max_len: int = 16):
        super().__init__()
        self.max_len = max_len
        self.tok, self.pos = nn.Embedding(vocab_size, d_model), nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab_size)

    def hidden(self, x: torch.Tensor, attention_mask: torch.Tensor | None = None,
               position_ids: torch.Tensor | None = None, past: Cache | None = None, fill: Fill = "min"):
        """Embeddings x (N, L, E), no positions yet -> hidden states (N, L, E), the new cache, the weights.

        attention_mask: (N, cached + new), 1 = keep, 0 = pad (Hugging Face's); position_ids: (N, L), by default
        counted from the left edge, after the cache."""
        (N, L, _), offset = x.shape, 0 if past is None else past.keys[0].shape[2]
        pos = torch.arange(offset, offset + L).expand(N, L) if position_ids is None else position_ids
        if pos.shape != (N, L) or pos.min() < 0 or pos.max() >= self.max_len:
            raise ValueError(f"position_ids must be (N, L) = {(N, L)} in [0, {self.max_len}), "
                             f"got {tuple(pos.shape)} in [{pos.min()}, {pos.max()}]")
        kpm = None if attention_mask is None else from_hf_attention_mask(attention_mask)   # True = pad
        if kpm is not None and kpm.shape != (N, offset + L):
            raise ValueError(f"attention_mask must be (N, cached + new) = {(N, offset + L)}, got {tuple(kpm.shape)}")
        x, keys, values, weights = x + self.pos(pos), [], [], []
        for i, block in enumerate(self.blocks):
            x, k, v, w = block(x, kpm, None if past is None else (past.keys[i], past.values[i]), fill)
            keys.append(k)
            values.append(v)
            weights.append(w)
        return self.ln_f(x), Cache(tuple(keys), tuple(values)), tuple(weights)

    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, past: Cache | None = None, fill: Fill = "min") -> LMOutput:
        """ids (N, L) -> logits (N, L, vocab) for the next token at every position."""
        h, cache, weights = self.hidden(self.tok(ids), attention_mask, position_ids, past, fill)
        return LMOutput(self.head(h), cache, weights)


class Generation(NamedTuple):
    tokens: torch.Tensor         # (N, steps): the new tokens
    logits: torch.Tensor         # (N, steps, vocab): the logits each one was picked from
    weights: list[torch.Tensor]  # per step: last block's weights of the newest query, mean over heads (N, S)


@torch.no_grad()
def generate(model: TinyLM, ids: torch.Tensor, attention_mask: torch.Tensor | None = None, steps: int = 6, *,
             positions: str = "mask", mask: str = "every step", cache: bool = True) -> Generation:
    """Greedy decoding: append the argmax of the LAST column's logits, `steps` times. positions: "mask"
    (cumsum of the mask - 1) or "naive" (from the left edge); mask: passed at "every step", on the "prompt only"
    (the first forward) or "off"; cache: feed only the newest token and reuse the cached keys and values."""
    if positions not in ("mask", "naive") or mask not in ("every step", "prompt only", "off"):
        raise ValueError(f"positions must be 'mask' or 'naive', mask 'every step', 'prompt only' or 'off'; "
                         f"got {positions!r}, {mask!r}")
    keep = torch.ones_like(ids) if attention_mask is None else attention_mask.long()
    seq, new, past, tokens, logits, weights = ids, ids, None, [], [], []
    for step in range(steps):
        pos = positions_from_mask(keep) if positions == "mask" else torch.arange(keep.shape[1]).expand_as(keep)
        shown = keep if mask == "every step" or (mask == "prompt only" and step == 0) else None
        out = model(new, shown, pos[:, -new.shape[1]:], past) if cache else model(seq, shown, pos)
        past = out.past
        logits.append(out.logits[:, -1])
        tokens.append(out.logits[:, -1].argmax(-1))
        weights.append(out.weights[-1][:, :, -1].mean(1))   # the newest query's row, last block
        new = tokens[-1][:, None]
        seq, keep = torch.cat([seq, new], 1), torch.cat([keep, torch.ones_like(new)], 1)
    return Generation(torch.stack(tokens, 1), torch.stack(logits, 1), weights)


# --- the running example: counting, trained once; the prompts, batched ---

PROMPTS = ("3 5", "1 2 3 4", "9 2 5 8 1")   # count by 2, by 1, by 3
STEPS = 6                                    # new tokens per prompt
SIDES = ("left", "right")
POSITIONS = {"from the mask": "mask", "naive (left edge)": "naive"}
MASKS = ("every step", "prompt only", "off")
LABELS_JA = {"left": "左", "right": "右", "from the mask": "マスクから数える",  # the options' Japanese labels
             "naive (left edge)": "素朴（左端から数える）", "every step": "毎ステップ", "prompt only": "プロンプトだけ",
             "off": "なし"}


def _labelled(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """(label, value) for each option: the label in the current language."""
    return [(say(v, LABELS_JA[v]), v) for v in values]


def counting_corpus(length: int = 12, numbers: int = 7) -> torch.Tensor:
    """(30, length) ids: from each digit, count `numbers` numbers by 1, 2 or 3 (mod 10), then '.' to the end."""
    lines = [[(start + i * by) % 10 for i in range(numbers)] + [TOKENS.index(".")] * (length - numbers)
             for by in (1, 2, 3) for start in range(10)]
    return torch.tensor(lines)


def train(model: TinyLM, corpus: torch.Tensor, steps: int = 60, lr: float = 1e-2, seed: int = 0) -> list[float]:
    """Full-batch AdamW on next-token cross-entropy, seeded, on one thread with deterministic kernels:
    every run is the same. The optimizer is helpers.training.Adam, torch.optim.AdamW's update written out."""
    torch.manual_seed(seed)
    optimizer, losses = Adam(model.parameters(), weight_decay=0.01), []   # 0.01: torch.optim.AdamW's default
    with deterministic():
        for _ in range(steps):
            logits = model(corpus[:, :-1]).logits                       # predict token t + 1 from tokens <= t
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), corpus[:, 1:].flatten())
            loss.backward()
            optimizer.step(lr)
            losses.append(loss.item())
    return losses


class Trained(NamedTuple):
    model: TinyLM
    losses: list[float]


@cache
def trained_model(seed: int = 0, steps: int = 60) -> Trained:
    """TinyLM (seeded) trained on counting_corpus(), in eval mode. Cached: trained once per process."""
    torch.manual_seed(seed)
    model = TinyLM()
    losses = train(model, counting_corpus(), steps=steps, seed=seed)
    return Trained(model.eval(), losses)


def encode(text: str) -> list[int]:
    """'3 5' -> [3, 5]."""
    return [TOKENS.index(t) for t in text.split()]


def decode(ids: torch.Tensor | list[int], pad: str = "_") -> str:
    """[3, 5, 11] -> '3 5 _' (pads shown as `pad`)."""
    return " ".join(pad if i == PAD_ID else TOKENS[i] for i in torch.as_tensor(ids).tolist())


def padded_batch(prompts: tuple[str, ...] = PROMPTS, side: str = "left") -> tuple[torch.Tensor, torch.Tensor]:
    """ids (N, S) padded with <pad> on `side`, and the attention_mask (N, S), 1 = real token."""
    if side not in SIDES:
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    lengths = [len(p.split()) for p in prompts]
    ids = torch.full((len(prompts), max(lengths)), PAD_ID)
    for i, p in enumerate(prompts):
        ids[i, :lengths[i]] = torch.tensor(encode(p))              # right-padded: each prompt's tokens first
    if side == "left":
        ids = left_pad(ids, lengths)                               # the same rows, pads first
    return ids, (ids != PAD_ID).long()


@cache
def reference() -> Generation:
    """Each prompt generated alone, unpadded: tokens (N, STEPS) and logits (N, STEPS, vocab)."""
    model = trained_model().model
    runs = [generate(model, torch.tensor([encode(p)]), steps=STEPS) for p in PROMPTS]
    return Generation(torch.cat([r.tokens for r in runs]), torch.cat([r.logits for r in runs]), [])


@cache
def batched(side: str, positions: str, mask: str, kv_cache: bool) -> Generation:
    """The padded batch of PROMPTS generated together (cached per combination)."""
    ids, attention_mask = padded_batch(PROMPTS, side)
    return generate(trained_model().model, ids, attention_mask, STEPS, positions=POSITIONS[positions],
                    mask=mask, cache=kv_cache)


# --- the explorer ---

def generation_view(padding: str = "left", positions: str = "from the mask", mask: str = "every step",
                    kv_cache: bool = True, step: int = 2) -> View:
    """Each item's continuation (probability of each chosen token; red = differs from the reference) and the
    attention of the newest query at decoding step `step` (last block, mean over heads)."""
    if padding not in SIDES or positions not in POSITIONS or mask not in MASKS:
        raise ValueError(f"padding, positions, mask must be in {SIDES}, {tuple(POSITIONS)}, {MASKS}")
    if not isinstance(step, int) or not 1 <= step <= STEPS:
        raise ValueError(f"step must be an int from 1 to {STEPS}, got {step!r}")
    run, ref = batched(padding, positions, mask, kv_cache), reference()
    ids, _ = padded_batch(PROMPTS, padding)
    rows, probs, wrong = [], [], []
    for i, prompt in enumerate(PROMPTS):                      # the reference, then this run, for each item
        for label, gen in ((say("alone", "単独"), ref), (say("batch", "バッチ"), run)):
            rows.append(f"{label}  {prompt} → {decode(gen.tokens[i])}")
            probs.append(gen.logits[i].softmax(-1).gather(-1, gen.tokens[i][:, None])[:, 0])
            wrong.append(gen.tokens[i] != ref.tokens[i])
    wrong_rows = tuple(r for r, w in enumerate(wrong) if w.any())
    panels = [Panel(torch.stack(probs), rows, [f"+{j + 1}" for j in range(STEPS)],
                    title=Bilingual("continuations: each prompt alone and in the batch",
                                    "続き：各プロンプトを単独で、またバッチで生成"), framed=torch.stack(wrong),
                    frame_color=RED, mark="×", red_rows=wrong_rows, alert=bool(wrong_rows),
                    xlabel=Bilingual("new token", "新しいトークン"), ylabel="", vmin=0.0, vmax=1.0)]
    seq = torch.cat([ids, run.tokens], 1)[:, :ids.shape[1] + step - 1]          # the keys at this step
    weights, pads = run.weights[step - 1], seq == PAD_ID
    leak = pads & (weights > 0.005)
    panels.append(Panel(weights, [decode(row) for row in seq], [str(j) for j in range(seq.shape[1])],
                        title=Bilingual(f"step {step}: the newest query's attention\n(last block, mean over heads)",
                                        f"ステップ {step}：最新のクエリのアテンション\n"
                                        "（最後のブロック、ヘッドの平均）"),
                        masked=pads, framed=leak, frame_color=RED, mark="!", alert=bool(leak.any()),
                        xlabel=Bilingual("key slot", "キーのスロット"),
                        ylabel=Bilingual("item (its keys)", "サンプル（そのキー）"),
                        vmin=0.0, vmax=1.0))
    same = int((run.tokens == ref.tokens).all(1).sum())
    n, on_pads = len(PROMPTS), f"{float(weights[pads].sum()):.2g}"
    summary = say(f"padding {padding}, positions {positions}, mask {mask}, KV cache {'on' if kv_cache else 'off'}: "
                  f"{same}/{n} items match the reference; step {step}: weight on pads, summed over the "
                  f"{n} items: {on_pads}",
                  f"パディング：{LABELS_JA[padding]}、位置 ID：{LABELS_JA[positions]}、マスク：{LABELS_JA[mask]}、"
                  f"KV キャッシュ：{'オン' if kv_cache else 'オフ'}。基準と一致するサンプルは {same}/{n}。"
                  f"ステップ {step}：パッドに乗った重み（{n} サンプルの合計）は {on_pads}")
    return View(tuple(panels), summary, caption=Bilingual(
        "numbers: the probability of each chosen token    ×: differs from the prompt alone    hatched: a pad key (_)"
        "    !: weight on a pad    colour: 0 white to 1 dark blue",
        "数値：選ばれた各トークンの確率    ×：単独のプロンプトと異なる    斜線：パッドのキー (_)    !：パッドに重み"
        "    色：0 が白、1 が濃い青"))


def generation_explorer() -> Explorer:
    """Padding side, position ids, mask and KV cache -> continuations and the attention at one step."""
    for combination in ((s, p, m, c) for s in SIDES for p in POSITIONS for m in MASKS for c in (True, False)):
        batched(*combination)                                                  # precompute all 24 runs
    controls = {
        "padding": widgets.ToggleButtons(options=_labelled(SIDES), value="left",
                                         description=say("padding", "パディング")),
        "positions": widgets.Dropdown(options=_labelled(tuple(POSITIONS)), value="from the mask",
                                      description=say("position ids", "位置 ID")),
        "mask": widgets.Dropdown(options=_labelled(MASKS), value="every step", description=say("mask", "マスク")),
        "kv_cache": widgets.Checkbox(value=True, description=say("KV cache", "KV キャッシュ")),
        "step": widgets.IntSlider(value=2, min=1, max=STEPS, description=say("step", "ステップ")),
    }
    return explorer(controls, generation_view, Bilingual(
        'Padding side, position ids, mask and KV cache -> continuations and the attention at one step.',
        'パディングの側、位置 ID、マスク、KV キャッシュ → 生成の続きと、1 ステップのアテンション'))


EXPLORERS = (generation_explorer,)


# --- the exercise checks ---

NAMES_JA = {"left-padded": "左パディング", "right-padded": "右パディング", "step 4's (a hole)": "ステップ 4（穴あき）",
            "random, last slot real": "ランダム（最後のスロットが実トークン）",
            "random, first slot real (pads after it)": "ランダム（最初のスロットが実トークンで、その後にパッド）"}


def _counted(mask: torch.Tensor) -> torch.Tensor:
    """Exercise 1's position ids: real tokens before each real token in its row; 0 at every pad."""
    return (mask.cumsum(-1) - 1).clamp(min=0) * mask


@exercise
def check_1(answer: object, mask_left: torch.Tensor, mask_right: torch.Tensor, mask_with_hole: torch.Tensor) -> None:
    """Exercise 1: a function attention_mask (N, S) -> position ids (N, S), 0 at every pad; tried on the chapter's
    left-padded, right-padded and holed masks, and on random ones."""
    masks = {"left-padded": hf_attention_mask(mask_left, "mask_left").long(),
             "right-padded": hf_attention_mask(mask_right, "mask_right").long(),
             "step 4's (a hole)": hf_attention_mask(mask_with_hole, "mask_with_hole").long()}
    random = (torch.rand(4, 9, generator=torch.Generator().manual_seed(1)) > 0.4).long()
    masks["random, last slot real"] = random.index_fill(1, torch.tensor([8]), 1)
    masks["random, first slot real (pads after it)"] = random.index_fill(1, torch.tensor([0]), 1)
    if not callable(answer):
        raise Mistake(f"answer_1 should be a function attention_mask -> position_ids, got {type(answer).__name__}",
                      f"answer_1 は、attention_mask を受け取って position_ids を返す関数にすること。渡されたのは "
                      f"{type(answer).__name__} である")
    for name, mask in masks.items():
        got = answer(mask.clone())
        if not isinstance(got, torch.Tensor) or got.shape != mask.shape:
            raise Mistake("return one position id per slot: a tensor of the mask's shape (N, S)",
                          "スロットごとに位置 ID を 1 つ返すこと。マスクと同じ形状 (N, S) のテンソルである")
        if got.dtype.is_floating_point or got.dtype == torch.bool:
            raise Mistake(f"position ids are integers (an embedding looks them up), got {got.dtype}",
                          f"位置 ID は整数である（埋め込み層がそれで表を引く）。返ってきたのは {got.dtype}")
        expected, real = _counted(mask), mask.bool()
        if torch.equal(got, expected):
            continue
        if (got < 0).any():
            raise Mistake("a position id is never negative: look at the pads before the first real token",
                          "位置 ID が負になることはない。最初の実トークンより前のパッドを確かめること")
        if torch.equal(got[real], expected[real]):
            if torch.equal(got, positions_from_mask(mask)):
                raise Mistake("the real tokens are right; at a pad after a real token you give the last real "
                              "position, as positions_from_mask does: this exercise asks for 0 at every pad",
                              "実トークンは正しい。実トークンの後のパッドに、positions_from_mask と同じく"
                              "最後の実トークンの位置を与えている。この確認問題ではすべてのパッドを 0 にする")
            raise Mistake(f"the real tokens are right, the pads are not ({name} mask): every pad gets 0",
                          f"実トークンは正しいが、"
                          f"パッドが違う（{NAMES_JA[name]}のマスク）。パッドはすべて 0 にすること")
        if torch.equal(got[real], torch.arange(mask.shape[1]).expand_as(mask)[real]):
            raise Mistake(f"for the {name} mask these are positions from the left edge of the batch: "
                          "count only the real tokens before each token",
                          f"{NAMES_JA[name]}のマスクに対して、これはバッチの左端から数えた位置である。"
                          "各トークンより前にある実トークンだけを数えること")
        if torch.equal(got[real], expected[real] + 1):
            raise Mistake("one too many: the first real token of each row gets position 0",
                          "1 つ多い。各行の最初の実トークンの位置は 0 である")
        raise Mistake(f"wrong position ids for the {name} mask: for each real token, count the real tokens "
                      "before it in its row",
                      f"{NAMES_JA[name]}のマスクで位置 ID が違う。各実トークンについて、同じ行でそれより前にある"
                      "実トークンを数えること")


@exercise
def check_2(answer: object) -> None:
    """Exercise 2: a function (logits (N, S, V), right-padded attention_mask (N, S)) -> the next token of each item,
    the argmax at its last real position; tried on seeded random logits."""
    if not callable(answer):
        raise Mistake(f"answer_2 should be a function (logits, attention_mask) -> next tokens, "
                      f"got {type(answer).__name__}",
                      f"answer_2 は、(logits, attention_mask) を受け取って次のトークンを返す関数にすること。"
                      f"渡されたのは "
                      f"{type(answer).__name__} である")
    g = torch.Generator().manual_seed(2)
    for N, S, V in ((3, 5, 12), (4, 7, 9)):
        lengths = torch.randint(1, S + 1, (N,), generator=g)
        lengths[0] = S                                                     # one full item, one short one
        lengths[1] = min(2, S - 1)
        mask = (torch.arange(S) < lengths[:, None]).long()                # right padding, 1 = real token
        logits = torch.randn(N, S, V, generator=g)
        rows = torch.arange(N)
        expected = logits[rows, lengths - 1].argmax(-1)
        got = torch.as_tensor(answer(logits.clone(), mask.clone()))
        if got.shape != (N,):
            raise Mistake(f"return one token id per item, shape (N,) = ({N},); got {tuple(got.shape)}",
                          f"サンプルごとにトークン ID を 1 つ、形状 (N,) = ({N},) で返すこと。"
                          f"返ってきた形状は {tuple(got.shape)}")
        if got.dtype.is_floating_point:
            raise Mistake("return token ids (the argmax over the vocabulary), not logits",
                          "ロジットではなく、トークン ID（語彙に対する argmax）を返すこと")
        if torch.equal(got, expected):
            continue
        if torch.equal(got, logits[:, -1].argmax(-1)):
            raise Mistake("that reads the last column, which is a pad for the shorter items",
                          "それは最後の列を読んでいる。短いサンプルではそこはパッドである")
        if torch.equal(got[1:], logits[rows, lengths.clamp(max=S - 1)].argmax(-1)[1:]):
            raise Mistake("that reads one slot too far: the first pad, not the last real token",
                          "それは 1 スロット先を読んでいる。最後の実トークンではなく、最初のパッドである")
        raise Mistake("read each item's logits at its last real position, then take the argmax over the vocabulary",
                      "各サンプルのロジットを、その最後の実トークンの位置で読み、語彙に対する argmax を取ること")


@exercise
def check_3(answer: object, mask_step: torch.Tensor) -> None:
    """Exercise 3: a function attention_mask (N, S) -> the bool SDPA mask (N, 1, 1, S), True = may attend, of a
    decode step (L = 1); tried on the chapter's mask_step and on it extended by two real tokens."""
    mask_step = hf_attention_mask(mask_step, "mask_step").long()
    if not callable(answer):
        raise Mistake(f"answer_3 should be a function attention_mask -> mask, got {type(answer).__name__}",
                      f"answer_3 は、attention_mask を受け取ってマスクを返す関数にすること。"
                      f"渡されたのは {type(answer).__name__} である")
    for mask in (mask_step, torch.cat([mask_step, torch.ones(len(mask_step), 2, dtype=torch.long)], 1)):
        N, S = mask.shape
        expected = mask.bool()[:, None, None, :]
        got = answer(mask.clone())
        if not isinstance(got, torch.Tensor) or got.dtype != torch.bool:
            raise Mistake("SDPA's mask here is a bool tensor (True = may attend)",
                          "ここで SDPA に渡すマスクは bool テンソル（True = 参照してよい）である")
        if tuple(got.shape) != (N, 1, 1, S):
            raise Mistake(f"the shape should be (N, 1, 1, S) = {(N, 1, 1, S)}: heads, then one query row; "
                          f"got {tuple(got.shape)}",
                          f"形状は (N, 1, 1, S) = {(N, 1, 1, S)} になるはずである（ヘッドの次元が 1、"
                          f"クエリの行が 1 つ）。"
                          f"返ってきた形状は {tuple(got.shape)} である")
        if torch.equal(got, expected):
            continue
        if torch.equal(got, ~expected):
            raise Mistake("that is MHA's polarity (True = blocked): SDPA reads True as 'may attend'",
                          "これは MHA の極性（True = 遮断）である。SDPA は True を「参照してよい」と読む")
        if got.all():
            raise Mistake("the new query may not see the pad keys: the mask must hide them",
                          "新しいクエリはパッドのキーを参照してはならない。マスクでそれを隠すこと")
        if torch.equal(got[..., 1:], torch.zeros_like(got[..., 1:])):
            raise Mistake("that shows the new query key 0 only: a top-left causal mask, as is_causal=True gives. "
                          "On a decode step the new query is the last position",
                          "それでは新しいクエリにキー 0 しか見えない。is_causal=True が作る左上の因果マスクである。"
                          "デコードステップでは、新しいクエリは最後の位置にある")
        raise Mistake("the new query must see exactly its item's real keys, every one of them",
                      "新しいクエリには、自分のサンプルの実トークンのキーが過不足なく見えなければならない")

# The texts chapter 09's notebook draws on its figures (titles, axis labels, legends), English as its code writes
# them, and their Japanese: `title=ch09.label("...")` draws either (helpers.language.labeller).
FIGURES_JA = {
    "step {step}: the newest query's weights": "ステップ {step}：最新のクエリの重み",
    "key slot": "キーのスロット",
    "item (its keys)": "サンプル（そのキー）",
}
label = labeller(FIGURES_JA)
