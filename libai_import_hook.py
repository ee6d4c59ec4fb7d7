"""Make ``import oneflow`` import libai first, whatever order a script imports them in.

libai's process-wide choices (OpenBLAS kernels for this processor, the route of CPU matrix
products to a current OpenBLAS, OneFlow's scheduler thread, see ``libai/__init__.py``) must be
made before OneFlow loads: afterwards they are lost, and a CPU run is up to twice as slow. Every
OneFlow tutorial imports oneflow first. So libai installs ``libai_import_hook.pth`` into
site-packages (``pip install .`` ships it; ``tools/setup_env.sh`` writes it for the editable
install), whose one line imports this module at interpreter start-up. It only puts a finder in
front of ``sys.meta_path``, which costs nothing until an import of ``oneflow``: then, before
OneFlow is found, it imports ``libai`` (which does not import OneFlow) and steps aside.

This is a top-level module, not part of the ``libai`` package, so that start-up never runs
``libai/__init__.py``: a Python process that never imports OneFlow pays a few microseconds.
``LIBAI_IMPORT_HOOK=0`` turns it off.
"""
import os
import sys

ENV = "LIBAI_IMPORT_HOOK"


class LibaiBeforeOneFlow:
    """A ``sys.meta_path`` finder that finds nothing: on the first ``oneflow`` import it
    imports libai, removes itself, and lets the real finders find OneFlow."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] != "oneflow":
            return None
        uninstall()
        if "libai" not in sys.modules:
            try:
                import libai  # noqa: F401  (its import makes the choices)
            except Exception:  # a broken libai must not break OneFlow; `import libai` shows why
                pass
        return None


def install():
    """Put the finder first in ``sys.meta_path`` (once), unless turned off or too late."""
    if os.environ.get(ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return
    if "oneflow" in sys.modules or "libai" in sys.modules:
        return
    if not any(isinstance(f, LibaiBeforeOneFlow) for f in sys.meta_path):
        sys.meta_path.insert(0, LibaiBeforeOneFlow())


def uninstall():
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, LibaiBeforeOneFlow)]


# The line of libai_import_hook.pth: tolerant of a libai that was removed but left the file.
PTH_LINE = ("import os; exec('try: __import__(\"libai_import_hook\").install()\\n"
            "except ImportError: pass')\n")
