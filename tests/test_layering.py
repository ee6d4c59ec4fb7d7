"""The package layering is a checked rule: import-linter runs the contracts of ``.importlinter``
on libai, and a fake libai with one forbidden import shows that the contracts catch it and name
the offending import. Imports only the linter (no OneFlow), except the GraphBase test."""
import os
import subprocess
import sys
import textwrap

from importlinter.api import read_configuration

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, ".importlinter")
PACKAGES = ("engine", "plan", "evaluation", "data", "optim", "scheduler", "tokenizer", "models", "layers",
            "config", "utils", "_runtime")


def lint(root: str) -> str:
    """Run ``lint-imports`` with our contracts on the ``libai`` found under ``root``;
    returns the output when a contract is broken, "" when all are kept."""
    env = dict(os.environ, PYTHONPATH=root)
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "lint-imports"), "--config", CONFIG, "--no-cache"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )
    return "" if proc.returncode == 0 else proc.stdout + proc.stderr


def test_libai_keeps_its_layering():
    """The real package: every contract kept. On failure the message names the import."""
    output = lint(ROOT)
    assert output == "", output


def test_the_contracts_cover_the_rules_of_the_architecture():
    """Read through import-linter's public API: the layers, top to bottom, and the two
    forbidden contracts (the engine never imports models; models import only config, layers,
    utils)."""
    contracts = {c["name"]: c for c in read_configuration(CONFIG)["contracts_options"]}
    layers = next(c for c in contracts.values() if c["type"] == "layers")
    assert layers["layers"] == ["(inference)", "engine", "plan",
                                "evaluation : data : optim : scheduler : tokenizer : models",
                                "layers", "config : utils"]
    assert layers["ignore_imports"] == ["libai.models.utils -> libai.engine.graph"]
    forbidden = {c["name"]: (c["source_modules"], c["forbidden_modules"])
                 for c in contracts.values() if c["type"] == "forbidden"}
    assert (["libai.engine"], ["libai.models"]) in forbidden.values()
    assert any(sources == ["libai.models", "libai.layers"] and "libai.engine" in banned and "libai.data" in banned
               for sources, banned in forbidden.values())


def _fake_libai(root, extra_files):
    """A libai with every layer as an empty package, the one sanctioned upward import, and
    ``extra_files`` ({relative path: source})."""
    pkg = os.path.join(root, "libai")
    for name in PACKAGES:
        os.makedirs(os.path.join(pkg, name), exist_ok=True)
        open(os.path.join(pkg, name, "__init__.py"), "w").close()
    files = {
        "__init__.py": "",
        "engine/graph.py": "GraphBase = object\n",
        "models/utils/__init__.py": ("def __getattr__(name):\n"
                                     "    from libai.engine.graph import GraphBase\n"
                                     "    return GraphBase\n"),
        "models/pretrained/__init__.py": "import libai.models.pretrained.families\n",
        "models/pretrained/registry.py": "",
        "models/pretrained/mapping.py": "import libai.models.pretrained.registry\n",
        "models/pretrained/families.py": ("import libai.models.pretrained.mapping\n"
                                          "import libai.models.pretrained.registry\n"),
    }
    files.update(extra_files)
    for rel, source in files.items():
        path = os.path.join(pkg, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(source))


def test_a_fake_libai_that_follows_the_rules_passes(tmp_path):
    _fake_libai(str(tmp_path), {"engine/loop.py": "import libai.data\nimport libai.utils\n"})
    assert lint(str(tmp_path)) == ""


def test_a_lazy_import_of_the_engine_from_utils_is_caught_and_named(tmp_path):
    _fake_libai(str(tmp_path), {"utils/helper.py": "def f():\n    from libai.engine import graph\n"})
    output = lint(str(tmp_path))
    assert "libai.utils is not allowed to import libai.engine" in output
    assert "libai.utils.helper -> libai.engine.graph (l.2)" in output


def test_the_engine_importing_a_model_is_caught(tmp_path):
    _fake_libai(str(tmp_path), {"models/bert.py": "", "engine/weights.py": "from libai.models import bert\n"})
    output = lint(str(tmp_path))
    assert "the engine never imports the models" in output and "BROKEN" in output
    assert "libai.engine.weights -> libai.models.bert" in output


def test_a_model_importing_the_data_package_is_caught(tmp_path):
    _fake_libai(str(tmp_path), {"data/structures.py": "", "models/vit.py": "import libai.data.structures\n"})
    output = lint(str(tmp_path))
    assert "libai.models.vit -> libai.data.structures" in output


def test_a_new_unplaced_package_and_an_import_cycle_are_caught(tmp_path):
    _fake_libai(str(tmp_path), {"serving/__init__.py": "",
                                "utils/storage.py": "def f():\n    import libai.utils.writers\n",
                                "utils/writers.py": "import libai.utils.storage\n"})
    output = lint(str(tmp_path))
    assert "libai.serving" in output  # exhaustive: every subpackage has a layer
    assert "No cycles are allowed in libai.utils" in output


def test_a_family_registry_that_imports_its_families_back_is_caught(tmp_path):
    """The registration circle this package once had: a lookup that loads the families, which
    import the lookup's module to register. The acyclic contract names it (no ignore exists)."""
    _fake_libai(str(tmp_path), {"models/pretrained/registry.py": (
        "def lookup():\n    import libai.models.pretrained.families\n")})
    output = lint(str(tmp_path))
    assert "No cycles are allowed in libai.models.pretrained" in output
    assert ".registry -> .families" in output


def test_graphbase_keeps_its_libai_name_without_models_loading_the_engine():
    code = ("import sys, libai, libai.models\n"
            "assert 'libai.engine' not in sys.modules, 'importing libai.models loaded the engine'\n"
            "from libai.models.utils import GraphBase\n"
            "from libai.engine.graph import GraphBase as Home\n"
            "assert GraphBase is Home\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr[-3000:]
