"""Model utilities: initialisers, LiBai's weight loaders, ONNX export (``export_onnx``);
``GraphBase`` by LiBai's name.

``GraphBase`` lives in the engine (:mod:`libai.engine.graph`: it is the compiled training step).
LiBai configs import it from here, so this package hands it out on first use (module
``__getattr__``): importing ``libai.models`` never loads the engine. This is the one sanctioned
upward import of the layering rule (``.importlinter`` lists it as the single ignored import).
"""
from typing import Any

from libai.models.utils.model_loader import (
    BertLoaderHuggerFace,
    BertLoaderLiBai,
    GPT2LoaderHuggerFace,
    GPT2LoaderLiBai,
    ModelLoaderHuggerFace,
    ModelLoaderLiBai,
    RobertaLoaderHuggerFace,
    RobertaLoaderLiBai,
    SwinLoaderHuggerFace,
    SwinLoaderLiBai,
    SwinV2LoaderHuggerFace,
    SwinV2LoaderLiBai,
    T5LoaderHuggerFace,
    T5LoaderLiBai,
    ViTLoaderHuggerFace,
    ViTLoaderLiBai,
)
from libai.models.utils.onnx_export import export_onnx
from libai.models.utils.weight_init import init_method_normal, scaled_init_method_normal

__all__ = [
    "GraphBase",
    "export_onnx",
    "init_method_normal",
    "scaled_init_method_normal",
    "ModelLoaderHuggerFace",
    "ModelLoaderLiBai",
    "BertLoaderHuggerFace",
    "BertLoaderLiBai",
    "GPT2LoaderHuggerFace",
    "GPT2LoaderLiBai",
    "RobertaLoaderHuggerFace",
    "RobertaLoaderLiBai",
    "SwinLoaderHuggerFace",
    "SwinLoaderLiBai",
    "SwinV2LoaderHuggerFace",
    "SwinV2LoaderLiBai",
    "T5LoaderHuggerFace",
    "T5LoaderLiBai",
    "ViTLoaderHuggerFace",
    "ViTLoaderLiBai",
]


def __getattr__(name: str) -> Any:
    if name == "GraphBase":
        from libai.engine.graph import GraphBase

        return GraphBase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
