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


def test_quiet_on_a_release_the_chapters_also_run_on(monkeypatch):
    monkeypatch.setattr(torch, "__version__", f"{versions.ALSO_RUN_ON[0]}+cu130")
    monkeypatch.setattr(versions, "MEASURED_PYTHON", f"{sys.version_info[0]}.{sys.version_info[1]}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        versions.check_versions()


def test_behaviours_by_release_or_build(monkeypatch):
    assert versions.release("2.13.0+cpu") == "2.13" and versions.release("2.14.1") == "2.14"
    assert versions.behaviour("sdpa mask with is_causal", "2.13.0") == "both apply"
    assert versions.behaviour("sdpa mask with is_causal", "2.14.1+cu130") == "refused"
    assert versions.behaviour("sdpa mask with is_causal", "2.9.1") is None          # not measured
    assert versions.measured_releases("sdpa mask with is_causal") == (
        "torch 2.12: both apply; torch 2.13: both apply; torch 2.14: refused")
    assert versions.measured_releases("nested is_causal") == (
        "CPU build: refused: no viable backend; CUDA build, no GPU: refused: a CUDA error")
    monkeypatch.setattr(torch.version, "cuda", None)
    assert versions.build() == "CPU build" and versions.behaviour("nested is_causal") == "refused: no viable backend"
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert versions.behaviour("nested is_causal") is None                        # a GPU: not measured
    every = {versions.release(v) for v in (versions.MEASURED_TORCH, *versions.ALSO_RUN_ON)}
    for table in versions.BEHAVIOURS.values():
        assert set(table) in (every, set(versions.BUILDS)), "a claim lacks a measured release or build"
    with pytest.raises(ValueError, match="claim must be one of"):
        versions.behaviour("no such claim")
    with pytest.raises(ValueError, match="version must look like"):
        versions.release("latest")
    with pytest.raises(TypeError, match="version must be"):
        versions.release(2.13)


def test_check_versions_names_the_cells_whose_result_is_not_the_stored_one(monkeypatch, capsys):
    monkeypatch.setattr(torch.version, "cuda", None)
    assert versions.differing_cells("2.13.0") == [] and versions.differing_cells("2.12.1") == []
    lines = versions.differing_cells("2.14.1")
    assert [line.split(",")[0] for line in lines] == ["chapter 7", "chapter 13", "chapter 14"]
    assert lines[0] == ("chapter 7, the is_causal hint, path by path (cell 7c1e0a0a): refused here, "
                        "stored: both apply")
    assert all("not measured here" in line for line in versions.differing_cells("2.9.1"))
    monkeypatch.setattr(torch.version, "cuda", "13.0")                    # a CUDA build on a machine without GPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert versions.differing_cells("2.12.1") == [
        "chapter 10, nested tensors and is_causal (cell e5d14942): refused: a CUDA error here, "
        "stored: refused: no viable backend"]
    monkeypatch.setattr(torch, "__version__", "2.14.1+cu130")
    monkeypatch.setattr(versions, "MEASURED_PYTHON", f"{sys.version_info[0]}.{sys.version_info[1]}")
    versions.check_versions()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "torch 2.14.1" and len(out) == 5 and all(line.startswith(versions.DIFFERS.en) for line in out[1:])
    monkeypatch.setenv("ATTENTION_MASKS_LANGUAGE", "ja")
    assert versions.differing_cells("2.14.1")[1] == (
        "第 13 章「プレフィックス LM の罠をリリースごとに」（セル s4-both）は、ここでは refused、"
        "保存された出力では both apply")
