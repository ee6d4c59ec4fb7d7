"""Package names that load their module on first use (PEP 562 module ``__getattr__``).

A package ``__init__`` that re-exports from heavy modules makes every import of any of its
submodules pay for all of them: ``tools/preprocess_data.py`` needs ``libai.data.data_utils``'s
indexed-dataset writer, nothing of OneFlow, yet ``import libai.data`` used to load OneFlow (about
1.5 CPU-seconds) through the loader builders. With :func:`lazy_exports` the package lists its
names and their modules, ``from libai.data import build_nlp_train_loader`` works as before, and
only the module that defines the name is imported.
"""
import importlib
import importlib.util
from typing import Any, Callable, Dict, List, Sequence, Tuple


def lazy_exports(package: str, modules: Dict[str, Sequence[str]]
                 ) -> Tuple[List[str], Callable[[str], Any], Callable[[], List[str]]]:
    """``(__all__, __getattr__, __dir__)`` for ``package``: ``modules`` maps each module to the
    public names it defines. A name is imported once, then kept in the package's namespace.
    A submodule is an attribute too, as when the package imported it eagerly
    (``import libai.data; libai.data.build``)."""

    exports = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        if name not in exports:
            if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> List[str]:
        return sorted(set(vars(importlib.import_module(package))) | set(exports))

    return sorted(exports), __getattr__, __dir__
