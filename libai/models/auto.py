"""Auto classes: the libai model of a Hugging Face directory, chosen by ``config.json``.

``AutoModelForCausalLM.from_pretrained(dir, **overrides)`` reads ``dir/config.json``, finds
its ``model_type`` in the one family table (:mod:`libai.models.pretrained.registry`; each
family's mapping names the libai class of every Auto class it serves) and calls that class's
``from_pretrained``. ``save_pretrained`` is the model's own, so what an Auto class loads is
written back in the format transformers reads. An unknown ``model_type`` names the supported
ones; a known one without a class of that kind (a BERT asked for a causal LM) names its
classes.
"""
from typing import Any, Dict, Type

from oneflow import nn

from libai.models.pretrained import files
from libai.models.pretrained.api import build_args
from libai.models.pretrained.registry import auto_class_name, mapping_for_config

__all__ = ["AutoConfig", "AutoModel", "AutoModelForCausalLM", "AutoModelForSeq2SeqLM"]


class AutoConfig:
    """``config.json`` of a Hugging Face directory, checked against what libai computes."""

    @staticmethod
    def from_pretrained(path: str) -> Dict[str, Any]:
        """The ``config.json`` dict; raises when no family takes its ``model_type`` or when it
        sets a mechanism the family's libai model does not compute."""
        cfg = files.read_config(path)
        mapping_for_config(cfg).check_config(cfg)
        return cfg

    @staticmethod
    def model_args(path: str, role: str = "causal_lm") -> Dict[str, Any]:
        """The libai constructor arguments the Auto class ``role`` would build ``path`` with
        (for a LazyConfig: ``model.cfg.update(AutoConfig.model_args(dir))``)."""
        cfg = files.read_config(path)
        return build_args(_libai_class(auto_class_name(cfg, role)), cfg, {})[2]


def _libai_class(name: str) -> Type[nn.Module]:
    import libai.models as models  # the package that exports every model class

    return getattr(models, name)


class _AutoModelBase:
    role = ""

    def __init__(self) -> None:
        raise TypeError(f"use {type(self).__name__}.from_pretrained(path)")

    @classmethod
    def class_for(cls, path: str) -> Type[nn.Module]:
        """The libai class this Auto class builds for the directory ``path``."""
        return _libai_class(auto_class_name(files.read_config(path), cls.role))

    @classmethod
    def from_pretrained(cls, path: str, strict: bool = True, **overrides: Any) -> nn.Module:
        """Build the directory's libai model and load its weights (see
        :func:`libai.models.pretrained.from_pretrained` for ``strict`` and ``overrides``)."""
        return cls.class_for(path).from_pretrained(path, strict=strict, **overrides)


class AutoModel(_AutoModelBase):
    """The family's base model (``LlamaModel``, ``BertModel``, ...; a vision family's one
    classifier)."""

    role = "model"


class AutoModelForCausalLM(_AutoModelBase):
    """The family's causal language model (``LlamaForCausalLM``, ``GPTForPreTraining``, ...)."""

    role = "causal_lm"


class AutoModelForSeq2SeqLM(_AutoModelBase):
    """The family's encoder-decoder language model (T5, MT5)."""

    role = "seq2seq_lm"
