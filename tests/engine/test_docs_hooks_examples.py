"""docs/hooks_and_trainers.md: every example runs as written and does what the page says.

The page's Python blocks are run in order, as one script, from the repository root (in a fresh
process: the examples set up logging and train several times). Every ``text`` block after the
first example is output the page promises: each of its lines must be printed. Checks that the
page does not show are appended to the script (the gradient norm against an independent NumPy
computation, the hook order against the page's table).
"""
import re

from tests.doc_pages import assert_printed_in_order, page_text, run_examples_script, script_and_promises

PAGE = "hooks_and_trainers.md"

CHECKS = '''
# ---- checks appended by tests/engine/test_docs_hooks_examples.py ----
import numpy as np


class _ReferenceNorm(HookBase):
    """The same norm, computed independently in float64 NumPy."""

    def __init__(self):
        self.values = []

    def after_backward(self):
        squares = [float((p.grad.numpy().astype(np.float64) ** 2).sum())
                   for p in self.trainer.model.parameters() if p.grad is not None]
        self.values.append(sum(squares) ** 0.5)


_t = DefaultTrainer(small_cfg())
_ref = _ReferenceNorm()
_t.register_hooks([GradNorm(), _ref], after="LRScheduler")
_t.train()
with open(os.path.join(_t.cfg.train.output_dir, "metrics.json")) as _f:
    _logged = [json.loads(line)["grad_norm"] for line in _f if '"grad_norm"' in line]
assert len(_logged) == len(_ref.values) == 12, (_logged, _ref.values)
assert np.allclose(_logged, _ref.values, rtol=1e-4), (_logged, _ref.values)

assert first.get_hook("StepCounter").steps == 4 and first.iter == 4
assert second.start_iter == 4 and second.get_hook("StepCounter").steps == 12 == second.iter
assert trainer._trainer.updates == 2 * trainer.iter
assert "Acc@1" in results

_es = DefaultTrainer(small_cfg(early_stopping=dict(enabled=True, patience=2)))
print("ORDER WITH EARLY STOPPING:", [h.name for h in _es.hooks])
print("CHECKS PASSED")
'''


def _table_order(text):
    section = text.split("## The default hooks, in order", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, re.M)


def test_hooks_page_examples_run_and_print_what_the_page_shows(tmp_path):
    code, expected = script_and_promises(PAGE)
    assert len(code) >= 7 and len(expected) >= 8, "the page lost its examples"
    script = tmp_path / "hooks_examples.py"
    script.write_text("\n".join(code) + CHECKS)
    proc = run_examples_script(script)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout
    assert "CHECKS PASSED" in out
    assert_printed_in_order(out, expected, PAGE)
    order = re.search(r"ORDER WITH EARLY STOPPING: (\[.*\])", out).group(1)
    assert order == str(_table_order(page_text(PAGE))), "the table of default hooks no longer matches build_hooks()"
