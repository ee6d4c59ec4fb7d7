"""Shared test set-up: import libai first (it makes OneFlow's libraries loadable) and give
every test a clean parallel-layout stack."""
import os
import sys

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

import libai  # noqa: E402,F401  (must precede oneflow)
from libai.utils import distributed as dist  # noqa: E402
from tests import xdist_requeue  # noqa: E402


@pytest.fixture(autouse=True)
def _clean_layouts():
    dist.reset_layouts()
    yield
    dist.reset_layouts()


@pytest.fixture(autouse=True)
def _seeded_random_state():
    """Every test starts from the same random state, whichever worker runs it after whichever
    tests: a model a test builds without seeding is then the same model on every run, so a
    tolerance that holds once holds always. OneFlow is seeded only if something imported it
    (tests of import-free tools must stay import-free)."""
    np.random.seed(0)
    oneflow = sys.modules.get("oneflow")
    if oneflow is not None:
        oneflow.manual_seed(0)


@pytest.fixture
def local_layout():
    """A one-process layout on the CPU, entered for the test."""
    layout = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    with layout:
        yield layout


@pytest.fixture(scope="session")
def digits_dir(tmp_path_factory):
    """scikit-learn's real digits written as MNIST IDX files (about 1,400 train, 360 test)."""
    from libai.data.datasets.mnist import make_digits_mnist

    root = str(tmp_path_factory.mktemp("digits"))
    make_digits_mnist(root, test_fraction=0.2, seed=0)
    return root


# ------------------------------------------------------------------------------------------
# Running under pytest-xdist (tools/run_tests.sh: ``-n 3 --dist loadfile`` on 2 cores)
# ------------------------------------------------------------------------------------------
# Files that take longest (most of them launch several OneFlow processes), longest first. With
# ``--dist loadfile`` a file runs whole on one worker, in collection order: starting these
# first leaves the many short files to even out the end of the run. Only an order: a file
# missing here runs after them, as collected; a name that no longer exists is ignored.
SLOW_FIRST = [
    "tests/parallel/test_parallel_training.py",
    "tests/configs/test_recipes_graph.py",
    "tests/models/test_models_distributed.py",
    "tests/engine/test_launcher.py",
    "tests/parallel/test_rank_failures.py",
    "tests/engine/test_stop_signals.py",
    "tests/benchmarks/test_bench_graph_parallel_smoke.py",
    "tests/configs/test_recipes.py",
    "tests/projects/test_llama_lora.py",
    "tests/projects/test_gpt2_tiny_pretrain.py",
    "tests/parallel/test_pipeline_evaluation.py",
    "tests/models/test_cnn_models.py",
    "tests/engine/test_training_visuals.py",
    "tests/engine/test_techniques_docs.py",
    "tests/models/test_onnx_export.py",
    "tests/models/test_vision_models.py",
    "tests/inference/test_generation_parallel.py",
    "tests/models/test_hf_weights_parallel.py",
    "tests/engine/test_wall_clock.py",
    "tests/benchmarks/test_bench_global_tensors_smoke.py",
    "tests/parallel/test_zero.py",
    "tests/data/text/test_text_preprocess.py",
    "tests/engine/test_graph_equivalence.py",
    "tests/utils/test_plot.py",
    "tests/data/text/test_text_bert_dataset.py",
    "tests/projects/test_projects.py",
]


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}
    late = len(SLOW_FIRST)

    def key(item):
        path = os.path.relpath(str(item.path), REPO_ROOT).replace(os.sep, "/")
        return rank.get(path, late)

    items.sort(key=key)  # stable: the tests of a file, and the other files, keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """A worker that dies (OneFlow 0.9 occasionally segfaults in Graph-mode code on a loaded
    2-core machine) has its unfinished file handed to a fresh worker by ``--dist loadfile``,
    the crashed test included: that run's result is the test's result, and the crash is
    reported as a skip naming it. A second crash of the same test stays a failure, and a crashed
    test that never ran again (xdist gave up replacing workers) fails the session
    (``pytest_sessionfinish`` below)."""
    crashed = sched.config.stash.setdefault(_CRASHED, {})
    if crashitem in crashed:
        return
    crashed[crashitem] = False  # not run again yet
    report.outcome = "skipped"
    report.when = "setup"
    report.longrepr = (str(report.location[0]), 0,
                       f"Skipped: {report.longrepr}; run again on a fresh worker (its result follows)")
    report.libai_crash = True


def pytest_runtest_logreport(report):
    crashed = _controller_config.stash.get(_CRASHED, {}) if _controller_config else {}
    if report.nodeid in crashed and not getattr(report, "libai_crash", False):
        crashed[report.nodeid] = True  # a report of its run on the fresh worker


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    never_rerun = [n for n, rerun in session.config.stash.get(_CRASHED, {}).items() if not rerun]
    if never_rerun and session.exitstatus == 0:
        session.config.get_terminal_writer().line(
            f"FAILED: a worker crashed in {never_rerun} and the test never ran again", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config):
    global _controller_config
    _controller_config = config
    xdist_requeue.install()  # a crashed worker must not stall the run (see tests/xdist_requeue.py)


_CRASHED = pytest.StashKey()
_controller_config = None
