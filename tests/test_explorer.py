"""helpers.explorer: one View, two renderers (matplotlib figure, HTML table) that agree on what they show,
and explorer(), the widget the browser tests and the benchmark rely on."""

import re
import warnings

import ipywidgets as widgets
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import pytest
import torch

from helpers.explorer import PLACEHOLDER, RED, REFUSED, Explorer, Panel, View, draw_view, explorer, view_html
from helpers.plots import cell_colors

TOKENS = ["犬", "猫", "鳥", "<pad>", "<pad>"]
PAD = torch.tensor([False, False, False, True, True])


def panel(**kwargs):
    scores = torch.arange(25.0).view(5, 5).masked_fill(PAD, -1e9)
    return Panel(**({"matrix": scores, "rows": TOKENS, "cols": TOKENS, "masked": PAD} | kwargs))


def cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>([^<]*)", html)


def test_html_table_shows_every_cell_with_its_short_text_and_escaped_labels():
    html = view_html(View((panel(title="scores\nline 2"),), "summary"))
    assert len(cells(html)) == 25
    assert cells(html)[:5] == ["0.00", "1.00", "2.00", "-1e9", "-1e9"]
    assert html.count('class="masked"') == 10
    assert "&lt;pad&gt;" in html and "<pad>" not in html
    assert "scores<br>line 2" in html


def test_html_colours_are_the_figures_colours():
    p = panel()
    html = view_html(View((p,), ""))
    rgba, dark = cell_colors(p.matrix.numpy(), PAD.expand(5, 5).numpy())
    first = re.search(r'<td class="" style="[^"]*background:(#[0-9a-f]{6});color:(#[0-9a-f]{3})', html)
    assert first.group(1) == mcolors.to_hex(rgba[0, 0]) and first.group(2) == "#000"  # lowest value: white cell
    assert mcolors.to_hex(rgba[4, 2]) == mcolors.to_hex(plt.get_cmap("Blues")(1.0)) and dark[4, 2]


def test_frames_marks_and_red_labels():
    framed = torch.zeros(5, 5, dtype=torch.bool)
    framed[3:, :3] = True
    html = view_html(View((panel(framed=framed, mark="?", red_rows=(1,), red_cols=(2,), alert=True,
                                 title="t"),), "", caption="legend"))
    assert html.count('class="framed"') == 6 and html.count(">?</span>") == 6
    assert html.count(f"color:{RED}") == 3  # one row label, one column label, the title
    assert View((panel(),), "s") != View((panel(),), "s")  # compared by identity, not by tensor values
    assert "legend" in html


def test_draw_view_puts_panels_side_by_side_with_japanese_labels():
    view = View((panel(), panel(masked=None, ylabel="")), "s", caption="hatched: masked")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a UserWarning
        fig = draw_view(view, view)
        fig.canvas.draw()
    assert len(fig.axes) == 4
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == TOKENS
    assert fig.axes[1].get_ylabel() == ""
    plt.close(fig)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"matrix": torch.zeros(5)}, TypeError, r"matrix must be a 2-D torch.Tensor \(L, S\), got Tensor \(5,\)"),
        ({"matrix": [[0.0]]}, TypeError, "matrix must be a 2-D torch.Tensor"),
        ({"rows": ["a"]}, ValueError, "rows and cols must have 5 and 5 labels"),
        ({"masked": torch.zeros(5)}, TypeError, "masked must be a bool array"),
        ({"framed": torch.zeros(5, 5)}, TypeError, "framed must be a bool array"),
        ({"framed": torch.zeros(4, dtype=torch.bool)}, ValueError, "framed must broadcast"),
        ({"red_rows": (5,)}, ValueError, "red_rows must be a tuple of ints from 0 to 4"),
        ({"red_cols": (1.0,)}, ValueError, "red_cols must be a tuple of ints"),
        ({"red_rows": 1}, ValueError, "red_rows must be a tuple of ints"),
        ({"frame_color": "tab:nothing"}, ValueError, "frame_color must be a matplotlib colour"),
        ({"frame_color": 'red" onmouseover="x'}, ValueError, "frame_color must be a matplotlib colour"),
        ({"fmt": ".2q"}, ValueError, "fmt must be a format spec for a float"),
    ],
)
def test_bad_panels_are_refused_with_the_argument_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        panel(**kwargs)


