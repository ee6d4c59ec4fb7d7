"""libai/_runtime.py: what happens before ``import oneflow``.

The LOCAL_RANK rule is checked on plain dicts here; the real consequence (two launchers on one
machine train and match one process) is tests/parallel/test_parallel_training.py's two-node test.
"""
import os
import sys

import pytest

from libai._runtime import align_local_rank, preload_cuda_libraries


def _env(master="127.0.0.1", rank="1", local_rank="0", world_size="2"):
    return {"MASTER_ADDR": master, "RANK": rank, "LOCAL_RANK": local_rank, "WORLD_SIZE": world_size}


@pytest.mark.parametrize("master", ["127.0.0.1", "127.0.0.2", "localhost", "LOCALHOST", "::1", "[::1]"])
def test_nodes_on_one_machine_get_their_global_rank_as_local_rank(master):
    env = _env(master=master, rank="3", local_rank="1", world_size="4")
    assert align_local_rank(env) == "3"
    assert env["LOCAL_RANK"] == "3"


@pytest.mark.parametrize(
    "env",
    [
        _env(master="10.0.0.1"),  # several real machines: the launcher's local rank is right
        _env(master="node-0.cluster"),
        _env(rank="1", local_rank="1"),  # one launcher with several processes
        _env(world_size="1", rank="0", local_rank="0"),
        {"MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2", "RANK": "1"},  # no LOCAL_RANK
        {},  # not launched at all
    ],
    ids=["remote-master", "remote-hostname", "one-launcher", "one-process", "no-local-rank", "plain"],
)
def test_other_launches_are_left_alone(env):
    before = dict(env)
    assert align_local_rank(env) is None
    assert env == before


def test_too_late_once_oneflow_is_imported_says_so_and_changes_nothing(monkeypatch):
    import oneflow  # noqa: F401  (already imported by the suite; the point is that it is)

    for key, value in _env().items():
        monkeypatch.setenv(key, value)
    with pytest.warns(RuntimeWarning, match="Import libai before oneflow"):
        assert align_local_rank() is None
    assert os.environ["LOCAL_RANK"] == "0"


def test_cuda_libraries_are_preloaded_once_oneflow_is_importable():
    # The suite imported libai before oneflow, so the preload ran and found the wheel's
    # companions; a second call returns the same list without loading anything again.
    assert "oneflow" in sys.modules
    first = preload_cuda_libraries()
    assert first == preload_cuda_libraries()
    assert any("cudnn" in path for path in first)


def test_oneflow_uses_the_preloaded_copies_which_stay_out_of_the_global_scope():
    """OneFlow's cuBLAS/cuDNN dependencies were satisfied by the preloaded files (one copy of
    each in the process, the wheel's), while their symbols stay out of the global scope that
    every relocation of OneFlow's libraries would otherwise search."""
    import ctypes

    import oneflow  # noqa: F401

    with open("/proc/self/maps") as f:
        mapped = {line.split()[-1] for line in f if "/" in line}
    for name in ("libcublas.so.11", "libcudnn_cnn_infer.so.8"):
        copies = [path for path in mapped if os.path.basename(path) == name]
        assert len(copies) == 1 and copies[0] in preload_cuda_libraries(), copies
    with pytest.raises(AttributeError):
        ctypes.CDLL(None).cublasCreate_v2


# ---------------------------------------------------------------------------------------------
# Import order: libai_import_hook.pth, or one warning (issue #35 item 2)
# ---------------------------------------------------------------------------------------------
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CHOICE_VARIABLES = ("OPENBLAS_CORETYPE", "LIBAI_OPENBLAS_CORETYPE_CHOSEN", "LIBAI_CBLAS_ROUTE",
                     "ONEFLOW_VM_COMPUTE_ON_WORKER_THREAD", "ONEFLOW_ENABLE_ONEDNN_OPTS", "LIBAI_IMPORT_HOOK")
_ONEFLOW_FIRST = """
import json, site, sys, warnings
if sys.argv[1]:
    site.addsitedir(sys.argv[1])  # processes the .pth as site-packages does at start-up
    assert "libai" not in sys.modules and "oneflow" not in sys.modules  # start-up stays light
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import oneflow
    import libai
    import libai._runtime as runtime
    runtime.report_import_order()  # a second call says nothing more
said = [str(w.message) for w in caught if "imported before libai" in str(w.message)]
print(json.dumps({"said": said, "lost": runtime.lost_to_import_order(),
                  "route": runtime.matrix_route()["active"], "blas": runtime.blas_choice()["source"]}))
"""


def _oneflow_first(site_dir, tmp_path):
    import json
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in _CHOICE_VARIABLES}
    # the venv itself may have the hook installed (tools/setup_env.sh): off for "without it";
    # the test's own site folder below stands for an installation with it
    env.update(PYTHONPATH=REPO, LIBAI_IMPORT_HOOK="1" if site_dir else "0")
    proc = subprocess.run([sys.executable, "-c", _ONEFLOW_FIRST, site_dir], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_oneflow_imported_first_without_the_hook_warns_once_naming_the_losses_and_fix(tmp_path):
    got = _oneflow_first("", tmp_path)
    assert len(got["said"]) == 1 and got["blas"] == "too late"
    assert any("OPENBLAS_CORETYPE" in item for item in got["lost"])
    assert "ONEFLOW_VM_COMPUTE_ON_WORKER_THREAD" in got["said"][0]
    assert "Fix: import libai before oneflow, or install libai's start-up hook" in got["said"][0]


def test_oneflow_imported_first_with_the_hook_gets_libais_choices(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    with open(os.path.join(REPO, "libai_import_hook.pth")) as f:
        (site_dir / "libai_import_hook.pth").write_text(f.read())
    got = _oneflow_first(str(site_dir), tmp_path)
    assert got["said"] == [] and got["lost"] == [] and got["blas"] in ("libai", "none")
    # the route is as if libai came first: on where the adapter is built
    from libai._runtime import matrix_route
    assert got["route"] == matrix_route()["active"]


def test_the_pth_file_is_the_hooks_line_and_setup_ships_both(tmp_path):
    import subprocess

    import libai_import_hook

    with open(os.path.join(REPO, "libai_import_hook.pth")) as f:
        assert f.read() == libai_import_hook.PTH_LINE
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(tmp_path)], cwd=REPO,
                   check=True, capture_output=True, timeout=120)
    assert (tmp_path / "libai_import_hook.pth").is_file() and (tmp_path / "libai_import_hook.py").is_file()
