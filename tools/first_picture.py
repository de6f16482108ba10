"""Draw docs/first_picture.png: chapter 0's first picture (the toy's attention weights, pad keys masked)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from helpers import attention_steps, show_weights, toy  # noqa: E402

tokens = toy.tokens(n_pads=2)
ids, _, q, k, v = toy.qkv(tokens)
pad = ids == toy.PAD_ID
weights = attention_steps(q, k, v, key_padding_mask=pad).weights[0]
show_weights(weights, tokens, tokens, masked=pad[0], title="attention weights, pad keys masked")
out = Path(__file__).resolve().parent.parent / "docs" / "first_picture.png"
plt.savefig(out, dpi=100, bbox_inches="tight")
print(f"wrote {out.name}")
