"""A sample and its fields: :class:`DistTensorData` and :class:`Instance`.

A Dataset's ``__getitem__`` returns an :class:`Instance` whose field names equal the model's
``forward`` argument names. Each tensor field is a :class:`DistTensorData` that carries, besides
the tensor, where the batch must live once it is global: its SBP over the ``(data, tensor)``
parallel axes and the pipeline stage (``placement_idx``) whose layers consume it.

The collate function stacks Instances into one batch Instance (:meth:`Instance.stack`); the
trainer then calls :meth:`Instance.to_global` with the run's layout, the one place where local
batches become global tensors (in every run, one process included, as in LiBai: the model and
user code see ``.sbp`` and ``.placement`` of each field). LiBai's in-place
``DistTensorData.to_global()`` works too.
"""
from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Optional, Sequence

import oneflow as flow

__all__ = ["DistTensorData", "Instance"]


class DistTensorData:
    """One tensor field of a sample plus its distribution.

    Args:
        tensor: the local value (one sample, or a batch once stacked).
        sbp_list: nd-SBP over ``(data, tensor)`` parallel axes. The default splits the batch
            over data parallel ranks and broadcasts over tensor parallel ranks. Strings
            ``"split_0"``/``"broadcast"`` are accepted as well as ``flow.sbp`` values.
        placement_idx: the pipeline stage that consumes the field; ``0`` is the first stage
            (model inputs), ``-1`` the last (labels only the loss reads).
    """

    def __init__(
        self,
        tensor: flow.Tensor,
        sbp_list: Sequence[Any] = ("split_0", "broadcast"),
        placement_idx: int = 0,
    ) -> None:
        if not isinstance(tensor, flow.Tensor):
            raise TypeError(
                f"DistTensorData holds a oneflow.Tensor, got {type(tensor).__name__}; "
                "convert with flow.tensor(value)"
            )
        self.tensor = tensor
        self.sbp_list = list(sbp_list)
        self.placement_idx = int(placement_idx)

    @staticmethod
    def stack(items: Sequence["DistTensorData"]) -> "DistTensorData":
        """Stack samples along a new batch dimension; all must share sbp and placement."""
        first = items[0]
        for item in items[1:]:
            if item.placement_idx != first.placement_idx or _sbp_names(item.sbp_list) != _sbp_names(
                first.sbp_list
            ):
                raise ValueError(
                    "samples disagree on the distribution of one field: "
                    f"placement_idx {first.placement_idx} vs {item.placement_idx}, "
                    f"sbp {_sbp_names(first.sbp_list)} vs {_sbp_names(item.sbp_list)}"
                )
        shapes = {tuple(item.tensor.shape) for item in items}
        if len(shapes) > 1:
            raise ValueError(
                f"cannot stack samples of different shapes {sorted(shapes)}; pad them to one shape "
                "in the Dataset (or use a collate that pads)"
            )
        return DistTensorData(
            flow.stack([item.tensor for item in items], dim=0), first.sbp_list, first.placement_idx
        )

    def pin_memory(self) -> "DistTensorData":
        """Page-locked copy (what ``DataLoader(pin_memory=True)`` calls on CUDA runs)."""
        return DistTensorData(self.tensor.pin_memory(), self.sbp_list, self.placement_idx)

    def place(self, layout: Any) -> flow.Tensor:
        """This field as a global tensor under ``layout`` (see :meth:`ParallelLayout.to_global`);
        ``self`` is left as it is."""
        return layout.to_global(self.tensor, _parse_sbp(self.sbp_list), self.placement_idx)

    def to_global(
        self, sbp: Optional[Sequence[Any]] = None, placement: Optional[flow.placement] = None,
        device_type: Optional[str] = None,
    ) -> None:
        """LiBai's in-place conversion: ``self.tensor`` becomes a global tensor (and ``self.sbp``
        its nd-SBP), as LiBai code such as ``dtd = DistTensorData(t); dtd.to_global(); dtd.tensor``
        expects. Returns ``None``, as LiBai's does.

        ``sbp`` is a physical nd-SBP (default: :attr:`sbp_list` through
        :func:`libai.utils.distributed.get_nd_sbp`); ``placement`` a placement (default: stage
        ``placement_idx`` of the current layout, on ``device_type`` if given; LiBai's default
        ``"cuda"`` means the layout's device where there is no GPU). As in LiBai, the value is
        taken from the first stage's ranks and then moved to its own stage.
        """
        from libai.utils import distributed as dist

        self.sbp = list(sbp) if sbp is not None else dist.get_nd_sbp(_parse_sbp(self.sbp_list))
        if placement is not None:
            self.tensor = self.tensor.to_global(sbp=self.sbp, placement=placement)
            return
        self.tensor = self.tensor.to_global(sbp=self.sbp, placement=dist.get_layer_placement(0, device_type))
        if self.placement_idx != 0:
            self.tensor = self.tensor.to_global(
                placement=dist.get_layer_placement(self.placement_idx, device_type))

    def __repr__(self) -> str:
        return (
            f"DistTensorData(shape={tuple(self.tensor.shape)}, dtype={self.tensor.dtype}, "
            f"sbp={_sbp_names(self.sbp_list)}, placement_idx={self.placement_idx})"
        )


