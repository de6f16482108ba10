"""The versions the stored outputs were measured on, the releases whose behaviour differs where a chapter says so,
and a warning (never an error) when yours is one nobody measured."""

from __future__ import annotations

import sys
import warnings

import torch

MEASURED_PYTHON = "3.11"
MEASURED_TORCH = "2.13.0"          # the stored outputs' torch (requirements.txt's pin)
ALSO_RUN_ON = ("2.14.1",)          # every chapter of both editions also passes nbval under these (2.14.1: its
                                   # CUDA build on a CPU-only machine; the CPU wheel is not reachable from here)

# What a version-specific claim does on each torch release (major.minor), measured by running the chapters under
# each one. A chapter asserts the running release's entry and prints both; a release not listed is "not measured".
BEHAVIOURS: dict[str, dict[str, str]] = {
    # F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True) on 4-D float32 CPU inputs, with the
    # backend torch picks by itself (chapters 7, 13, 14): 2.13 applies both (their intersection), 2.14 raises.
    "sdpa mask with is_causal": {"2.13": "both apply", "2.14": "refused"},
    # F.scaled_dot_product_attention(..., is_causal=True) on jagged nested tensors, on the CPU (chapter 10). 2.14 was
    # measured on its CUDA build (the only 2.14 wheel this project's machines can install) with no GPU present.
    "nested is_causal": {"2.13": "refused: no viable backend",
                         "2.14": "refused: a CUDA error (CUDA build, no GPU)"},
}


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


def behaviour(claim: str, version: str | None = None) -> str | None:
    """What `claim` (a key of BEHAVIOURS) does on the running torch release, or on `version`'s; None when that
    release was not measured."""
    if claim not in BEHAVIOURS:
        raise ValueError(f"claim must be one of {sorted(BEHAVIOURS)}, got {claim!r}")
    return BEHAVIOURS[claim].get(release(version))


def measured_releases(claim: str) -> str:
    """Every measured behaviour of `claim`, in words: "torch 2.13: both apply; torch 2.14: refused"."""
    if claim not in BEHAVIOURS:
        raise ValueError(f"claim must be one of {sorted(BEHAVIOURS)}, got {claim!r}")
    return "; ".join(f"torch {r}: {b}" for r, b in BEHAVIOURS[claim].items())


def check_versions() -> str:
    """Print the torch version; warn if Python or torch are not ones the chapters were run on.

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
    return torch_version
