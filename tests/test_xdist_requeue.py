"""A worker that dies under ``--dist loadfile`` no longer stalls the run (tests/xdist_requeue.py).

One worker runs a file that passes, then a file whose first test kills the worker the first time
it runs. Without the patch, xdist hands the finished file to the replacement worker as an empty
list of tests and the run never ends; with it, the crashed file's tests run again on the
replacement and pytest exits."""
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_crashed_worker_is_replaced_and_the_run_ends(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {REPO!r})
        from tests import xdist_requeue

        def pytest_configure(config):
            xdist_requeue.install()
    """))
    (tmp_path / "test_a_passes.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    marker = tmp_path / "crashed_once"
    (tmp_path / "test_b_crashes.py").write_text(textwrap.dedent(f"""
        import os

        def test_crash_once():
            if not os.path.exists({str(marker)!r}):
                open({str(marker)!r}, "w").close()
                os._exit(1)

        def test_after():
            pass
    """))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "1", "--dist", "loadfile", "-p", "no:cacheprovider",
         "-o", "addopts=", "-rA", str(tmp_path)],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert marker.exists(), out
    assert "replacing crashed worker" in out, out
    assert "PASSED test_b_crashes.py::test_after" in out, out
    assert "PASSED test_a_passes.py::test_two" in out, out
