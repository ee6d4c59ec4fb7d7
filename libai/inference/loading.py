"""Where a pipeline's model and tokenizer come from: a libai training directory, a Hugging Face
directory, or a config file.

- A libai training ``output_dir`` holds ``config.yaml`` (the resolved config) and checkpoints;
  the model is ``instantiate(cfg.model)`` under the chosen layout and its weights come from
  ``model_final`` (else the checkpoint named in ``last_checkpoint``). The tokenizer is the
  config's ``tokenization.tokenizer``, when it has one.
- A Hugging Face directory holds ``config.json`` and weights; the libai class is chosen by the
  pipeline from ``config.json``'s ``architectures`` and built with ``from_pretrained``. The
  tokenizer comes from the tokenizer files in the same directory, when present
  (:class:`~libai.tokenizer.AutoTokenizer`: ``tokenizer.json``, ``tokenizer.model``,
  ``vocab.txt``: BERT; ``vocab.json`` + ``merges.txt``: GPT-2 / RoBERTa; ``spiece.model``: T5).
- A config file (``.py`` / ``.yaml``) with ``model_path`` pointing at weights of either kind.
"""
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional

from oneflow import nn

import libai.models as models
from libai.config import LazyConfig, instantiate, try_get_key
from libai.tokenizer import AutoTokenizer, BaseTokenizer, build_tokenizer
from libai.tokenizer.auto import has_tokenizer_files
from libai.utils.checkpoint import Checkpointer
from libai.utils.checkpoint_files import read_last_checkpoint
from libai.utils.distributed import ParallelLayout

__all__ = ["ModelSource", "resolve_source", "build_layout", "load_model", "load_tokenizer"]

MODES = ("libai", "huggingface", "random")


@dataclass
class ModelSource:
    """What to build and from which files (see :func:`resolve_source`)."""

    mode: str
    cfg: Any = None  # the libai config (None for a bare Hugging Face directory)
    weights: Optional[str] = None  # checkpoint / HF directory (None in "random" mode)
    hf_config: Dict[str, Any] = field(default_factory=dict)


def _is_hf_dir(path: Optional[str]) -> bool:
    return bool(path) and os.path.isfile(os.path.join(path, "config.json"))


def _final_checkpoint(output_dir: str) -> str:
    final = os.path.join(output_dir, "model_final")
    if os.path.isdir(final):
        return final
    last = read_last_checkpoint(output_dir)
    if last:
        return os.path.join(output_dir, last)
    raise FileNotFoundError(
        f"{output_dir} has config.yaml but no model_final/ and no last_checkpoint: train first, "
        "or pass model_path= pointing at a checkpoint directory"
    )


