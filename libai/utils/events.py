"""The metrics names users import, in one place: ``from libai.utils.events import ...``.

The event storage lives in :mod:`libai.utils.storage` and the writers that read it in
:mod:`libai.utils.writers` (which imports the storage, never the reverse); this module only
re-exports both, under the module path LiBai and detectron2 code uses.
"""
from libai.utils.storage import EventStorage, get_event_storage, has_event_storage, reset_event_storages
from libai.utils.writers import CommonMetricPrinter, EventWriter, JSONWriter, TensorboardXWriter

__all__ = [
    "EventStorage",
    "get_event_storage",
    "has_event_storage",
    "reset_event_storages",
    "EventWriter",
    "JSONWriter",
    "CommonMetricPrinter",
    "TensorboardXWriter",
]
