"""Models built from :mod:`libai.layers`. BERT, RoBERTa, GPT-2, T5 and Llama configure one
language-model skeleton (embeddings and blocks in :mod:`libai.models.transformer`, heads and task
outputs in :mod:`libai.models.language_model`); every model owns its loss and returns a dict."""
from libai.models.build import build_graph, build_model
from libai.models.bert import BertForClassification, BertForPreTraining, BertModel
from libai.models.gpt import GPTForPreTraining, GPTModel
from libai.models.llama import LlamaForCausalLM, LlamaModel
from libai.models.roberta import RobertaForCausalLM, RobertaForPreTraining, RobertaModel
from libai.models.t5 import T5ForPreTraining, T5Model
from libai.models.transformer import TextEmbedding, TransformerModelMixin, TransformerStack
from libai.models.swin import SwinTransformer
from libai.models.swin_transformer_v2 import SwinTransformerV2
from libai.models.vit import VisionTransformer
from libai.models.alexnet import AlexNet
from libai.models.resmlp import ResMLP
from libai.models.resnet import ResNet
from libai.models.auto import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

__all__ = [
    "AutoConfig",
    "AutoModel",
    "AutoModelForCausalLM",
    "AutoModelForSeq2SeqLM",
    "build_graph",
    "build_model",
    "BertForClassification",
    "BertForPreTraining",
    "BertModel",
    "GPTForPreTraining",
    "GPTModel",
    "LlamaForCausalLM",
    "LlamaModel",
    "RobertaForCausalLM",
    "RobertaForPreTraining",
    "RobertaModel",
    "T5ForPreTraining",
    "T5Model",
    "TextEmbedding",
    "TransformerModelMixin",
    "TransformerStack",
    "SwinTransformer",
    "SwinTransformerV2",
    "VisionTransformer",
    "AlexNet",
    "ResMLP",
    "ResNet",
]
