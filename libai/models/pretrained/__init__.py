"""Hugging Face checkpoints in and out of libai models.

- :func:`from_pretrained` / :class:`PretrainedMixin`: build a libai model from a Hugging Face
  directory (``config.json`` + safetensors, sharded safetensors, or ``pytorch_model.bin`` read
  without torch) and load its weights under any parallel layout;
- :func:`load_into`: load such a directory into a model already built (``train.load_weight``);
- :func:`save_pretrained`: write a libai model back in Hugging Face's format;
- :func:`read_state_dict`: the checkpoint's tensors as NumPy arrays.

One mapping per model family (:mod:`libai.models.pretrained.families`) serves all of them.
See docs/pretrained_weights.md.
"""
from libai.models.pretrained.api import (
    PretrainedMixin, build_args, export_state, from_pretrained, load_into, save_pretrained,
)
from libai.models.pretrained.convert import LoadReport, PretrainedLoadError
from libai.models.pretrained.files import is_hf_directory, read_config, read_state_dict

__all__ = [
    "LoadReport",
    "PretrainedLoadError",
    "PretrainedMixin",
    "build_args",
    "export_state",
    "from_pretrained",
    "is_hf_directory",
    "load_into",
    "read_config",
    "read_state_dict",
    "save_pretrained",
]
