"""Hugging Face checkpoint directories on disk: find, read and write their files.

A directory holds ``config.json`` and the weights in one of three forms, looked for in this
order: ``model.safetensors``; shards listed by ``model.safetensors.index.json``;
``pytorch_model.bin`` (or its shards listed by ``pytorch_model.bin.index.json``), read
without torch by :mod:`libai.models.pretrained.torch_pickle`. Everything comes back as NumPy
arrays by Hugging Face name; nothing here knows a model.
"""
import json
import os
from typing import Any, Dict, List, Mapping

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from libai.models.pretrained.torch_pickle import bf16_to_float32, read_torch_bin

__all__ = [
    "CONFIG_NAME",
    "SAFE_WEIGHTS_NAME",
    "is_hf_directory",
    "read_config",
    "read_state_dict",
    "weight_files",
    "write_checkpoint",
]

CONFIG_NAME = "config.json"
SAFE_WEIGHTS_NAME = "model.safetensors"
SAFE_INDEX_NAME = "model.safetensors.index.json"
BIN_WEIGHTS_NAME = "pytorch_model.bin"
BIN_INDEX_NAME = "pytorch_model.bin.index.json"


def is_hf_directory(path: str) -> bool:
    """Whether ``path`` looks like a Hugging Face model directory (config + weights)."""
    return (
        os.path.isdir(path)
        and os.path.isfile(os.path.join(path, CONFIG_NAME))
        and any(os.path.isfile(os.path.join(path, n)) for n in
                (SAFE_WEIGHTS_NAME, SAFE_INDEX_NAME, BIN_WEIGHTS_NAME, BIN_INDEX_NAME))
    )


def read_config(path: str) -> Dict[str, Any]:
    """``config.json`` of the directory ``path`` as a dict."""
    file = os.path.join(path, CONFIG_NAME)
    if not os.path.isfile(file):
        raise FileNotFoundError(
            f"{path} has no {CONFIG_NAME}: a Hugging Face model directory needs it (the model's "
            "sizes come from it). Save the model with save_pretrained() to get one."
        )
    with open(file, encoding="utf-8") as f:
        return json.load(f)


def weight_files(path: str) -> List[str]:
    """The weight files of ``path``, in the order they should be read."""
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path} is not a directory holding a Hugging Face checkpoint")
    for single, index in ((SAFE_WEIGHTS_NAME, SAFE_INDEX_NAME), (BIN_WEIGHTS_NAME, BIN_INDEX_NAME)):
        if os.path.isfile(os.path.join(path, single)):
            return [os.path.join(path, single)]
        if os.path.isfile(os.path.join(path, index)):
            with open(os.path.join(path, index), encoding="utf-8") as f:
                shards = sorted(set(json.load(f)["weight_map"].values()))
            missing = [s for s in shards if not os.path.isfile(os.path.join(path, s))]
            if missing:
                raise FileNotFoundError(f"{index} in {path} lists shards that are absent: {missing}")
            return [os.path.join(path, s) for s in shards]
    raise FileNotFoundError(
        f"{path} holds no weights: expected {SAFE_WEIGHTS_NAME}, {SAFE_INDEX_NAME}, "
        f"{BIN_WEIGHTS_NAME} or {BIN_INDEX_NAME}"
    )


def read_state_dict(path: str) -> Dict[str, np.ndarray]:
    """Every tensor of the checkpoint directory ``path`` by its Hugging Face name."""
    state: Dict[str, np.ndarray] = {}
    for file in weight_files(path):
        part = _read_safetensors(file) if file.endswith(".safetensors") else read_torch_bin(file)
        twice = sorted(set(part) & set(state))
        if twice:
            raise ValueError(f"tensors {twice[:5]} appear in more than one shard of {path}")
        state.update(part)
    return state


def _read_safetensors(file: str) -> Dict[str, np.ndarray]:
    with open(file, "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    if any(isinstance(v, dict) and v.get("dtype") == "BF16" for v in header.values()):
        return _read_safetensors_raw(file, header)
    out: Dict[str, np.ndarray] = {}
    with safe_open(file, framework="np") as f:
        for name in f.keys():
            out[name] = f.get_tensor(name)
    return out


_RAW_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4",
               "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?", "BF16": "<u2"}


def _read_safetensors_raw(file: str, header: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """The safetensors layout read directly: the NumPy API has no bfloat16 (widened to f32)."""
    data = np.memmap(file, dtype=np.uint8, mode="r")
    start = 8 + int.from_bytes(bytes(data[:8]), "little")
    out: Dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[start + begin:start + end].tobytes(), dtype=_RAW_DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":
            array = bf16_to_float32(array)
        out[name] = array.reshape(info["shape"])
    return out


def write_checkpoint(path: str, state: Mapping[str, np.ndarray], config: Mapping[str, Any]) -> None:
    """Write ``model.safetensors`` and ``config.json`` into the directory ``path``."""
    os.makedirs(path, exist_ok=True)
    arrays = {k: np.ascontiguousarray(v) for k, v in state.items()}
    save_file(arrays, os.path.join(path, SAFE_WEIGHTS_NAME), metadata={"format": "pt"})
    with open(os.path.join(path, CONFIG_NAME), "w", encoding="utf-8") as f:
        json.dump(dict(config), f, indent=2, sort_keys=True)
        f.write("\n")
