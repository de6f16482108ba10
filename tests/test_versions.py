"""check_versions warns (never raises) when Python or torch differ from the measured versions."""

import sys
import warnings

import pytest
import torch

from helpers import versions


def test_quiet_on_the_measured_versions(monkeypatch, capsys):
    monkeypatch.setattr(torch, "__version__", "2.13.0+cpu")
    monkeypatch.setattr(versions, "MEASURED_PYTHON", f"{sys.version_info[0]}.{sys.version_info[1]}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert versions.check_versions() == "2.13.0"
    assert capsys.readouterr().out == "torch 2.13.0\n"


def test_warns_on_another_torch(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.9.1")
    with pytest.warns(versions.VersionWarning, match="you have Python .* with torch 2.9.1"):
        assert versions.check_versions() == "2.9.1"
