"""setup.py and requirements.txt declare what libai/ and tools/ import, and point at files
that exist. Static (reads the sources with ``ast``; imports and installs nothing), so fast.

The rules, for every third-party module imported in libai/ or tools/:
- declared in setup.py (``install_requires`` or an extra), so ``pip install libai[...]`` can
  provide it;
- imported at module level in libai/ (loaded by ``import libai.<module>``): a hard dependency,
  in ``install_requires``;
- unless it is optional (imported inside ``try`` with an ``except ImportError``/``Exception``
  that explains what to install): in requirements.txt, the verified set the set-up installs.
And every hard dependency of setup.py is in the verified set too.
(The install itself, ``pip install .`` into a fresh virtualenv after ``pip install -r
requirements.txt``, downloads about 1 GB, so it is checked by hand, not here.)
"""
import ast
import os
import re
import sys
from typing import Dict, List, Set, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("libai", "tools")
# import name -> distribution name, where they differ
DISTRIBUTION_OF = {"hydra": "hydra-core", "PIL": "pillow", "sklearn": "scikit-learn", "yaml": "pyyaml", "cv2": "opencv-python-headless"}
_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _normalize(re.split(r"[<>=!~;\[ ]", spec.strip(), maxsplit=1)[0])


def _is_first_party(module: str) -> bool:
    return any(os.path.exists(os.path.join(ROOT, where, module + ext))
               for where in ("", "tools") for ext in ("", ".py"))


def _guarded(handlers: List[ast.ExceptHandler]) -> bool:
    names = set()
    for h in handlers:
        types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        names |= {t.id for t in types if isinstance(t, ast.Name)}
    return bool(names & _GUARDS)


def third_party_imports() -> Dict[str, Set[Tuple[str, str]]]:
    """``{distribution: {(file, kind)}}`` with kind ``"module"`` (module-level import),
    ``"lazy"`` (inside a function or branch) or ``"optional"`` (inside a guarded ``try``)."""
    found: Dict[str, Set[Tuple[str, str]]] = {}

    def visit(node: ast.AST, path: str, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = kind
            if isinstance(node, ast.Try) and child in node.body and _guarded(node.handlers):
                inner = "optional"
            elif kind == "module" and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If,
                                                         ast.Try, ast.ClassDef, ast.With)):
                inner = "lazy"
            names = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or _is_first_party(top):
                    continue
                found.setdefault(_normalize(DISTRIBUTION_OF.get(top, top)), set()).add((path, inner))
            visit(child, path, inner)

    for source in SOURCES:
        for folder, _, files in os.walk(os.path.join(ROOT, source)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    with open(path) as f:
                        visit(ast.parse(f.read(), path), os.path.relpath(path, ROOT), "module")
    return found


def setup_declarations() -> Tuple[Set[str], Dict[str, Set[str]]]:
    """``install_requires`` and ``extras_require`` of setup.py, read from its source."""
    with open(os.path.join(ROOT, "setup.py")) as f:
        tree = ast.parse(f.read())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords
                if k.arg in ("install_requires", "extras_require")}
    return ({_requirement_name(r) for r in keywords["install_requires"]},
            {extra: {_requirement_name(r) for r in reqs} for extra, reqs in keywords["extras_require"].items()})


def requirements_txt() -> Set[str]:
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        return {_requirement_name(line) for line in f if line.strip() and not line.lstrip().startswith("#")}


def test_every_imported_package_is_declared():
    imports = third_party_imports()
    hard, extras = setup_declarations()
    in_setup = hard.union(*extras.values())
    pinned = requirements_txt()
    assert {"oneflow", "numpy", "omegaconf", "flowvision"} <= set(imports), "the scan found too little"
    problems = []
    for dist, where in sorted(imports.items()):
        kinds = {kind for _, kind in where}
        files = sorted({path for path, _ in where})[:3]
        if dist not in in_setup:
            problems.append(f"{dist} (imported in {files}) is declared nowhere in setup.py")
        if any(kind == "module" and path.startswith("libai") for path, kind in where) and dist not in hard:
            problems.append(f"{dist} is imported at module level in {files}: add it to install_requires")
        if kinds != {"optional"} and dist not in pinned:
            problems.append(f"{dist} (imported in {files}) is missing from requirements.txt")
    assert not problems, "\n".join(problems)


def test_every_hard_dependency_is_in_the_verified_set():
    hard, _ = setup_declarations()
    assert hard <= requirements_txt(), f"in install_requires but not requirements.txt: {sorted(hard - requirements_txt())}"


def test_files_named_in_the_packaging_files_exist():
    named = []
    for name in ("requirements.txt", "setup.py"):
        with open(os.path.join(ROOT, name)) as f:
            # references for the reader: documentation pages and scripts (libai/config/configs in
            # setup.py is a build output, not a reference)
            named += re.findall(r"\b((?:docs|tools)/[\w./-]*\w|[\w./-]+\.md)\b", f.read())
    assert "tools/setup_env.sh" in named or "docs/getting_started.md" in named, named
    missing = [path for path in named if not os.path.exists(os.path.join(ROOT, path))]
    assert not missing, f"setup.py / requirements.txt name files that do not exist: {missing}"


def test_the_scan_classifies_imports(tmp_path, monkeypatch):
    """The rules above rest on this classification: check it on a small tree."""
    pkg = tmp_path / "libai"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "import os\nimport numpy as np\nfrom PIL import Image\n"
        "def f():\n    import matplotlib.pyplot\n"
        "try:\n    import pynvml\nexcept ImportError:\n    pynvml = None\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    monkeypatch.setattr(sys.modules[__name__], "SOURCES", ("libai",))
    assert third_party_imports() == {
        "numpy": {("libai/m.py", "module")}, "pillow": {("libai/m.py", "module")},
        "matplotlib": {("libai/m.py", "lazy")}, "pynvml": {("libai/m.py", "optional")}}
