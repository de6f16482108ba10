"""The versions the stored outputs were measured on, and a warning (never an error) when yours differ."""

from __future__ import annotations

import sys
import warnings

import torch

MEASURED_PYTHON = "3.11"
MEASURED_TORCH = "2.13.0"


class VersionWarning(UserWarning):
    """The chapter runs, but some printed numbers may differ from the stored ones."""


def check_versions() -> str:
    """Print the torch version; warn if Python or torch differ from the ones the chapters were measured on.

    Returns the torch version without its build suffix (e.g. "2.13.0" for "2.13.0+cpu").
    """
    torch_version = torch.__version__.split("+")[0]
    python_version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    print("torch", torch_version)
    if (python_version, torch_version) != (MEASURED_PYTHON, MEASURED_TORCH):
        warnings.warn(
            f"This chapter was measured on Python {MEASURED_PYTHON} with torch {MEASURED_TORCH}; you have Python "
            f"{python_version} with torch {torch_version}. The code runs, but some printed numbers may differ, "
            "and cells marked as version-specific may show other results.",
            VersionWarning,
            stacklevel=2,
        )
    return torch_version
