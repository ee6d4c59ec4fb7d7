"""Start one LiBai project run as a LiBai user would, from the root of a LiBai-style checkout.

    python project_entry.py --engine libai|upstream [--entry SCRIPT] --config-file CFG [args ...]

The current directory is the scratch copy (``projects/``, ``configs/`` and the tiny data), and it
comes first on ``sys.path``, as LiBai's ``tools/train_net.py`` (``sys.path.append(".")``) and a
project's own ``train_net.py`` expect: ``from projects.QQP... import ...`` must find the copy.

With ``--engine libai`` this repository's ``libai`` is imported first, then the repository
folder leaves ``sys.path`` (an editable install puts it there, and it has a ``projects``
package of its own that would hide LiBai's). Without ``--entry`` the run is libai's
``tools/train_net.py``; with it, the project's own script (e.g. ``projects/MAE/train_net.py``)
runs unchanged. With ``--engine upstream`` the same happens with upstream LiBai after the CPU
shims of ``run_libai.py`` (``LIBAI_REF``/``LIBAI_REF_RUNNER`` in the environment).

Environment: ``LIBAI_PROJECT_DEPS`` (a folder of the project's own requirements, put first on
``sys.path`` before anything is imported) and ``LIBAI_PROJECT_PATH`` (a project folder its
imports are relative to, as MAE's ``configs.models``).
"""
import importlib
import os
import runpy
import sys


def _split_argv(argv):
    engine, entry, rest = "libai", None, []
    i = 0
    while i < len(argv):
        if argv[i] == "--engine":
            engine, i = argv[i + 1], i + 2
        elif argv[i] == "--entry":
            entry, i = argv[i + 1], i + 2
        else:
            rest.append(argv[i])
            i += 1
    if engine not in ("libai", "upstream"):
        raise SystemExit(f"--engine must be libai or upstream, got {engine!r}")
    return engine, entry, rest


def _forget(prefixes):
    for name in [m for m in sys.modules if m.split(".")[0] in prefixes]:
        del sys.modules[name]


def main() -> None:
    engine, entry, rest = _split_argv(sys.argv[1:])
    deps = os.environ.get("LIBAI_PROJECT_DEPS")
    if deps:  # a project's own requirements (numpy 1.23 for MAE's np.float): before any import
        sys.path.insert(0, os.path.abspath(deps))
    cwd = os.getcwd()
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    if engine == "libai":
        if repo not in sys.path:
            sys.path.append(repo)
        import libai  # noqa: F401  (loads OneFlow's libraries; later imports go through libai.__path__)
        import libai.engine.cli as cli

        drop = {repo, here, os.path.dirname(here)}
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or cwd) not in drop]
        _forget({"projects", "configs", "tools"})
        run_default = cli.launch_main
    else:
        runner = os.environ.get("LIBAI_REF_RUNNER") or os.path.join(
            os.path.dirname(repo), "shared", "libai_reference", "run_libai.py"
        )
        sys.path.insert(0, os.path.dirname(runner))
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or cwd) != here]
        # LiBai's CPU shims: a script of the team's shared folder, not a package we depend on
        importlib.import_module(os.path.splitext(os.path.basename(runner))[0])

        _forget({"projects", "configs", "tools"})
        run_default = None
    sys.path.insert(0, cwd)
    extra = os.environ.get("LIBAI_PROJECT_PATH")
    if extra:  # a project whose imports are relative to its own folder (MAE's `configs.models`)
        sys.path.insert(0, os.path.abspath(extra))
    if entry is None:
        if run_default is None:
            script = os.path.join(os.environ["LIBAI_REF"], "src", "tools", "train_net.py")
            sys.argv = [script, *rest]
            runpy.run_path(script, run_name="__main__")
        else:
            sys.argv = [os.path.join(repo, "tools", "train_net.py"), *rest]
            run_default()
        return
    script = os.path.abspath(entry)
    sys.path.insert(0, os.path.dirname(script))  # as `python projects/X/train_net.py` would
    sys.argv = [script, *rest]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
