"""The versions the stored outputs were measured on, the releases whose behaviour differs where a chapter says so,
and a warning (never an error) when yours is one nobody measured."""

from __future__ import annotations

import sys
import warnings

import torch

from helpers.language import Bilingual, say

MEASURED_PYTHON = "3.11"
MEASURED_TORCH = "2.13.0"          # the stored outputs' torch (requirements.txt's pin)
ALSO_RUN_ON = ("2.12.1", "2.14.1")  # every chapter of both editions also passes nbval under these (their CUDA
                                    # builds, on a machine with no GPU; tools/versions.py)

# What a version-specific claim does, measured by running the chapters under each torch of the version matrix
# (tools/versions.py). A claim is keyed by release (major.minor) or, where the build decides, by build (build()).
# A chapter asserts the running torch's entry and prints them all; a release or build not listed is "not measured".
BEHAVIOURS: dict[str, dict[str, str]] = {
    # F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True) on 4-D float32 CPU inputs, with the
    # backend torch picks by itself (chapters 7, 13, 14): 2.12 and 2.13 apply both (their intersection), 2.14 raises.
    "sdpa mask with is_causal": {"2.12": "both apply", "2.13": "both apply", "2.14": "refused"},
    # F.scaled_dot_product_attention(..., is_causal=True) on jagged nested tensors on the CPU (chapter 10): refused on
    # every release measured, in a way the build decides (2.13's CPU build; 2.12's and 2.14's CUDA builds, no GPU).
    "nested is_causal": {"CPU build": "refused: no viable backend",
                         "CUDA build, no GPU": "refused: a CUDA error"},
}
BUILDS = ("CPU build", "CUDA build, no GPU")
MEASURED_BUILD = "CPU build"   # the stored outputs' build

# Where each claim is asserted: (chapter, cell id, what the cell shows). tests/test_version_matrix.py checks this
# against the chapters (every cell that calls behaviour() is here, and nothing else is).
CELLS: dict[str, tuple[tuple[str, str, Bilingual], ...]] = {
    "sdpa mask with is_causal": (
        ("07", "7c1e0a0a", Bilingual("the is_causal hint, path by path", "is_causal のヒントをコードパスごとに")),
        ("13", "s4-both", Bilingual("the prefix-LM trap, release by release",
                                     "プレフィックス LM の罠をリリースごとに")),
        ("14", "s1-run", Bilingual("three places that decide", "決める 3 つの場所"))),
    "nested is_causal": (
        ("10", "e5d14942", Bilingual("nested tensors and is_causal", "ネステッドテンソルと is_causal")),),
}
# The head of each line check_versions prints per cell; tests/sanitize.cfg drops such lines (both languages).
DIFFERS = Bilingual("version-specific here: ", "このバージョンで結果が異なるセル：")


class VersionWarning(UserWarning):
    """The chapter runs, but some printed numbers may differ from the stored ones."""


def release(version: str | None = None) -> str:
    """The torch release, major.minor ("2.13" for "2.13.0+cpu"): the running one, or `version`'s."""
    if version is not None and not isinstance(version, str):
        raise TypeError(f"version must be a version string like '2.13.0' or None, got {type(version).__name__}")
    version = torch.__version__ if version is None else version
    parts = version.split("+")[0].split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"version must look like '2.13.0', got {version!r}")
    return ".".join(parts[:2])


def build() -> str:
    """The running torch's build: "CPU build", "CUDA build, no GPU" or "CUDA build, GPU"."""
    if torch.version.cuda is None:
        return "CPU build"
    return "CUDA build, GPU" if torch.cuda.is_available() else "CUDA build, no GPU"


def behaviour(claim: str, version: str | None = None) -> str | None:
    """What `claim` (a key of BEHAVIOURS) does on the running torch: its release's entry (or `version`'s), or, for
    a claim keyed by build, the running build's (`version` then plays no part); None when it was not measured."""
    table = _measured(claim)
    if set(table) <= set(BUILDS):
        return table.get(build())
    return table.get(release(version))


def measured_releases(claim: str) -> str:
    """Every measured behaviour of `claim`, in words: "torch 2.13: both apply; torch 2.14: refused"."""
    return "; ".join(f"{key if key in BUILDS else 'torch ' + key}: {b}" for key, b in _measured(claim).items())


def _measured(claim: str) -> dict[str, str]:
    """BEHAVIOURS' entry for `claim`; ValueError naming the claims if it is none of them."""
    if claim not in BEHAVIOURS:
        raise ValueError(f"claim must be one of {sorted(BEHAVIOURS)}, got {claim!r}")
    return BEHAVIOURS[claim]


def differing_cells(version: str | None = None) -> list[str]:
    """The cells whose result on the running torch (or release `version`) is not the stored one, one line each:
    "chapter 7, cell 7c1e0a0a (the is_causal hint, path by path): refused here, stored: both apply". Empty on the
    stored outputs' torch. A behaviour nobody measured counts as different ("not measured here")."""
    lines = []
    for claim, cells in CELLS.items():
        table = _measured(claim)
        stored = table[MEASURED_BUILD] if set(table) <= set(BUILDS) else table[release(MEASURED_TORCH)]
        here = behaviour(claim, version)
        if here != stored:
            for chapter, cell, what in cells:
                lines.append(say(f"chapter {int(chapter)}, {what.en} (cell {cell}): {here or 'not measured'} here, "
                                 f"stored: {stored}",
                                 f"第 {int(chapter)} 章「{what.ja}」（セル {cell}）は、ここでは "
                                 f"{here or '未測定'}、保存された出力では {stored}"))
    return lines


def check_versions() -> str:
    """Print the torch version; warn if Python or torch are not ones the chapters were run on; name the cells whose
    result on this torch is not the stored one (each asserts what this torch does; differing_cells).

    Returns the torch version without its build suffix (e.g. "2.13.0" for "2.13.0+cpu").
    """
    torch_version = torch.__version__.split("+")[0]
    python_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    print("torch", torch_version)
    known = (MEASURED_TORCH, *ALSO_RUN_ON)
    if torch_version not in known or python_version != MEASURED_PYTHON:
        warnings.warn(
            f"The chapters were measured on Python {MEASURED_PYTHON} with torch {MEASURED_TORCH} (and also run on "
            f"torch {', '.join(ALSO_RUN_ON)}); you have Python {python_version} with torch {torch_version}. The code "
            "runs, but some printed numbers may differ, and cells marked as version-specific may show other results.",
            VersionWarning,
            stacklevel=2,
        )
    for line in differing_cells():
        print(DIFFERS.said() + line)
    return torch_version
