"""``train.load_weight``: where model weights come from, whatever format they are in.

libai's own checkpoints, checkpoints written by upstream LiBai's ``Checkpointer`` (or their
``model`` part) and plain ``flow.save`` state dicts are read by
:meth:`~libai.utils.checkpoint.Checkpointer.load_weights_only`.
Other formats (a Hugging Face model directory, ...) need knowledge of the model family, which
lives with the models. Those packages register a reader here when they are imported, so the
engine can load any supported format without importing the models (the layering rule), and a
model built from a libai class always finds its family's reader registered.
"""
import logging
from dataclasses import dataclass
from typing import Any, Callable, List

__all__ = ["WeightReader", "load_weight", "register_weight_reader", "registered_weight_readers"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WeightReader:
    """A weight format: ``claims(path)`` says whether ``path`` is in it, ``load(model, path)``
    loads it into a built model (under the active parallel layout)."""

    name: str
    claims: Callable[[str], bool]
    load: Callable[[Any, str], Any]


_READERS: List[WeightReader] = []


def register_weight_reader(name: str, claims: Callable[[str], bool], load: Callable[[Any, str], Any]) -> None:
    """Add (or replace, by ``name``) a reader consulted before libai's own checkpoint format."""
    _READERS[:] = [r for r in _READERS if r.name != name]
    _READERS.append(WeightReader(name, claims, load))


def registered_weight_readers() -> List[str]:
    """The names of the registered formats, in the order they are tried."""
    return [r.name for r in _READERS]


def load_weight(model: Any, path: str, checkpointer: Any) -> None:
    """Load the weights at ``path`` into ``model``: through the first registered reader that
    claims ``path``, else as a OneFlow checkpoint, libai's or LiBai's
    (``checkpointer.load_weights_only``)."""
    for reader in _READERS:
        if reader.claims(path):
            logger.info(f"Loading {path} as a {reader.name}")
            reader.load(model, path)
            return
    checkpointer.load_weights_only(path)