@pytest.mark.parametrize("render", [draw_view, view_html])
def test_renderers_need_a_panel(render):
    with pytest.raises(ValueError, match="views must hold at least one panel"):
        render(View((), "nothing"))


def test_every_text_is_escaped_and_colours_are_css():
    framed = torch.ones(5, 5, dtype=torch.bool)
    html = view_html(View((panel(title="<b>t</b>", mark="<", frame_color="tab:orange", fmt="<8.2f"),), "",
                          caption="<i>c</i>"))
    assert "<b>t" not in html and "<i>" not in html and ">&lt;</span>" not in html  # no frames: no mark
    html = view_html(View((panel(framed=framed, mark="<", frame_color="tab:orange"),), ""))
    assert html.count(">&lt;</span>") == 25 and "box-shadow:inset 0 0 0 3px #ff7f0e" in html


def test_explorer_shows_summary_tables_and_refusal():
    def view(n=1):
        if n > 2:
            raise ValueError("n must be at most 2")
        return View((Panel(torch.eye(n + 1), ["a"] * (n + 1), ["b"] * (n + 1)),), f"n = {n} <ok>")

    slider = widgets.IntSlider(value=1, min=0, max=3, description="n")
    box = explorer({"n": slider}, view)
    assert isinstance(box, Explorer) and box.controls == {"n": slider}
    summary, tables = box.summary, box.tables
    assert "explorer" in box._dom_classes and "explorer-summary" in summary._dom_classes
    assert "explorer-tables" in tables._dom_classes and list(box.children[0].children) == [slider]
    assert summary.value == "n = 1 &lt;ok&gt;"
    assert tables.value.count("<td") == 4
    slider.value = 2  # the observer redraws
    assert summary.value == "n = 2 &lt;ok&gt;" and tables.value.count("<td") == 9
    slider.value = 3
    assert summary.value.startswith(REFUSED + "n must be at most 2")
    assert tables.value == "", "a refused combination shows no table"
    box.refresh()
    assert summary.value.startswith("<b>Not possible:</b>")


def test_saved_notebooks_show_a_fixed_readable_line_for_an_explorer():
    labels = ["a", "b"]
    box = explorer({"n": widgets.IntSlider(value=1)}, lambda n: View((Panel(torch.eye(2), labels, labels),), ""))
    bundle = box._repr_mimebundle_()
    assert repr(box) == bundle["text/plain"] == PLACEHOLDER  # what nbval compares: the same on every run
    assert "application/vnd.jupyter.widget-view+json" in bundle  # a running kernel still shows the live widget
    from helpers.explorer import PLACEHOLDER_JA
    from helpers.language import speaking

    with speaking("ja"):
        assert repr(box) == box._repr_mimebundle_()["text/plain"] == PLACEHOLDER_JA  # the Japanese edition's


def test_a_panel_with_a_fixed_scale_colours_figure_and_html_alike():
    p = panel(vmin=0.0, vmax=10.0)
    html = view_html(View((p,), ""))
    rgba, _ = cell_colors(p.matrix.numpy(), PAD.expand(5, 5).numpy(), 0.0, 10.0)
    first = re.search(r'<td class="" style="[^"]*background:(#[0-9a-f]{6})', html)
    assert first.group(1) == mcolors.to_hex(rgba[0, 0])
    assert mcolors.to_hex(rgba[0, 1]) == mcolors.to_hex(plt.get_cmap("Blues")(0.1))       # 1 of 0..10
    assert mcolors.to_hex(rgba[4, 2]) == mcolors.to_hex(plt.get_cmap("Blues")(1.0))       # 22: clipped to 10
    draw_view(View((p,), ""))
    plt.close("all")
