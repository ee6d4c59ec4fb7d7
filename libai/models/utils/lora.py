"""LoRA fine-tuning of a whole model: add adapters by name, freeze the rest, save only them.

The layer itself (:class:`~libai.layers.lora.LoRALinear`) is a parallel layer and lives in
``libai.layers``. This module works on models: it finds the ``Linear`` layers to adapt by
name, freezes every base parameter, and moves adapter weights to and from a file. It sits
under ``libai/models`` because it reuses the pretrained-weight machinery (gathering sharded
tensors to full arrays, placing full arrays back by the layout) that models own.

Typical use::

    model = LlamaForCausalLM.from_pretrained(path)
    apply_lora(model, ["q_proj", "v_proj"], rank=8, alpha=16)    # base frozen, B = 0
    ... train ...                                                # only lora_A / lora_B move
    save_lora(model, "adapter/")       # adapter_model.safetensors + adapter_config.json
    load_lora(other_model_with_lora, "adapter/")
    merge_lora(model)                  # fold the update into the base weights

In a config, :func:`lora_model` does the same around a model node (see
configs/llama_lora_finetune.py). The file names follow Hugging Face ``peft``'s
(``adapter_model.safetensors``, ``adapter_config.json`` with ``r``, ``lora_alpha``,
``target_modules``); the tensor names are libai's.
"""
import copy
import json
import os
import re
from typing import Dict, List, Optional, Sequence, Union

import numpy as np
from oneflow import nn

from libai.layers.linear import Linear
from libai.layers.lora import LoRALinear
from libai.models.pretrained.placement import assign_state, gather_state
from libai.utils.distributed import get_rank, synchronize

__all__ = [
    "ADAPTER_CONFIG_NAME",
    "ADAPTER_WEIGHTS_NAME",
    "apply_lora",
    "load_lora",
    "lora_model",
    "lora_modules",
    "lora_state_dict",
    "merge_and_unload",
    "merge_lora",
    "save_lora",
    "unmerge_lora",
]

ADAPTER_WEIGHTS_NAME = "adapter_model.safetensors"
ADAPTER_CONFIG_NAME = "adapter_config.json"


def _matches(name: str, patterns: Sequence[str]) -> bool:
    """``name`` (a dotted module path) matches a pattern when the pattern, a regex, matches a
    whole trailing part of it: ``"query"`` or ``r"layers\\.0\\.self_attention\\.dense"``."""
    return any(re.fullmatch(rf"(?:.*\.)?(?:{p})", name) for p in patterns)


def _parent(model: nn.Module, name: str) -> nn.Module:
    parent = model
    for part in name.split(".")[:-1]:
        parent = getattr(parent, part)
    return parent


def apply_lora(
    model: nn.Module,
    target_modules: Sequence[str],
    rank: int = 8,
    alpha: float = 16.0,
    dropout: float = 0.0,
    freeze_base: bool = True,
) -> List[str]:
    """Replace each libai ``Linear`` whose name matches ``target_modules`` by a LoRALinear.

    Args:
        target_modules: regexes matched against the end of module names (``"query"``
            matches ``model.layers.3.self_attention.query``).
        rank, alpha, dropout: the adapter's rank ``r``, scale ``alpha / r`` and input dropout.
        freeze_base: set ``requires_grad=False`` on every parameter that is not an adapter's
            (the optimizer then leaves them out); False leaves every base parameter trainable.

    Returns the names of the adapted modules. Call it inside the layout the model was built
    in (the adapter parameters are placed like the layers they adapt).
    """
    names = [
        n for n, m in model.named_modules()
        if isinstance(m, Linear) and not isinstance(m, LoRALinear) and _matches(n, target_modules)
    ]
    if not names:
        linears = sorted(n for n, m in model.named_modules() if isinstance(m, Linear))
        raise ValueError(
            f"no Linear layer of {type(model).__name__} matches target_modules="
            f"{list(target_modules)}; its Linear layers are: {linears[:12]}"
            f"{' ...' if len(linears) > 12 else ''}"
        )
    for name in names:
        parent, leaf = _parent(model, name), name.rsplit(".", 1)[-1]
        lora = LoRALinear.from_linear(getattr(parent, leaf), rank, alpha, dropout)
        if not freeze_base:  # the layer froze its base weights; give them back their gradients
            for param in (lora.weight, lora.bias):
                if param is not None:
                    param.requires_grad = True
        setattr(parent, leaf, lora)
    if freeze_base:
        for pname, param in model.named_parameters():
            param.requires_grad = _is_adapter(pname)
    model.lora_config = dict(r=rank, lora_alpha=alpha, lora_dropout=dropout,
                             target_modules=list(target_modules))
    return names


def _is_adapter(param_name: str) -> bool:
    return ".lora_A." in f".{param_name}" or ".lora_B." in f".{param_name}"


def lora_modules(model: nn.Module) -> Dict[str, LoRALinear]:
    """Every LoRA layer of ``model`` by module name."""
    return {n: m for n, m in model.named_modules() if isinstance(m, LoRALinear)}


def _require_lora(model: nn.Module) -> Dict[str, LoRALinear]:
    found = lora_modules(model)
    if not found:
        raise ValueError(f"{type(model).__name__} has no LoRA layers; call apply_lora first")
    return found


