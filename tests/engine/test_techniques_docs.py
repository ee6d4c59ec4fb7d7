"""docs/techniques/*.md: every page's examples run as written and print what the page shows.

Each page's Python blocks run in order, as one script, in a fresh process from the repository
root (they import ``tests.engine.toy``). A block preceded by ``<!-- not run -->`` is skipped
(it needs several processes or a GPU). Every ``text`` block after a page's first Python block
is output the page promises: each of its non-empty lines must be printed, in the page's order.
"""
import pytest

from tests.doc_pages import assert_printed_in_order, page_text, run_examples_script, script_and_promises

PAGES = ["graph_mode", "gradient_accumulation", "amp", "activation_checkpointing", "zero",
         "gradient_clipping", "ema", "nan_detection"]


def test_the_index_links_every_page():
    index = page_text("techniques/index.md")
    for page in PAGES:
        assert f"]({page}.md)" in index, page
    assert "test_graph_equivalence.py" in index


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run_and_print_what_the_page_shows(page, tmp_path):
    code, expected = script_and_promises(f"techniques/{page}.md")
    assert code and expected, f"docs/techniques/{page}.md lost its examples"
    script = tmp_path / f"{page}_examples.py"
    script.write_text("\n".join(code))
    proc = run_examples_script(script)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert_printed_in_order(proc.stdout, expected, f"techniques/{page}.md", tail=3000)