def resolve_source(config_file: Optional[str], model_path: Optional[str], mode: Optional[str]) -> ModelSource:
    """Decide the mode and the files from the pipeline's ``config_file`` / ``model_path``."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode={mode!r}; use one of {MODES}")
    cfg, weights = None, model_path
    if config_file is None and _is_hf_dir(model_path):
        config_file = model_path
    if config_file is None:
        raise ValueError("a pipeline needs config_file (a libai output_dir, a Hugging Face "
                         "directory or a config file) or model_path (a Hugging Face directory)")
    if os.path.isdir(config_file):
        if os.path.isfile(os.path.join(config_file, "config.yaml")):
            cfg = LazyConfig.load(os.path.join(config_file, "config.yaml"))
            if weights is None and mode != "random":
                weights = _final_checkpoint(config_file)
        elif _is_hf_dir(config_file):
            weights = weights or config_file
            mode = mode or "huggingface"
        else:
            raise FileNotFoundError(
                f"{config_file} holds neither config.yaml (a libai training output_dir) nor "
                "config.json (a Hugging Face model directory)"
            )
    elif os.path.isfile(config_file):
        cfg = LazyConfig.load(config_file)
    else:
        raise FileNotFoundError(f"config_file {config_file!r} does not exist")
    if mode is None:
        mode = "huggingface" if _is_hf_dir(weights) else ("libai" if weights else "random")
    if mode != "random" and weights is None:
        raise ValueError(f"mode={mode!r} needs model_path= (the weights to load)")
    hf_config: Dict[str, Any] = {}
    if mode == "huggingface":
        if not _is_hf_dir(weights):
            raise FileNotFoundError(f"mode='huggingface' but {weights} has no config.json")
        with open(os.path.join(weights, "config.json")) as f:
            hf_config = json.load(f)
    return ModelSource(mode=mode, cfg=cfg, weights=weights, hf_config=hf_config)


def _layer_count(source: ModelSource) -> Optional[int]:
    """Blocks of the model, for an even pipeline split when the caller gives none."""
    hf = source.hf_config
    for key in ("n_layer", "num_hidden_layers"):
        if key in hf:
            return int(hf[key])
    if "num_layers" in hf:
        return int(hf["num_layers"]) + int(hf.get("num_decoder_layers") or hf["num_layers"])
    if source.cfg is not None:
        given = try_get_key(source.cfg, "train.dist.pipeline_num_layers")
        if given is not None:
            return int(given)
        model_cfg = try_get_key(source.cfg, "model.cfg") or try_get_key(source.cfg, "model")
        layers = try_get_key(model_cfg, "hidden_layers") if model_cfg is not None else None
        if layers is not None:
            decoder = try_get_key(model_cfg, "decoder_layers")
            return int(layers) + (int(decoder) if decoder is not None else 0)
    return None


def build_layout(source: ModelSource, data_parallel: Optional[int], tensor_parallel: Optional[int],
                 pipeline_parallel: Optional[int], pipeline_stage_id: Optional[Any],
                 pipeline_num_layers: Optional[int], device: Optional[str]) -> ParallelLayout:
    """The layout of the launched world for the given sizes (unset sizes: 1, data takes the rest)."""
    dist = dict(
        data_parallel_size=data_parallel, tensor_parallel_size=tensor_parallel or 1,
        pipeline_parallel_size=pipeline_parallel or 1, custom_pipeline_stage_id=pipeline_stage_id,
        pipeline_num_layers=pipeline_num_layers, device_type=device,
    )
    if (pipeline_parallel or 1) > 1 and pipeline_num_layers is None and pipeline_stage_id is None:
        dist["pipeline_num_layers"] = _layer_count(source)
        if dist["pipeline_num_layers"] is None:
            raise ValueError("pipeline parallel inference needs pipeline_num_layers= (the number "
                             "of transformer blocks) to place the layers on stages")
    return ParallelLayout.from_config(dist)


def _hf_class(hf_config: Mapping[str, Any], architectures: Mapping[str, str], task: str) -> type:
    """The libai class of a Hugging Face directory, from config.json's ``architectures`` and
    the pipeline's table: the one place the choice is made (an Auto class keyed by
    ``model_type`` can replace this lookup)."""
    names = list(hf_config.get("architectures") or [])
    for arch in names:
        if arch in architectures:
            cls = getattr(models, architectures[arch], None)
            if cls is not None:
                return cls
    raise ValueError(
        f"config.json architectures {names} cannot run as {task}; this pipeline takes "
        f"{sorted(a for a, c in architectures.items() if hasattr(models, c))}"
    )


def load_model(source: ModelSource, layout: ParallelLayout, architectures: Mapping[str, str],
               task: str) -> nn.Module:
    """Build the model under ``layout`` and load its weights; returned in eval mode."""
    with layout:
        if source.mode == "huggingface":
            if source.cfg is not None:
                target = source.cfg.model._target_
                cls = target if isinstance(target, type) else _import(target)
            else:
                cls = _hf_class(source.hf_config, architectures, task)
            model = cls.from_pretrained(source.weights)
        else:
            if source.cfg is None:
                raise ValueError("mode='libai' / 'random' needs a libai config (config.yaml)")
            model = instantiate(source.cfg.model)
            if source.mode == "libai":
                Checkpointer(model, save_to_disk=False).load_weights_only(source.weights)
    return model.eval()


def _import(dotted: str) -> type:
    module, _, name = dotted.rpartition(".")
    return getattr(__import__(module, fromlist=[name]), name)


def load_tokenizer(source: ModelSource) -> Optional[BaseTokenizer]:
    """The tokenizer of the config (libai) or of the tokenizer files beside the weights (HF,
    through :class:`~libai.tokenizer.AutoTokenizer`); None when there is none (the pipeline
    then takes and returns token ids)."""
    if source.cfg is not None and try_get_key(source.cfg, "tokenization.tokenizer") is not None:
        return build_tokenizer(source.cfg.tokenization)
    folder = source.weights if source.weights and os.path.isdir(source.weights) else None
    if folder is None or not has_tokenizer_files(folder):
        return None
    return AutoTokenizer.from_pretrained(folder)
