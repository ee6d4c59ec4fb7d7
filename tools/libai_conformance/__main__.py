"""Command line of the conformance runner (see the package docstring)."""
import argparse
import os
import sys
import tempfile

if __package__ in (None, ""):  # run as a script: make "tools.libai_conformance" importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    __package__ = "tools.libai_conformance"

from tools.libai_conformance import configs, projects  # noqa: E402
from tools.libai_conformance.common import REPO, run_case, table  # noqa: E402


def _load_project_hooks() -> None:
    """Project hooks may live in modules beside projects.py that register on import."""
    try:
        import tools.libai_conformance.project_cases  # noqa: F401
    except ModuleNotFoundError as error:
        if error.name != "tools.libai_conformance.project_cases":
            raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.libai_conformance",
                                     description=__doc__)
    parser.add_argument("--libai", required=True,
                        help="a LiBai checkout (outside this repository), e.g. /work/libai_ref/src")
    parser.add_argument("--mode", choices=("configs", "projects", "all"), default="configs")
    parser.add_argument("--only", nargs="*", default=None, help="run only these case names")
    parser.add_argument("--engine", choices=("libai", "upstream"), default="libai",
                        help="libai (this repository) or upstream LiBai through run_libai.py")
    parser.add_argument("--scratch", default=None, help="scratch folder (default: a new temp dir)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)

    src = os.path.abspath(args.libai)
    if not os.path.isdir(os.path.join(src, "configs")):
        parser.error(f"--libai {src} has no configs/ folder; give the root of a LiBai checkout")
    if os.path.commonpath([src, REPO]) == REPO:
        parser.error("--libai must point outside this repository (LiBai's files are never copied in)")
    scratch = os.path.abspath(args.scratch or tempfile.mkdtemp(prefix="libai-conformance-"))
    if os.path.commonpath([scratch, REPO]) == REPO:
        parser.error("--scratch must be outside this repository")

    cases = []
    if args.mode in ("configs", "all"):
        cases += configs.cases()
    if args.mode in ("projects", "all"):
        _load_project_hooks()
        cases += projects.cases()
    if args.only:
        unknown = set(args.only) - {c.name for c in cases}
        if unknown:
            parser.error(f"unknown case(s) {sorted(unknown)}; known: {[c.name for c in cases]}")
        cases = [c for c in cases if c.name in args.only]

    results = []
    for case in cases:
        result = run_case(case, src, scratch, args.engine, args.timeout)
        print(f"[{args.engine}] {case.name}: {result.status} | iterations {result.iterations} | "
              f"eval-only {result.eval_only} | {result.seconds:.0f} s | {result.log}", flush=True)
        results.append(result)
    print()
    print(table(results, markdown=args.markdown))
    return 0 if all(r.ok or r.status.startswith("skipped") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
