"""Training on a CPU in seconds, the same run after run (chapters 8 and 9).

Two stand-ins for PyTorch calls that import torch.compile's machinery (dynamo, sympy), which costs about a
second or more on a small machine, as long as our trainings (benchmarks/bench_optimizer_import.py):
- deterministic() sets the flag torch.use_deterministic_algorithms(True) sets, without that import;
- Adam is torch.optim.Adam / AdamW's update on CPU written out, bit for bit (tests/test_training.py): creating a
  torch.optim optimizer imports it (its constructor, in torch 2.13; not its first step).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

import torch


@contextlib.contextmanager
def deterministic(threads: int = 1) -> Iterator[None]:
    """Deterministic kernels and a fixed thread count inside the block; the previous settings after it.

    torch._C._set_deterministic_algorithms is what torch.use_deterministic_algorithms(True) calls for eager
    PyTorch; the public function also imports the compiler to set its flag, which we do not use.
    torch.are_deterministic_algorithms_enabled() reads it.
    """
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    old_threads, old_flag = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch._C._set_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch._C._set_deterministic_algorithms(old_flag)
        torch.set_num_threads(old_threads)


class Adam:
    """Adam (Kingma & Ba) as torch.optim does it on CPU; weight_decay > 0 makes it AdamW (decoupled decay).

    Differences from torch.optim: the learning rate is an argument of step(), so a schedule is one
    expression in the training loop, and step() also clears the gradients (zero_grad with set_to_none).
    """

    def __init__(self, params: Iterable[torch.Tensor], betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0):
        self.params = list(params)
        if not self.params or not all(isinstance(p, torch.Tensor) for p in self.params):
            raise TypeError("params must be a non-empty iterable of tensors, e.g. model.parameters()")
        if not (isinstance(betas, tuple) and len(betas) == 2 and all(0.0 <= b < 1.0 for b in betas)):
            raise ValueError(f"betas must be a pair of floats in [0, 1), got {betas!r}")
        if eps <= 0 or weight_decay < 0:
            raise ValueError(f"eps must be > 0 and weight_decay >= 0, got eps={eps!r}, weight_decay={weight_decay!r}")
        self.betas, self.eps, self.weight_decay, self.t = betas, eps, weight_decay, 0
        self.m = [torch.zeros_like(p) for p in self.params]   # running mean of the gradients
        self.v = [torch.zeros_like(p) for p in self.params]   # running mean of their squares

    @torch.no_grad()
    def step(self, lr: float) -> None:
        """One update of every parameter that has a gradient, with learning rate lr; then clear the gradients."""
        self.t += 1
        b1, b2 = self.betas
        step_size = lr / (1 - b1 ** self.t)             # the bias corrections of the two running means
        root_correction = (1 - b2 ** self.t) ** 0.5
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            if self.weight_decay:
                p.mul_(1 - lr * self.weight_decay)
            m.lerp_(p.grad, 1 - b1)
            v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
            p.addcdiv_(m, (v.sqrt() / root_correction).add_(self.eps), value=-step_size)
            p.grad = None
