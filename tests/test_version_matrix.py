"""tools/versions.py, the version matrix (`make versions`), without building a venv; and the version-specific
claims: every chapter cell that asserts one names a claim of helpers.versions.BEHAVIOURS, and every claim is used."""

import datetime
import re

import nbformat

from helpers import versions
from tools import series
from tools import versions as matrix


def test_requirements_change_only_torch_and_drop_what_nbval_does_not_need():
    wanted = matrix.requirements("2.14.1")
    assert "torch==2.14.1" in wanted and not any(line.startswith("torch==2.13") for line in wanted)
    names = {re.split(r"[=<>\[ ]", line, maxsplit=1)[0].lower() for line in wanted}
    assert {"nbval", "pytest", "pytest-xdist", "transformers", "ipykernel"} <= names
    assert not names & set(matrix.NOT_NEEDED)


def test_the_matrix_holds_the_pin_and_the_releases_the_claims_were_measured_on():
    assert versions.MEASURED_TORCH in matrix.MATRIX
    assert set(versions.ALSO_RUN_ON) <= set(matrix.MATRIX)
    assert any(python != "3.11" for python in matrix.MATRIX.values()), "one release on Colab's Python"


def test_a_junit_report_becomes_passed_cells_and_misses(tmp_path):
    report = tmp_path / "r.xml"
    report.write_text("""<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="notebooks.00_start_here" name="Cell 0" file="notebooks/00_start_here.ipynb"/>
<testcase classname="notebooks.07_x" name="Cell 33" file="notebooks/07_x.ipynb">
  <failure message="Cell execution caused an exception">TypeError: string indices must be integers</failure></testcase>
<testcase classname="notebooks.02_x" name="Cell 22" file="notebooks/02_x.ipynb">
  <failure message="Cell outputs differ">...</failure></testcase>
<testcase classname="notebooks.02_x" name="Cell 23" file="notebooks/02_x.ipynb"><skipped/></testcase>
</testsuite></testsuites>""")
    passed, misses = matrix.read_report(report)
    assert passed == 1
    assert misses == [matrix.Miss("notebooks/07_x.ipynb", "Cell 33", "raised TypeError"),
                      matrix.Miss("notebooks/02_x.ipynb", "Cell 22", "output differs")]
    text = matrix.markdown([matrix.Run("2.14.1", "3.11", "2.14.1+cu130", passed, tuple(misses))],
                           datetime.date(2026, 12, 2))
    assert "2026-12-02" in text and "| 2.14.1 | 2.14.1+cu130 | 3.11 | 1 | 2 |" in text
    assert "| 2.14.1 | notebooks/07_x.ipynb | Cell 33 | raised TypeError |" in text


def test_every_version_specific_cell_names_a_measured_claim_and_every_claim_is_used():
    used = {}
    for path in series.every_chapter():
        for cell in nbformat.read(path, as_version=4).cells:
            for claim in re.findall(r"versions\.(?:behaviour|measured_releases)\(\"([^\"]+)\"", cell.source):
                used.setdefault(claim, []).append(f"{path.name}:{cell.id}")
    unknown = set(used) - set(versions.BEHAVIOURS)
    assert not unknown, f"cells name claims that are not measured: {unknown}"
    assert set(versions.BEHAVIOURS) <= set(used), f"claims no cell uses: {set(versions.BEHAVIOURS) - set(used)}"
    named = {claim: sorted(f"{chapter}_{cell}" for chapter, cell, _ in cells)
             for claim, cells in versions.CELLS.items()}
    found = {claim: sorted({where[:2] + "_" + where.split(":")[1] for where in places})
             for claim, places in used.items()}
    assert named == found, "helpers.versions.CELLS must name exactly the cells that assert a claim"


def test_the_committed_table_names_every_release_of_the_matrix():
    table = matrix.TABLE.read_text(encoding="utf-8")
    for release in matrix.MATRIX:
        assert f"| {release} |" in table, f"docs/versions.md has no row for torch {release}: run make versions"


def test_the_packages_torch_floor_is_the_oldest_release_of_the_matrix():
    import tomllib

    project = tomllib.loads((series.ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    oldest = min(matrix.MATRIX, key=lambda v: tuple(int(p) for p in v.split(".")))
    floor = ".".join(oldest.split(".")[:2])
    assert f"torch>={floor}" in project["dependencies"], f"pyproject.toml's torch floor must be {floor}"
