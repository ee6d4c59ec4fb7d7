"""Read a PyTorch ``pytorch_model.bin`` into NumPy arrays without importing torch.

Since torch 1.6, ``torch.save`` writes a zip archive: ``<name>/data.pkl`` is a pickle of the
state dict whose tensors refer, through pickle *persistent ids*, to raw storages stored as
``<name>/data/<key>`` members. Unpickling needs only three things from torch: the storage
classes (which name the dtype), ``torch._utils._rebuild_tensor_v2`` (a view of a storage with
an offset, size and stride) and ``_rebuild_parameter``. :class:`_StateDictUnpickler` maps
exactly those onto NumPy and refuses every other global, so a checkpoint cannot run code on
load (the reason torch itself now defaults to ``weights_only=True``).

The older, non-zip format (torch < 1.6) is not read: re-save such a file with a recent torch
(``torch.save(torch.load(f), f)``) or convert it to safetensors.
"""
import collections
import pickle
import zipfile
from typing import Any, Callable, Dict, Tuple

import numpy as np

__all__ = ["read_torch_bin", "TorchPickleError"]

# torch storage class name -> NumPy dtype ("bfloat16" is widened to float32, see _bf16)
_STORAGE_DTYPES: Dict[str, Any] = {
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16",
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class TorchPickleError(ValueError):
    """The file is not a state dict that can be read without torch."""


def bf16_to_float32(raw: np.ndarray) -> np.ndarray:
    """bfloat16 bits (``uint16``) -> float32: bfloat16 is the top half of a float32."""
    return (raw.astype(np.uint32) << 16).view(np.float32)


class _Storage:
    """A storage named by a persistent id: its dtype and the archive member holding its bytes."""

    def __init__(self, dtype: Any, key: str, archive: zipfile.ZipFile, prefix: str) -> None:
        self.dtype, self.key = dtype, key
        raw = archive.read(f"{prefix}data/{key}")
        if dtype == "bfloat16":
            self.array = bf16_to_float32(np.frombuffer(raw, dtype="<u2"))
        else:
            self.array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"))


def _rebuild_tensor(storage: _Storage, offset: int, size: Tuple[int, ...], stride: Tuple[int, ...],
                    *_ignored: Any) -> np.ndarray:
    """``torch._utils._rebuild_tensor_v2``: a strided view of ``storage`` copied into an array."""
    flat = storage.array
    if not size:
        return np.array(flat[offset])
    itemsize = flat.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=tuple(size), strides=tuple(s * itemsize for s in stride)
    )
    return np.array(view)  # own the memory; native byte order


def _rebuild_parameter(data: np.ndarray, *_ignored: Any) -> np.ndarray:
    return data


class _StateDictUnpickler(pickle.Unpickler):
    def __init__(self, file: Any, archive: zipfile.ZipFile, prefix: str) -> None:
        super().__init__(file)
        self._archive, self._prefix = archive, prefix
        self._storages: Dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        allowed: Dict[Tuple[str, str], Callable] = {
            ("collections", "OrderedDict"): collections.OrderedDict,
            ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
            ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        }
        if (module, name) in allowed:
            return allowed[(module, name)]
        if module == "torch" and name in _STORAGE_DTYPES:
            return _STORAGE_DTYPES[name]
        raise TorchPickleError(
            f"the checkpoint's pickle refers to {module}.{name}, which is not part of a plain "
            "state dict of tensors; libai reads .bin files without torch and refuses anything "
            "else. Convert it with torch: "
            "safetensors.torch.save_file(torch.load(path), 'model.safetensors')"
        )

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"):
            raise TorchPickleError(f"unsupported persistent id in the checkpoint: {pid!r}")
        dtype, key = pid[1], str(pid[2])
        if key not in self._storages:
            self._storages[key] = _Storage(dtype, key, self._archive, self._prefix)
        return self._storages[key]


def read_torch_bin(path: str) -> Dict[str, np.ndarray]:
    """The tensors of a zip-format ``torch.save`` state dict, by name, as NumPy arrays.

    bfloat16 tensors come back as float32 (NumPy has no bfloat16). Raises
    :class:`TorchPickleError` for the legacy non-zip format and for pickles holding anything
    but tensors in (ordered) dicts.
    """
    if not zipfile.is_zipfile(path):
        raise TorchPickleError(
            f"{path} is not a zip archive: it is the legacy torch.save format (torch < 1.6), "
            "which cannot be read without torch. Re-save it with torch >= 1.6 "
            "(torch.save(torch.load(p), p)) or convert it to model.safetensors"
        )
    with zipfile.ZipFile(path) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("data.pkl")]
        if len(pickles) != 1:
            raise TorchPickleError(f"{path} has {len(pickles)} data.pkl members, expected one")
        prefix = pickles[0][: -len("data.pkl")]
        with archive.open(pickles[0]) as f:
            state = _StateDictUnpickler(f, archive, prefix).load()
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise TorchPickleError(f"{path} holds a {type(state).__name__}, not a state dict")
    bad = [k for k, v in state.items() if not isinstance(v, np.ndarray)]
    if bad:
        raise TorchPickleError(f"{path}: entries {bad[:5]} are not tensors")
    return dict(state)
