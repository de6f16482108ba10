"""Chapter 16: masks outside softmax. Layers that mix positions without a softmax to mask: a short causal
convolution, a gated linear recurrence (a scan, the core of state-space layers) and linear attention.

Step 1-2: `ShortConv`, a causal depthwise convolution (kernel 4), with its pads zeroed before the convolution, after
it, not at all, or only when the batch has more than one item (`CONV_MASKS`). Step 3: `Scan`, h_t = a_t * h_{t-1} +
b_t * x_t, with the pads' inputs zeroed, the state held across pads, the outputs zeroed, or nothing (`SCAN_MASKS`);
`final_state` is what a cache would hold. Step 4: `LinearAttention` (causal, elu + 1 features) as a running sum and
as its quadratic form, with the pads' keys and values zeroed (and the pads' own outputs 0, not 0/0), a softmax habit
(-1e9 added to the scores), or nothing (`LINEAR_MASKS`). Step 5: the batch-of-one gate (mask "gated") and
`tiny_lfm2`, a tiny transformers LFM2 hybrid (with `conv_bias=True`: a bias between the zeroing and the convolution).
Step 6: each layer's `forward_with_cache(x, cache) -> (out, cache)`. Then `Hybrid`, the explorer's block (a
convolution, a scan and an attention layer), its view and explorer, and the exercise checks.

Every module here takes (x, key_padding_mask), x (N, L, E), key_padding_mask bool (N, L) True = pad: the checks call
such a module without an attn_mask (help(helpers.checks)).
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import torch
import torch.nn.functional as F
from torch import nn

from helpers import arguments
from helpers.exercises import Mistake, as_ints, call, exercise, wrong_kind
from helpers.explorer import Explorer, Panel, View, explorer
from helpers.language import Bilingual, say
from helpers.masks import causal_mask, key_padding_mask

DIM, KERNEL = 4, 4
CONV_MASKS = ("before", "after", "none", "gated")
SCAN_MASKS = ("input", "hold", "output", "none", "gated")
LINEAR_MASKS = ("zero keys", "-1e9 scores", "none")


def _choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value  # type: ignore[return-value]


def _pads(x: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
    """key_padding_mask checked against x, as (N, L, 1) for broadcasting (all False if None)."""
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise ValueError(f"x must be a float tensor (N, L, E), got {tuple(getattr(x, 'shape', ()))}")
    if key_padding_mask is None:
        return torch.zeros(*x.shape[:2], 1, dtype=torch.bool)
    arguments.bool_mask(key_padding_mask, "key_padding_mask")
    if tuple(key_padding_mask.shape) != tuple(x.shape[:2]):
        raise ValueError(f"key_padding_mask must have shape (N, L) = {tuple(x.shape[:2])}, "
                         f"got {tuple(key_padding_mask.shape)}")
    return key_padding_mask[..., None]


def zero_pads(x: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
    """x with every padded position set to 0: the one fix for every layer of this chapter."""
    return x.masked_fill(_pads(x, key_padding_mask), 0.0)


def gated_zero_pads(x: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
    """The batch-of-one gate (step 5): zero_pads only when the batch has more than one item. Wrong: a padded batch
    of one is never masked."""
    return zero_pads(x, key_padding_mask) if x.shape[0] > 1 else x


# --- steps 1-2: a short causal convolution ---

class ShortConv(nn.Module):
    """A causal depthwise convolution: output t = sum over k of w_k * x_{t-3+k} (kernel 4, per channel), plus a bias.
    mask: where the pads are zeroed ("before" the convolution, "after" it, "none", or "gated": before, but only
    when the batch has more than one item)."""

    def __init__(self, mask: str = "before", dim: int = DIM, kernel: int = KERNEL, seed: int = 0) -> None:
        super().__init__()
        self.mask = _choice(mask, "mask", CONV_MASKS)
        self.kernel = arguments.integer(kernel, "kernel", minimum=1)
        torch.manual_seed(arguments.integer(seed, "seed"))
        self.conv = nn.Conv1d(dim, dim, self.kernel, groups=dim, padding=self.kernel - 1)

    def _masked_input(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
        if self.mask == "before":
            return zero_pads(x, key_padding_mask)
        return gated_zero_pads(x, key_padding_mask) if self.mask == "gated" else x

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self._masked_input(x, key_padding_mask)
        y = self.conv(h.transpose(1, 2))[..., :x.shape[1]].transpose(1, 2)   # keep the causal part
        return zero_pads(y, key_padding_mask) if self.mask == "after" else y

    def forward_with_cache(self, x: torch.Tensor, cache: torch.Tensor | None,
                           key_padding_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The new tokens x (N, T, E) after a cache: the last kernel - 1 inputs (N, kernel - 1, E), zeros at the
        start (what the convolution's own padding reads). Returns the outputs and the new cache."""
        h = self._masked_input(x, key_padding_mask)
        past = torch.zeros(x.shape[0], self.kernel - 1, x.shape[2]) if cache is None else cache
        window = torch.cat([past, h], 1)
        y = F.conv1d(window.transpose(1, 2), self.conv.weight, self.conv.bias, groups=x.shape[2]).transpose(1, 2)
        return y, window[:, window.shape[1] - (self.kernel - 1):]


