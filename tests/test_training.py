"""helpers.training: its Adam is torch.optim's, bit for bit; deterministic() sets and restores the flags."""

import pytest
import torch
from torch import nn

from helpers.training import Adam, deterministic


def _run(make_optimizer, steps: int = 25) -> list[torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.LayerNorm(7), nn.Linear(7, 3))
    x, y = torch.randn(16, 5), torch.randint(0, 3, (16,))
    step = make_optimizer(model)
    for t in range(steps):
        nn.functional.cross_entropy(model(x), y).backward()
        step(t)
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_adam_is_torch_optim_bit_for_bit(weight_decay):
    def ours(model):
        optimizer = Adam(model.parameters(), weight_decay=weight_decay)
        return lambda t: optimizer.step(lr=0.01 * (1 - t / 30))

    def torchs(model):
        cls = torch.optim.AdamW if weight_decay else torch.optim.Adam
        optimizer = cls(model.parameters(), lr=0.01, weight_decay=weight_decay)

        def step(t):
            optimizer.param_groups[0]["lr"] = 0.01 * (1 - t / 30)
            optimizer.step()
            optimizer.zero_grad()
        return step

    for a, b in zip(_run(ours), _run(torchs), strict=True):
        assert torch.equal(a, b)


def test_adam_refuses_bad_arguments():
    with pytest.raises(TypeError, match="params"):
        Adam([])
    with pytest.raises(ValueError, match="betas"):
        Adam([torch.zeros(1)], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="eps"):
        Adam([torch.zeros(1)], eps=0.0)


def test_deterministic_sets_and_restores():
    threads, flag = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    with deterministic(threads=1):
        assert torch.are_deterministic_algorithms_enabled() and torch.get_num_threads() == 1
    assert (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()) == (threads, flag)
    with pytest.raises(ValueError, match="threads"):
        with deterministic(threads=0):
            pass
