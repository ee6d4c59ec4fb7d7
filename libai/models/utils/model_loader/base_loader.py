"""LiBai's weight-loader classes, as thin doors onto :mod:`libai.models.pretrained`.

``LoaderClass(model, libai_cfg, pretrained_model_path, **kwargs).load()`` builds ``model`` (a
libai class or a ``LazyCall`` config node) from ``libai_cfg`` with the sizes of the
checkpoint's ``config.json`` and ``kwargs`` on top (LiBai's precedence), then loads the
weights. The mapping, the checks and the placement under the layout are
:func:`libai.models.pretrained.load_into`'s; nothing here computes differently.
"""
import copy
import inspect
import logging
from typing import Any, Dict, List, Mapping, Tuple, Type, Union

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.config import instantiate
from libai.models.common.config import SYNONYMS
from libai.models.pretrained import api
from libai.models.pretrained.convert import LoadReport
from libai.models.pretrained.files import read_config
from libai.models.pretrained.placement import assign_state

__all__ = ["ModelLoader", "ModelLoaderHuggerFace", "ModelLoaderLiBai", "_load_state_dict_into_model"]

logger = logging.getLogger(__name__)


def _model_class(model: Any) -> Type[nn.Module]:
    """A class, or the ``_target_`` of a ``LazyCall`` node, as a class."""
    if isinstance(model, type):
        return model
    target = model.get("_target_") if hasattr(model, "get") else None
    if target is None:
        raise TypeError(f"model must be a libai model class or a LazyCall node, got {model!r}")
    if isinstance(target, str):
        module, _, name = target.rpartition(".")
        return getattr(__import__(module, fromlist=[name]), name)
    return target


def _merge(base: Mapping[str, Any], *updates: Mapping[str, Any]) -> Dict[str, Any]:
    """``base`` updated in turn; a key replaces its synonyms (``layernorm_eps`` ...)."""
    merged = {str(k): v for k, v in (base or {}).items()}
    for update in updates:
        for key, value in update.items():
            for group in SYNONYMS:
                if key in group:
                    for other in group:
                        merged.pop(other, None)
            merged[key] = value
    return merged


class ModelLoader:
    """Common state of LiBai's loaders: ``model``, ``libai_cfg``, ``pretrained_model_path``,
    ``kwargs`` (config overrides) and ``output_loading_info``."""

    def __init__(self, model: Any, libai_cfg: Mapping[str, Any], pretrained_model_path: str,
                 **kwargs: Any) -> None:
        self.model = model
        self.libai_cfg = libai_cfg
        self.pretrained_model_path = pretrained_model_path
        self.output_loading_info = bool(kwargs.pop("output_loading_info", False))
        self.kwargs = kwargs

    def _result(self, model: nn.Module, report: LoadReport) -> Union[nn.Module, Tuple[nn.Module, Dict]]:
        if not self.output_loading_info:
            return model
        info = {"missing_keys": list(report.missing), "unexpected_keys": list(report.unexpected),
                "mismatched_keys": list(report.mismatched), "error_msgs": []}
        return model, info


class ModelLoaderHuggerFace(ModelLoader):
    """Load a Hugging Face directory (``config.json`` + safetensors or ``pytorch_model.bin``)."""

    def load(self) -> Union[nn.Module, Tuple[nn.Module, Dict]]:
        cls = _model_class(self.model)
        hf_config = read_config(self.pretrained_model_path)
        family, target, mapped = api.build_args(cls, hf_config, {})
        own = {} if isinstance(self.model, type) else dict(self.model.get("cfg") or {})
        args = _merge(_merge(self.libai_cfg or {}, own), mapped, self.kwargs)
        with api._some_layout():
            model = cls(**_known(cls, args))
        report = api.load_into(model, self.pretrained_model_path, hf_config=hf_config,
                               family=family, target=target)
        return self._result(model, report)


class ModelLoaderLiBai(ModelLoader):
    """Load OneFlow weights: a checkpoint written by libai or by upstream LiBai's
    ``Checkpointer`` (its directory, or the ``model`` part inside it, which is what LiBai's
    loader takes), or any ``flow.save`` state-dict directory. LiBai's parameter names and a
    missing or extra head prefix (``GPT_model.``...) are mapped onto the model's names."""

    def load(self) -> Union[nn.Module, Tuple[nn.Module, Dict]]:
        from libai.utils.checkpoint import Checkpointer

        cls = _model_class(self.model)
        args = _merge(self.libai_cfg or {}, self.kwargs)
        node = self.model
        if not isinstance(node, type) and self.libai_cfg is not None and "cfg" in node:
            node = copy.deepcopy(node)  # LiBai builds a LazyCall node with libai_cfg as its cfg
            node.cfg = args
        with api._some_layout():
            model = cls(**_known(cls, args)) if isinstance(node, type) else instantiate(node)
        checkpointer = Checkpointer(model)
        checkpointer.load_weights_only(self.pretrained_model_path)
        done = checkpointer.last_load_report
        return self._result(model, LoadReport(missing=list(done.missing_keys),
                                              unexpected=list(done.unexpected_keys)))


def _load_state_dict_into_model(
    model_to_load: nn.Module, state_dict: Mapping[str, Any], start_prefix: str = ""
) -> List[str]:
    """Copy ``state_dict`` (libai names, optionally all beginning with ``start_prefix``) into
    ``model_to_load`` under its current layout; return the error messages (LiBai's helper).

    Values may be NumPy arrays or OneFlow tensors, local or global (a global one is gathered
    whole first). Every rank calls it (placing is collective); rank 0's values are the ones
    placed, each shard landing on the ranks that own it. A key the model does not have is
    skipped; a shape that does not match is reported in the returned list and left unloaded.
    """
    own = model_to_load.state_dict()
    arrays: Dict[str, np.ndarray] = {}
    errors: List[str] = []
    for key in sorted(state_dict):
        if not key.startswith(start_prefix):
            continue
        name = key[len(start_prefix):]
        if name not in own:
            continue
        array = _as_array(state_dict[key])
        if tuple(array.shape) != tuple(own[name].shape):
            errors.append(
                f"size mismatch for {name}: copying a param with shape {tuple(array.shape)} from "
                f"checkpoint, the shape in current model is {tuple(own[name].shape)}."
            )
            continue
        arrays[name] = array
    assign_state(model_to_load, arrays)
    return errors


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, flow.Tensor):
        if value.is_global:
            whole = [flow.sbp.broadcast] * len(value.sbp)
            value = value.to_global(sbp=whole).to_local()
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _known(cls: Type, args: Dict[str, Any]) -> Dict[str, Any]:
    """Drop head settings of sibling classes that a shared LiBai config carries
    (``add_binary_head`` handed to ``BertModel``); any other unknown key still reaches the
    constructor, whose own check names it."""
    foreign = {"add_binary_head", "num_labels", "classifier_dropout"}
    params = inspect.signature(cls.__init__).parameters
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
    if takes_any:
        return args
    return {k: v for k, v in args.items() if k not in foreign or k in params}