def lora_state_dict(model: nn.Module) -> Dict[str, np.ndarray]:
    """The full value of every adapter tensor, by state-dict name (on every rank)."""
    out: Dict[str, np.ndarray] = {}
    for name, module in _require_lora(model).items():
        for part in ("lora_A", "lora_B"):
            for key, array in gather_state(getattr(module, part)).items():
                out[f"{name}.{part}.{key}"] = array
    return out


def save_lora(model: nn.Module, path: str) -> str:
    """Write the adapter only: ``path/adapter_model.safetensors`` and ``adapter_config.json``.

    Call on every rank (sharded adapters are gathered); rank 0 writes. Returns the weights file.
    """
    from safetensors.numpy import save_file

    state = lora_state_dict(model)
    weights = os.path.join(path, ADAPTER_WEIGHTS_NAME)
    if get_rank() == 0:
        os.makedirs(path, exist_ok=True)
        save_file({k: np.ascontiguousarray(v) for k, v in state.items()}, weights)
        config = dict(getattr(model, "lora_config", {}), peft_type="LORA",
                      base_model_class=type(model).__name__)
        with open(os.path.join(path, ADAPTER_CONFIG_NAME), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)
    synchronize()
    return weights


def load_lora(model: nn.Module, path: str) -> None:
    """Load an adapter written by :func:`save_lora` into a model that has the same LoRA layers.

    The file must name exactly the model's adapter tensors, with the same shapes; anything
    else is an error naming the tensors (a wrong rank or other target modules).
    """
    from safetensors.numpy import load_file

    modules = _require_lora(model)
    file = path if path.endswith(".safetensors") else os.path.join(path, ADAPTER_WEIGHTS_NAME)
    if not os.path.isfile(file):
        raise FileNotFoundError(f"no LoRA adapter at {file}; write one with save_lora(model, dir)")
    arrays = load_file(file)
    expected = {f"{n}.{part}.weight": tuple(getattr(m, part).weight.shape)
                for n, m in modules.items() for part in ("lora_A", "lora_B")}
    missing = sorted(set(expected) - set(arrays))
    unexpected = sorted(set(arrays) - set(expected))
    wrong = sorted(k for k in expected if k in arrays and tuple(arrays[k].shape) != expected[k])
    if missing or unexpected or wrong:
        raise ValueError(
            f"the adapter {file} does not fit {type(model).__name__}: missing {missing}, "
            f"unexpected {unexpected}, other shapes {wrong}. Apply LoRA with the rank and "
            "target_modules the adapter was trained with (see its adapter_config.json)"
        )
    for name, module in modules.items():
        for part in ("lora_A", "lora_B"):
            assign_state(getattr(module, part), {"weight": arrays[f"{name}.{part}.weight"]})


def merge_lora(model: nn.Module) -> None:
    """Fold every adapter into its base weight (see :meth:`LoRALinear.merge`)."""
    for module in _require_lora(model).values():
        module.merge()


def unmerge_lora(model: nn.Module) -> None:
    """Undo :func:`merge_lora`."""
    for module in _require_lora(model).values():
        module.unmerge()


def merge_and_unload(model: nn.Module) -> nn.Module:
    """Merge every adapter and put plain ``Linear`` layers back: the model then has its
    original state-dict names (``save_pretrained`` / libai checkpoints of the base work)."""
    for name, module in _require_lora(model).items():
        if not module.merged:
            module.merge()
        plain = copy.copy(module)
        adapter_parts = ("lora_A", "lora_B", "lora_dropout")
        plain._modules = type(module._modules)(
            (k, v) for k, v in module._modules.items() if k not in adapter_parts
        )
        plain.__class__ = _base_class(module)
        setattr(_parent(model, name), name.rsplit(".", 1)[-1], plain)
    for param in model.parameters():
        param.requires_grad = True
    if hasattr(model, "lora_config"):
        del model.lora_config
    return model


def _base_class(module: LoRALinear) -> type:
    from libai.layers.conv import Conv1D

    return Conv1D if module._stored_transposed else Linear


def lora_model(
    model: nn.Module,
    target_modules: Union[str, Sequence[str]],
    rank: int = 8,
    alpha: float = 16.0,
    dropout: float = 0.0,
    base_weights: Optional[str] = None,
    adapter: Optional[str] = None,
) -> nn.Module:
    """Config entry point: ``LazyCall(lora_model)(model=<model node>, target_modules=[...])``.

    Loads ``base_weights`` into the plain model first (a libai checkpoint such as
    ``output/model_final`` or a Hugging Face directory, whatever ``train.load_weight`` accepts),
    then applies LoRA and returns the model, optionally loading a saved ``adapter``.
    ``train.load_weight`` also works for a libai checkpoint of the base model: the adapter
    tensors it lacks keep their initial values (``B = 0``) with a warning naming them.
    """
    if isinstance(target_modules, str):
        target_modules = [target_modules]
    if base_weights:
        from libai.utils.checkpoint import Checkpointer
        from libai.utils.weight_readers import load_weight

        load_weight(model, base_weights, Checkpointer(model, save_to_disk=False))
    apply_lora(model, list(target_modules), rank, alpha, dropout)
    if adapter:
        load_lora(model, adapter)
    return model
