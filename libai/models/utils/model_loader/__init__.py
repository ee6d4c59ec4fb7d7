"""LiBai's ``libai.models.utils.model_loader`` package: ``*LoaderHuggerFace`` / ``*LoaderLiBai``."""
from libai.models.utils.model_loader.base_loader import (
    ModelLoader, ModelLoaderHuggerFace, ModelLoaderLiBai,
)
from libai.models.utils.model_loader.bert_loader import BertLoaderHuggerFace, BertLoaderLiBai
from libai.models.utils.model_loader.gpt_loader import GPT2LoaderHuggerFace, GPT2LoaderLiBai
from libai.models.utils.model_loader.roberta_loader import RobertaLoaderHuggerFace, RobertaLoaderLiBai
from libai.models.utils.model_loader.swin_loader import SwinLoaderHuggerFace, SwinLoaderLiBai
from libai.models.utils.model_loader.swinv2_loader import SwinV2LoaderHuggerFace, SwinV2LoaderLiBai
from libai.models.utils.model_loader.t5_loader import T5LoaderHuggerFace, T5LoaderLiBai
from libai.models.utils.model_loader.vit_loader import ViTLoaderHuggerFace, ViTLoaderLiBai

__all__ = [
    "ModelLoader", "ModelLoaderHuggerFace", "ModelLoaderLiBai",
    "BertLoaderHuggerFace", "BertLoaderLiBai", "GPT2LoaderHuggerFace", "GPT2LoaderLiBai",
    "RobertaLoaderHuggerFace", "RobertaLoaderLiBai", "SwinLoaderHuggerFace", "SwinLoaderLiBai",
    "SwinV2LoaderHuggerFace", "SwinV2LoaderLiBai", "T5LoaderHuggerFace", "T5LoaderLiBai",
    "ViTLoaderHuggerFace", "ViTLoaderLiBai",
]