# --- step 3: a gated linear recurrence (a scan) ---

class Scan(nn.Module):
    """h_t = a_t * h_{t-1} + b_t * x_t per channel, h_{-1} = 0, with a_t = sigmoid(x_t W_a + c), b_t = sigmoid(x_t
    W_b): a diagonal gated recurrence, the core of Mamba-style state-space layers. Its output at t is h_t.
    mask: "input" zeroes the pads' x (b_t * x_t = 0; a_t still decays the state), "hold" sets a_t = 1 and b_t = 0
    at pads (the state passes a pad untouched), "output" zeroes h_t at pads after the scan, "none", or "gated"
    ("input" only when the batch has more than one item)."""

    def __init__(self, mask: str = "hold", dim: int = DIM, seed: int = 0) -> None:
        super().__init__()
        self.mask = _choice(mask, "mask", SCAN_MASKS)
        torch.manual_seed(arguments.integer(seed, "seed"))
        self.gate_a, self.gate_b = nn.Linear(dim, dim), nn.Linear(dim, dim, bias=False)
        with torch.no_grad():
            self.gate_a.bias.fill_(1.0)      # a_t near 0.7: the state remembers a few tokens

    def _gates(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        pads = _pads(x, key_padding_mask)
        if self.mask == "input":
            x = zero_pads(x, key_padding_mask)
        elif self.mask == "gated":
            x = gated_zero_pads(x, key_padding_mask)
        a, b = torch.sigmoid(self.gate_a(x)), torch.sigmoid(self.gate_b(x))
        if self.mask == "hold":
            a, b = a.masked_fill(pads, 1.0), b.masked_fill(pads, 0.0)
        return a, b * x

    def forward_with_cache(self, x: torch.Tensor, cache: torch.Tensor | None,
                           key_padding_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The new tokens x (N, T, E) after a cache: the state h (N, E), zeros at the start. Returns every h_t
        and the last one (the new cache)."""
        a, bx = self._gates(x, key_padding_mask)
        h = torch.zeros(x.shape[0], x.shape[2]) if cache is None else cache
        states = []
        for t in range(x.shape[1]):
            h = a[:, t] * h + bx[:, t]
            states.append(h)
        out = torch.stack(states, 1)
        return (zero_pads(out, key_padding_mask) if self.mask == "output" else out), h

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.forward_with_cache(x, None, key_padding_mask)[0]

    def final_state(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The state after the last position (N, E): what a cache holds for generation."""
        return self.forward_with_cache(x, None, key_padding_mask)[1]


# --- step 4: linear attention ---

def features(t: torch.Tensor) -> torch.Tensor:
    """Linear attention's feature map, elu(t) + 1: positive, so every score phi(q) . phi(k) is positive."""
    return F.elu(t) + 1


class LinearAttention(nn.Module):
    """Causal linear attention: y_t = phi(q_t) S_t / (phi(q_t) . z_t), S_t = sum_{j<=t} phi(k_j) v_j^T and z_t =
    sum_{j<=t} phi(k_j), running sums (`forward`), or the same as a quadratic form (`quadratic`): scores
    phi(q) phi(k)^T with the future cells set to 0, each row divided by its sum. mask: "zero keys" (the pads' phi(k)
    and v set to 0 with masked_fill, so a NaN or inf at a pad stays out of the sums; a left pad has seen no real key,
    so its sums are 0: it divides by 1 there and its output is set to 0, never 0/0 = NaN, which the next layer would
    spread), "-1e9 scores" (the softmax habit: -1e9 added to the pads' scores after the future cells are set to 0,
    quadratic form only), "none"."""

    def __init__(self, mask: str = "zero keys", dim: int = DIM, seed: int = 0) -> None:
        super().__init__()
        self.mask = _choice(mask, "mask", LINEAR_MASKS)
        torch.manual_seed(arguments.integer(seed, "seed"))
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def _qkv(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        q, k, v = features(self.q(x)), features(self.k(x)), self.v(x)
        if self.mask == "zero keys":
            k, v = zero_pads(k, key_padding_mask), zero_pads(v, key_padding_mask)
        return q, k, v

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        if self.mask == "-1e9 scores":
            return self.quadratic(x, key_padding_mask)
        q, k, v = self._qkv(x, key_padding_mask)
        state = torch.cumsum(k[..., :, None] * v[..., None, :], 1)      # S_t (N, L, E, E)
        z = torch.cumsum(k, 1)                                           # z_t (N, L, E)
        return self._divide(torch.einsum("nle,nlef->nlf", q, state), (q * z).sum(-1, keepdim=True), key_padding_mask)

    def _divide(self, num: torch.Tensor, den: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
        """num / den; with the pads zeroed, 1 instead of den at the pads and their outputs 0 (a left pad's den is 0)."""
        if self.mask != "zero keys":
            return num / den
        pads = _pads(num, key_padding_mask)
        return (num / den.masked_fill(pads, 1.0)).masked_fill(pads, 0.0)

    def quadratic(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        q, k, v = self._qkv(x, key_padding_mask)
        scores = (q @ k.transpose(1, 2)).masked_fill(causal_mask(x.shape[1]), 0.0)   # no softmax: blocked = 0
        if self.mask == "-1e9 scores":
            scores = scores + _pads(x, key_padding_mask).transpose(1, 2) * -1e9
        return self._divide(scores @ v, scores.sum(-1, keepdim=True), key_padding_mask)


class ConvScan(nn.Module):
    """A short convolution, then a scan, with a residual connection around each (x -> x + conv(x) -> + scan(.)),
    both masking their pads, with helpers.diagnose's cache protocol: forward_with_cache(x, cache) -> (out, cache),
    the cache (the convolution's last inputs, the scan's state). conv, scan: each layer's mask (CONV_MASKS,
    SCAN_MASKS)."""

    is_causal, embed_dim = True, DIM      # what helpers.diagnose reads: the expectation and the feature size

    def __init__(self, conv: str = "before", scan: str = "hold", seed: int = 0) -> None:
        super().__init__()
        self.conv, self.scan = ShortConv(conv, seed=seed), Scan(scan, seed=seed + 1)

    def forward_with_cache(self, x: torch.Tensor, cache: tuple | None,
                           key_padding_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, tuple]:
        conv_cache, state = (None, None) if cache is None else cache
        y, conv_cache = self.conv.forward_with_cache(x, conv_cache, key_padding_mask)
        h = x + y
        s, state = self.scan.forward_with_cache(h, state, key_padding_mask)
        return h + s, (conv_cache, state)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.forward_with_cache(x, None, key_padding_mask)[0]


# --- step 5: a tiny transformers hybrid ---

def tiny_lfm2(seed: int = 0, conv_bias: bool = False) -> nn.Module:
    """A tiny transformers Lfm2Model (LiquidAI's LFM2: short causal convolutions, kernel 4, and attention):
    layers conv, attention, conv; 16 features; random weights, eval mode. conv_bias=True: the config's conv_bias
    (biases in each convolution layer's in_proj, conv and out_proj), set to random values (transformers initialises
    them to 0, which would hide what a bias does). transformers' log is kept to errors, so that its one-time notice
    about the pure-torch convolution (`causal_conv1d` is not installed) does not print."""
    import transformers

    from helpers.library import tiny

    arguments.flag(conv_bias, "conv_bias")
    transformers.logging.set_verbosity_error()
    model = tiny(transformers.Lfm2Config, transformers.Lfm2Model, seed=seed, hidden_size=16, intermediate_size=32,
                 num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1, conv_L_cache=KERNEL,
                 layer_types=["conv", "full_attention", "conv"], conv_bias=conv_bias)
    if conv_bias:
        generator = torch.Generator().manual_seed(arguments.integer(seed, "seed") + 1)
        with torch.no_grad():
            for layer in model.layers:
                if hasattr(layer, "conv"):
                    for part in (layer.conv.in_proj, layer.conv.conv, layer.conv.out_proj):
                        part.bias.copy_(torch.randn(part.bias.shape, generator=generator))
    return model


def hf_adapter(model: nn.Module, masked: bool = True) -> Callable[..., torch.Tensor]:
    """The checks' convention for a transformers model entered after its embedding: (x, key_padding_mask,
    attn_mask, position_ids) -> last_hidden_state. masked=False passes no attention_mask (a caller's mistake)."""
    def adapter(x: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: torch.Tensor | None,
                position_ids: torch.Tensor) -> torch.Tensor:
        mask = (~key_padding_mask).long() if masked else None           # transformers: 1 = real token
        return model(inputs_embeds=x, attention_mask=mask, position_ids=position_ids,
                     use_cache=False).last_hidden_state
    return adapter


# --- the explorer's block: a convolution, a scan and an attention layer ---

LAYERS = ("convolution", "scan", "attention")
LAYERS_JA = ("畳み込み", "スキャン", "アテンション")
MASKING = ("masked", "unmasked", "if batch > 1")
MASKING_JA = {"masked": "マスクする", "unmasked": "マスクしない", "if batch > 1": "バッチサイズ 2 以上のときだけ"}
SIDES_JA = {"left": "左", "right": "右"}


class CausalAttention(nn.Module):
    """One causal softmax attention layer (one head), its padding masked "masked", "unmasked" or "if batch > 1".
    A pad query always sees itself, so no row is empty."""

    def __init__(self, mask: str = "masked", dim: int = DIM, seed: int = 0) -> None:
        super().__init__()
        self.mask = _choice(mask, "mask", MASKING)
        torch.manual_seed(arguments.integer(seed, "seed"))
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, -1)
        L = x.shape[1]
        blocked = causal_mask(L).expand(x.shape[0], L, L)
        if self.mask == "masked" or (self.mask == "if batch > 1" and x.shape[0] > 1):
            blocked = blocked | (_pads(x, key_padding_mask).transpose(1, 2) & ~torch.eye(L, dtype=torch.bool))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=~blocked)


class Hybrid(nn.Module):
    """x -> x + conv(x) -> + scan(.) -> + attention(.): one block of a hybrid, each layer's padding "masked",
    "unmasked" or "if batch > 1" (the batch-of-one gate). `stages` returns the output after each layer."""

    def __init__(self, conv: str = "masked", scan: str = "masked", attention: str = "masked", seed: int = 0):
        super().__init__()
        to_conv = {"masked": "before", "unmasked": "none", "if batch > 1": "gated"}
        to_scan = {"masked": "input", "unmasked": "none", "if batch > 1": "gated"}
        self.conv = ShortConv(to_conv[_choice(conv, "conv", MASKING)], seed=seed)
        self.scan = Scan(to_scan[_choice(scan, "scan", MASKING)], seed=seed + 1)
        self.attention = CausalAttention(attention, seed=seed + 2)

    def stages(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> list[torch.Tensor]:
        out = []
        for layer in (self.conv, self.scan, self.attention):
            x = x + layer(x, key_padding_mask)
            out.append(x)
        return out

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.stages(x, key_padding_mask)[-1]


S_VIEW, REAL_VIEW = 6, 4    # the explorer's padded item: 4 real tokens padded to 6
NEW_VALUE = torch.tensor([7.0, -5.0, 3.0, -9.0])   # written at one input to see which outputs move


def _block_input(batch: int) -> tuple[torch.Tensor, list[int]]:
    x = torch.randn(batch, S_VIEW, DIM, generator=torch.Generator().manual_seed(0))
    return x, [REAL_VIEW, S_VIEW, 5][:batch]


def moved(block: Hybrid, side: str, batch: int) -> list[torch.Tensor]:
    """For item 0 (4 real tokens padded to 6 on `side`, in a batch of `batch`): after each layer, a bool (6, 6)
    table, [i, j] = the output at i moved when the input at j got new values (the dependence), and the pads'
    effect on real outputs: which real positions differ from item 0 run alone (unpadded)."""
    x, lengths = _block_input(batch)
    kpm = key_padding_mask(lengths, S_VIEW, side=side)
    if side == "left":
        x = torch.stack([x[i].roll(S_VIEW - n, 0) for i, n in enumerate(lengths)])
    with torch.no_grad():
        ref = block.stages(x, kpm)
        edited = x.repeat(S_VIEW, 1, 1)                       # copy j: new values at position j of item 0
        edited[torch.arange(S_VIEW) * batch, torch.arange(S_VIEW)] = NEW_VALUE
        outs = block.stages(edited, kpm.repeat(S_VIEW, 1)) if batch > 1 else \
            [torch.cat(o) for o in zip(*(block.stages(edited[j:j + 1], kpm[:1]) for j in range(S_VIEW)), strict=True)]
        real = ~kpm[0]
        alone = block.stages(x[:1, real], torch.zeros(1, REAL_VIEW, dtype=torch.bool))
    tables = []
    for r, o in zip(ref, outs, strict=True):
        changed = (o[::batch] - r[0]).abs().amax(-1) > 1e-4 * (1 + r[0].abs().amax(-1))   # (copy j, position i)
        tables.append(changed.T)
    leaks = [((r[0, real] - a[0]).abs().amax(-1) > 1e-4) for r, a in zip(ref, alone, strict=True)]
    return tables + leaks


def pads_reach(side: str = "left", batch: int = 1, conv: str = "masked", scan: str = "masked",
               attention: str = "masked") -> tuple[list[int], str | None]:
    """The explorer's verdict in data: the real outputs of item 0 (t0..t3) that the pads move after the whole
    block, and the first layer after which some real output differs from item 0 run alone (None if none does)."""
    leaks = moved(Hybrid(conv, scan, attention), _choice(side, "side", ("left", "right")), _batch(batch))[3:]
    first = next((LAYERS[k] for k, leak in enumerate(leaks) if leak.any()), None)
    return [i for i in range(REAL_VIEW) if leaks[-1][i]], first


def _batch(batch: object) -> int:
    if batch not in (1, 3) or isinstance(batch, bool):
        raise ValueError(say(f"batch must be 1 or 3, got {batch!r}",
                             f"batch は 1 か 3 にすること（{batch!r} が渡された）"))
    return int(batch)  # type: ignore[arg-type]


def hybrid_view(side: str = "left", batch: int = 1, conv: str = "masked", scan: str = "masked",
                attention: str = "masked") -> View:
    """The explorer's view: item 0 of a batch (4 real tokens padded to 6) through the hybrid block; one panel per
    layer, the dependence of each output on each input after that layer, pad columns in red; the summary names
    the real outputs the pads move and the first layer through which they do."""
    _choice(side, "side", ("left", "right"))
    batch = _batch(batch)
    block = Hybrid(conv, scan, attention)
    tables = moved(block, side, batch)
    depends, leaks = tables[:3], tables[3:]
    pads = list(range(S_VIEW - REAL_VIEW)) if side == "left" else list(range(REAL_VIEW, S_VIEW))
    pad = say("pad", "パッド")
    names = [pad if i in pads else f"t{i - (len(pads) if side == 'left' else 0)}" for i in range(S_VIEW)]
    panels = []
    for name, name_ja, table, leak in zip(LAYERS, LAYERS_JA, depends, leaks, strict=True):
        reached = bool(leak.any())
        panels.append(Panel(table.float(), names, names, title=say(f"after the {name}", f"{name_ja}の後"),
                            masked=~table, fmt=".0f", red_cols=tuple(pads), alert=reached, vmin=0.0, vmax=1.0,
                            xlabel=say("input", "入力"), ylabel=say("output", "出力")))
    real_moved = [i for i in range(REAL_VIEW) if leaks[-1][i]]
    where = f"{side} padding, batch of {batch}"
    where_ja = f"{SIDES_JA[side]}パディング、バッチサイズ {batch}"
    if not real_moved:
        summary = say(f"{where}: no real output moves", f"{where_ja}：パッドで変わる実トークンの出力はない")
    else:
        first = next(k for k, leak in enumerate(leaks) if leak.any())
        tokens = [f"t{i}" for i in real_moved]
        summary = say(f"{where}: pads move real outputs {', '.join(tokens)}, first through the {LAYERS[first]}",
                      f"{where_ja}：パッドが実トークン {'、'.join(tokens)} の出力を変える（最初に入り込む層は"
                      f"{LAYERS_JA[first]}）")
    return View(tuple(panels), summary, say("1 = the output depends on that input; red columns: pads",
                                            "1 = その入力に依存する。赤い列はパッド"))


def hybrid_explorer() -> Explorer:
    """Padding side, batch size and each layer's masking -> the dependence after each layer, live. Each option is
    shown by its label (Japanese in the Japanese edition); its value is the English name the view reads."""
    style = {"description_width": "initial"}
    sides = [(say(side, SIDES_JA[side]), side) for side in ("left", "right")]
    masking = [(say(m, MASKING_JA[m]), m) for m in MASKING]
    controls = {
        "side": widgets.ToggleButtons(options=sides, value="left", description=say("padding", "パディング"),
                                      style=style),
        "batch": widgets.ToggleButtons(options=[1, 3], value=1, description=say("batch", "バッチサイズ"),
                                       style=style),
        "conv": widgets.Dropdown(options=masking, value="if batch > 1", description=say("conv", "畳み込み"),
                                 style=style),
        "scan": widgets.Dropdown(options=masking, value="masked", description=say("scan", "スキャン"), style=style),
        "attention": widgets.Dropdown(options=masking, value="masked", description=say("attention", "アテンション"),
                                      style=style),
    }
    return explorer(controls, hybrid_view, Bilingual(
        "Padding side, batch size and each layer's masking -> the dependence after each layer, live.",
        'パディングの側、バッチサイズ、各層のマスク → 各層の後の依存関係'))


EXPLORERS = (hybrid_explorer,)


# --- the exercise checks ---

def reads_a_pad(pads: int, length: int, kernel: int = KERNEL) -> tuple[int, ...]:
    """The real positions (in the padded row of `length`, `pads` pads first) whose causal convolution of `kernel`
    reads a pad: position t reads t - kernel + 1 .. t."""
    return tuple(t for t in range(pads, length) if max(0, t - kernel + 1) < pads)


@exercise
def check_1(answer: object, pads: int, length: int, kernel: int = KERNEL) -> None:
    """Exercise 1: which real positions of a left-padded row read a pad through an unmasked causal convolution.
    Order and repeats do not matter (a set or a range is accepted too). Each wrong answer class has its own hint."""
    if isinstance(answer, set | frozenset | range):
        answer = tuple(answer)
    got = sorted(set(as_ints(answer, Mistake("answer with a tuple of ints: positions in the padded row",
                                             "int のタプルで答えること（パディング済みの行での位置）"))))
    expected = sorted(reads_a_pad(pads, length, kernel))
    if got == expected:
        return
    if got == [t - pads for t in expected]:
        raise Mistake(f"count positions in the padded row: the pads are positions 0 … {pads - 1}, so the first real "
                      f"token is position {pads}",
                      f"パディング済みの行で位置を数えること。パッドは位置 0 … {pads - 1} なので、最初の実トークンは"
                      f"位置 {pads} である")
    if any(got == sorted(reads_a_pad(p, length, kernel)) for p in (pads - 1, pads + 1) if 0 < p < length):
        raise Mistake(f"this row has {pads} pads, at positions 0 … {pads - 1}",
                      f"この行のパッドは {pads} つで、位置は 0 … {pads - 1} である")
    if any(t < pads for t in got):
        raise Mistake("list real positions only: the pads' own outputs are not compared",
                      "実トークンの位置だけを挙げること。パッド自身の出力は比べない")
    if got in (sorted(reads_a_pad(pads, length, kernel - 1)), sorted(reads_a_pad(pads, length, kernel + 1))):
        raise Mistake(f"a convolution of kernel size {kernel} reads the token itself and the {kernel - 1} positions "
                      "before it",
                      f"カーネル幅 {kernel} の畳み込みは、自分自身とその前の {kernel - 1} 個の位置を読む")
    raise Mistake("a real token reads a pad when a pad lies inside its convolution's window (itself and the "
                  f"{kernel - 1} positions before it)",
                  f"畳み込みのウィンドウ（自分自身とその前の {kernel - 1} 個の位置）にパッドが入っていれば、"
                  "その実トークンはパッドを読む")


def check_2_data() -> tuple[torch.Tensor, torch.Tensor]:
    """Exercise 2's inputs: phi(q), phi(k), v are computed by the learner's function; here x (3, 6, 4) and a
    mask with left and right padding."""
    x = torch.randn(3, 6, DIM, generator=torch.Generator().manual_seed(2))
    kpm = torch.stack([key_padding_mask([4], 6, side="left")[0], key_padding_mask([3], 6, side="right")[0],
                       torch.zeros(6, dtype=torch.bool)])
    return x, kpm


def running_sums(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_padding_mask: torch.Tensor, *,
                 keys: bool = True, values: bool = True, inclusive: bool = True, flip: bool = False) -> torch.Tensor:
    """Linear attention as running sums over phi(q), phi(k), v, unguarded (a 0 denominator gives NaN), with one of
    exercise 2's mistakes or none: keys / values False leaves the pads' phi(k) / v in the sums; inclusive=False sums
    over j < t; flip=True zeroes where the mask is False (the polarity reversed)."""
    pads = (~key_padding_mask if flip else key_padding_mask)[..., None]
    k = k.masked_fill(pads, 0.0) if keys else k
    v = v.masked_fill(pads, 0.0) if values else v
    kv = k[..., :, None] * v[..., None, :]
    state, z = torch.cumsum(kv, 1), torch.cumsum(k, 1)
    if not inclusive:
        state, z = state - kv, z - k
    return torch.einsum("nle,nlef->nlf", q, state) / (q * z).sum(-1, keepdim=True)


def _like(got: torch.Tensor, wrong: torch.Tensor, where: torch.Tensor) -> bool:
    """got equals `wrong` at the positions `where` (N, L) at which `wrong` is finite (and there are some)."""
    finite = where & wrong.isfinite().all(-1)
    return bool(finite.any()) and torch.allclose(got[finite], wrong[finite], atol=1e-5, rtol=1e-4)


@exercise
def check_2(answer: object) -> None:
    """Exercise 2: causal linear attention as running sums, with padding, for phi(q), phi(k), v (N, L, E) and a
    key_padding_mask: the real outputs must equal LinearAttention's (pads' keys and values zeroed), and every pad's
    output must be finite. Each wrong answer class has its own hint."""
    if not callable(answer):
        raise wrong_kind(Mistake("answer with a function: linear_attention(q, k, v, key_padding_mask)",
                                 "関数 linear_attention(q, k, v, key_padding_mask) で答えること"), answer)
    x, kpm = check_2_data()
    layer = LinearAttention()
    q, k, v = features(layer.q(x)).detach(), features(layer.k(x)).detach(), layer.v(x).detach()
    with torch.no_grad():
        expected = layer(x, kpm)
    got = call(answer, q.clone(), k.clone(), v.clone(), kpm.clone(),
               when=say("in linear_attention(q, k, v, kpm),", "linear_attention(q, k, v, kpm) を呼ぶと、"))
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(expected.shape):
        raise Mistake(f"return one tensor (N, L, E) = {tuple(expected.shape)}",
                      f"形状 (N, L, E) = {tuple(expected.shape)} のテンソルを 1 つ返すこと")
    real = ~kpm
    low_precision = got.dtype in (torch.float16, torch.bfloat16)
    got = got.detach().float()
    if torch.allclose(got[real], expected[real], atol=1e-5, rtol=1e-4):
        if not got[kpm].isfinite().all():
            raise Mistake("a pad's own output is NaN or inf: at a left pad no real key has been seen, so its sums are "
                          "0 and 0/0 = NaN, which the next layer spreads; divide by 1 at the pads and set their "
                          "outputs to 0",
                          "パッド自身の出力が NaN か inf になっている。左パディングのパッドは、まだ実トークンのキーを "
                          "1 つも見ていないので和が 0 になり、0/0 = NaN が次の層に広がる。パッドでは 1 で割り、"
                          "その出力を 0 にすること")
        return
    with torch.no_grad():
        mistakes = [
            (running_sums(q, k, v, kpm, keys=False, values=False),
             Mistake("the pads still enter the running sums: zero their keys and values first",
                     "パッドがまだ累積和に入っている。先にパッドのキーとバリューを 0 にすること")),
            (running_sums(q, k, v, kpm, keys=False),
             Mistake("the pads' keys still enter z, the denominator's sum: zero φ(k) at the pads too",
                     "パッドのキーが、分母の和 z にまだ入っている。パッドの φ(k) も 0 にすること")),
            (running_sums(q, k, v, kpm, flip=True),
             Mistake("True = pad: zero the keys and values where the mask is True, not where it is False",
                     "True = パッドである。マスクが False の位置ではなく、True の位置のキーとバリューを 0 にすること")),
            (running_sums(q, k, v, kpm, inclusive=False),
             Mistake("y_t includes j = t: the sums run over j ≤ t",
                     "y_t には j = t も入る。和は j ≤ t について取る")),
        ]
    for wrong, mistake in mistakes:
        if _like(got, wrong, real):
            raise mistake
    pads_mean = v[0, kpm[0]].mean(0)              # item 0 is left-padded: a -1e9 fill makes every real output this
    if torch.allclose(got[0, real[0]], pads_mean.expand(int(real[0].sum()), -1), atol=1e-3):
        raise Mistake("there is no softmax to cancel a -1e9: the pads dominate every row it is added to; zero the "
                      "pads' keys and values instead",
                      "-1e9 を打ち消すソフトマックスはない。-1e9 を足した行はすべてパッドに支配される。代わりに"
                      "パッドのキーとバリューを 0 にすること")
    if low_precision and torch.allclose(got[real], expected[real], atol=1e-2, rtol=1e-2):
        raise Mistake("return float32, the inputs' dtype: float16 and bfloat16 round too much to compare",
                      "入力と同じ float32 で返すこと。float16 や bfloat16 では丸めが大きすぎて比べられない")
    if not got[real].isfinite().all():
        raise Mistake("a real output is NaN or inf: divide by the running sum of the real tokens' keys only, never "
                      "add -inf",
                      "実トークンの出力が NaN か inf になっている。実トークンのキーだけの累積和で割ること。"
                      "-inf は足さない")
    raise Mistake("compare with the quadratic form: each row's scores φ(q) · φ(k) over its visible real keys, "
                  "divided by their sum",
                  "L × L のスコアを作る形と比べること。"
                  "各行で、見える実トークンのキーについてスコア φ(q) · φ(k) を求め、その和で割る")
