"""The module graph: DOT text, SVG/PNG through Graphviz's `dot`, the text tree where `dot` is
missing, and tools/visualize_model.py end to end."""
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from oneflow import nn

from libai.utils.model_graph import module_graph_source, module_tree_text, render_module_graph

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO_ROOT, "tools", "visualize_model.py")
SVG = "{http://www.w3.org/2000/svg}"


def _model():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 3), nn.Softmax(dim=-1)))


EXPECTED_TREE = """(model): Sequential (67 params)
    0: Linear (40 params)
    1: ReLU (0 params)
    2: Sequential (27 params)
        0: Linear (27 params)
        1: Softmax (0 params)
Total parameters: 67 (67 trainable)
"""


def test_text_tree_is_exact():
    assert module_tree_text(_model()) == EXPECTED_TREE


def test_dot_source_has_a_node_per_module_and_an_edge_per_child():
    source = module_graph_source(_model())
    assert source.count("->") == 5  # six modules, each but the root under its parent
    for label in ("(model)\\nSequential\\n67 params", "2.0\\nLinear\\n27 params", "1\\nReLU\\n0 params"):
        assert label in source
    assert "Sequential: 67 parameters (67 trainable)" in source


def test_missing_dot_writes_the_text_tree_and_says_so(tmp_path):
    result = render_module_graph(_model(), str(tmp_path / "m.svg"), dot_binary="/no/such/dot")
    assert result.fallback and result.path == str(tmp_path / "m.txt")
    assert "`dot` program is not installed" in result.message and "apt-get install graphviz" in result.message
    assert (tmp_path / "m.txt").read_text() == EXPECTED_TREE
    assert not (tmp_path / "m.svg").exists()


def test_bad_extension_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"must end in \.svg or \.png"):
        render_module_graph(_model(), str(tmp_path / "m.pdf"))


def _check_svg(path):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg"
    titles = [t.text for t in root.iter(SVG + "title")]
    assert len([t for t in titles if t and "->" in t]) == 5  # the five edges were laid out
    texts = {t.text for t in root.iter(SVG + "text")}
    assert {"(model)", "2.0", "Linear", "27 params"} <= texts


def test_render_svg_and_png_where_dot_is_installed(tmp_path):
    """With `dot` on this machine: a real SVG and PNG. Without it: the text tree (the same
    call, so the test checks whichever this machine can do)."""
    svg, png = str(tmp_path / "m.svg"), str(tmp_path / "m.png")
    results = [render_module_graph(_model(), svg), render_module_graph(_model(), png)]
    if shutil.which("dot"):
        assert [r.fallback for r in results] == [False, False]
        _check_svg(svg)
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    else:
        assert [r.fallback for r in results] == [True, True]
        assert (tmp_path / "m.txt").read_text() == EXPECTED_TREE


def test_tool_draws_a_config_model_with_overrides(tmp_path):
    config = tmp_path / "cfg.py"
    config.write_text(
        "import sys\n"
        f"sys.path.insert(0, {os.path.join(REPO_ROOT, 'tests', 'engine')!r})\n"
        "from toy import toy_cfg\n"
        f"_c = toy_cfg({str(tmp_path / 'out')!r})\n"
        "model, train, optim, graph, dataloader = _c.model, _c.train, _c.optim, _c.graph, _c.dataloader\n"
    )
    out = tmp_path / "model.svg"
    env = dict(os.environ, PATH=os.path.dirname(shutil.which("dot")) if shutil.which("dot") else "/nonexistent")
    done = subprocess.run([sys.executable, TOOL, "--config-file", str(config), "--output", str(out),
                           "+model.hidden=5"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    # ToyModel(hidden=5): Linear(4, 5) + Linear(5, 2) = 25 + 12 parameters.
    if shutil.which("dot"):
        assert done.stdout.strip().splitlines()[-1] == str(out)
        assert "37 parameters (37 trainable)" in out.read_text()
        ET.parse(out)
    else:
        assert "`dot` program is not installed" in done.stderr
        assert "Total parameters: 37 (37 trainable)" in (tmp_path / "model.txt").read_text()

    # Forcing the fallback: a PATH without `dot`.
    env["PATH"] = "/nonexistent"
    done = subprocess.run([sys.executable, TOOL, "--config-file", str(config), "--output",
                           str(tmp_path / "g.png")], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert "note: Graphviz's `dot` program is not installed" in done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(tmp_path / "g.txt")
    assert (tmp_path / "g.txt").read_text().startswith("(model): ToyModel (58 params)\n    net: Sequential")


def test_tool_rejects_other_formats(tmp_path):
    done = subprocess.run([sys.executable, TOOL, "--config-file", "x.py", "--output", str(tmp_path / "m.pdf")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "--output must end in .svg or .png" in done.stderr
