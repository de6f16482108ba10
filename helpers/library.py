"""The real library, read and built small: the installed source lines a chapter quotes, and tiny seeded models.

Chapters that speak about transformers show its source with the installed version (`show_source`) and run it on
models built from tiny configs, nothing downloaded (`tiny`). transformers is imported only when one of these is
called, so the torch-only core never needs it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable

import torch
from torch import nn

from helpers import arguments


def source_lines(function: Callable, *needles: str) -> list[str]:
    """The lines of `function`'s installed source that contain any of `needles`, each as
    "file:line: text" with the file relative to site-packages (e.g. transformers/masking_utils.py:944)."""
    if not callable(function):
        raise TypeError(f"function must be a function or class, got {type(function).__name__}")
    if not needles or not all(isinstance(n, str) and n for n in needles):
        raise ValueError("needles must be one or more non-empty strings to look for")
    function = inspect.unwrap(function)              # past decorators such as deprecate_kwarg
    lines, first = inspect.getsourcelines(function)
    path = inspect.getsourcefile(function) or "?"
    root = os.path.dirname(os.path.dirname(_transformers().__file__))
    name = os.path.relpath(path, root).replace(os.sep, "/") if path.startswith(root) else os.path.basename(path)
    found = [f"{name}:{first + i}: {line.strip()}" for i, line in enumerate(lines)
             if any(n in line for n in needles)]
    if not found:
        raise ValueError(f"none of {needles} is in the source of {getattr(function, '__name__', function)}")
    return found


def show_source(function: Callable, *needles: str) -> None:
    """Print source_lines under a header naming transformers' version (nothing is printed for bad arguments)."""
    lines = source_lines(function, *needles)
    print(f"transformers {_transformers().__version__}, {getattr(function, '__qualname__', function)}:")
    for line in lines:
        print("   ", line)


def tiny(config_class: type, model_class: type | None = None, *, seed: int = 0, **sizes: object) -> nn.Module:
    """A seeded model of `config_class` with random weights (vocabulary 20, 32 positions unless `sizes` says
    otherwise), in eval mode; `model_class` defaults to AutoModel. initializer_range 0.5, not 0.02: a dependence
    must show far above the checks' tolerance."""
    if not isinstance(config_class, type):
        raise TypeError(f"config_class must be a transformers config class, got {type(config_class).__name__}")
    if model_class is not None and not isinstance(model_class, type):
        raise TypeError(f"model_class must be a model class or None, got {type(model_class).__name__}")
    torch.manual_seed(arguments.integer(seed, "seed"))
    config = config_class(**{"vocab_size": 20, "max_position_embeddings": 32, "initializer_range": 0.5, **sizes})
    return (model_class or _transformers().AutoModel.from_config)(config).eval()


def _transformers():  # noqa: ANN202  (the module, imported on first use)
    import transformers

    return transformers