def _parse_sbp(sbp_list: Sequence[Any]) -> List[Any]:
    parsed = []
    for sbp in sbp_list:
        if isinstance(sbp, str):
            if sbp == "broadcast":
                parsed.append(flow.sbp.broadcast)
            elif sbp.startswith("split_"):
                parsed.append(flow.sbp.split(int(sbp[len("split_"):])))
            elif sbp == "partial_sum":
                parsed.append(flow.sbp.partial_sum)
            else:
                raise ValueError(
                    f"unknown sbp {sbp!r}; use 'broadcast', 'split_<dim>', 'partial_sum' or flow.sbp values"
                )
        else:
            parsed.append(sbp)
    return parsed


def _sbp_names(sbp_list: Sequence[Any]) -> List[str]:
    return [s if isinstance(s, str) else str(s) for s in sbp_list]


class Instance:
    """An ordered set of named fields: one sample, or a batch once stacked.

    Field names must equal the model's ``forward`` argument names; the trainer calls
    ``model(**instance.get_fields())`` after :meth:`to_global`.
    """

    def __init__(self, **fields: Any) -> None:
        object.__setattr__(self, "_fields", OrderedDict())
        for name, value in fields.items():
            self.set(name, value)

    # ------------------------------------------------------------------ field access
    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            self.set(name, value)

    def __getattr__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return fields[name]
        raise AttributeError(
            f"Instance has no field {name!r}; it has {list(fields)}"
        )

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._fields

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def set(self, name: str, value: Any) -> None:
        self._fields[name] = value

    def has(self, name: str) -> bool:
        return name in self._fields

    def get(self, name: str) -> Any:
        if name not in self._fields:
            raise KeyError(f"Instance has no field {name!r}; it has {list(self._fields)}")
        return self._fields[name]

    def remove(self, name: str) -> None:
        if name not in self._fields:
            raise KeyError(f"Instance has no field {name!r}; it has {list(self._fields)}")
        del self._fields[name]

    def get_fields(self) -> Dict[str, Any]:
        """The fields in insertion order (a new dict; mutate the Instance with ``set``)."""
        return OrderedDict(self._fields)

    # ------------------------------------------------------------------ batching
    @staticmethod
    def stack(instances: Sequence["Instance"]) -> "Instance":
        """Stack samples field by field: tensors along a new batch dim, others into lists."""
        if not instances:
            raise ValueError("Instance.stack needs at least one Instance")
        names = list(instances[0].get_fields())
        for i, inst in enumerate(instances[1:], start=1):
            if list(inst.get_fields()) != names:
                raise ValueError(
                    f"sample {i} has fields {list(inst.get_fields())}, sample 0 has {names}; "
                    "every sample of a dataset must return the same fields"
                )
        batch = Instance()
        for name in names:
            values = [inst.get(name) for inst in instances]
            first = values[0]
            if isinstance(first, DistTensorData):
                batch.set(name, DistTensorData.stack(values))
            elif isinstance(first, flow.Tensor):
                batch.set(name, flow.stack(values, dim=0))
            elif isinstance(first, Instance):
                batch.set(name, Instance.stack(values))
            else:
                batch.set(name, list(values))
        return batch

    def to_global(self, layout: Any) -> "Instance":
        """A new Instance whose DistTensorData fields are global tensors placed by ``layout``."""
        out = Instance()
        for name, value in self._fields.items():
            if isinstance(value, DistTensorData):
                out.set(name, value.place(layout))
            elif isinstance(value, Instance):
                out.set(name, value.to_global(layout))
            else:
                out.set(name, value)
        return out

    def pin_memory(self) -> "Instance":
        """Pin every tensor field (called by the DataLoader when ``pin_memory`` is on)."""
        out = Instance()
        for name, value in self._fields.items():
            out.set(name, value.pin_memory() if hasattr(value, "pin_memory") else value)
        return out

    def batch_size(self) -> Optional[int]:
        """Size of the first dimension of the first tensor field, if any."""
        for value in self._fields.values():
            tensor = value.tensor if isinstance(value, DistTensorData) else value
            if isinstance(tensor, flow.Tensor) and tensor.ndim > 0:
                return int(tensor.shape[0])
        return None

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"Instance({inner})"

    # pickling for DataLoader worker processes
    def __getstate__(self) -> Dict[str, Any]:
        return {"_fields": self._fields}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        object.__setattr__(self, "_fields", state["_fields"])
