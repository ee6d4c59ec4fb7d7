"""``libai.data``, ``libai.data.data_utils`` and ``libai.data.datasets`` hand out their names on
first use (libai.utils.lazy_exports): the imports of the preprocessing and MNIST-making tools
do not load OneFlow, and every public name still resolves, to the object its defining module
holds."""
import ast
import importlib
import subprocess
import sys

import pytest

PACKAGES = ["libai.data", "libai.data.data_utils", "libai.data.datasets"]


def test_the_tools_data_imports_do_not_load_oneflow():
    code = ("import sys; import libai.data, libai.data.data_utils.preprocess, libai.data.data_utils, "
            "libai.data.datasets, libai.data.datasets.mnist_files; "
            "print(sorted(m for m in sys.modules if m == 'oneflow' or m.startswith('oneflow.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves_to_its_module_object(package):
    module = importlib.import_module(package)
    exports = {name: source for source, names in module._MODULES.items() for name in names}
    assert module.__all__ == sorted(exports)
    for name, source in exports.items():
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(source), name), name
        assert name in dir(module)
    namespace = {}
    exec(f"from {package} import *", namespace)
    assert set(exports) <= set(namespace)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_type_checkers_imports_list_exactly_the_lazy_table(package):
    """The ``if TYPE_CHECKING:`` imports (written out for type checkers and IDEs, which cannot
    read the table) name the same modules and names as ``_MODULES``, so the two cannot drift."""
    module = importlib.import_module(package)
    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    (block,) = [node for node in tree.body if isinstance(node, ast.If)
                and getattr(node.test, "id", None) == "TYPE_CHECKING"]
    written = {}
    for statement in block.body:
        written.setdefault(statement.module, []).extend(alias.name for alias in statement.names)
    assert {source: sorted(names) for source, names in written.items()} == \
        {source: sorted(names) for source, names in module._MODULES.items()}


def test_submodules_are_attributes_as_when_imported_eagerly():
    code = ("import libai.data; print(libai.data.build.__name__, "
            "libai.data.datasets.cifar.CIFAR10Dataset is libai.data.datasets.CIFAR10Dataset)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["libai.data.build", "True"]


def test_an_unknown_name_is_an_attribute_error_naming_it():
    import libai.data

    with pytest.raises(AttributeError, match="module 'libai.data' has no attribute 'build_loader'"):
        libai.data.build_loader
