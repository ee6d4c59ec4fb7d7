"""Inference pipelines (LiBai's ``libai.inference``): a trained or Hugging Face model behind a
call that takes text or images and returns text or labels with scores.

>>> from libai.inference import ChatSession, TextGenerationPipeline
>>> pipe = TextGenerationPipeline("output/gpt2_run")          # a libai training output_dir
>>> pipe("Hello", max_new_tokens=20)                         # or a Hugging Face directory
>>> ChatSession(TextGenerationPipeline("chat_model_dir")).send("Hi")   # chat template, stop ids

This package sits above the models (it imports them; they never import it). Generation itself
is the models' ``generate`` (:mod:`libai.models.utils.generation`). See
docs/generate_and_predict.md.
"""
from libai.inference.basic import BasePipeline
from libai.inference.chat import ChatSession
from libai.inference.image_classification import ImageClassificationPipeline
from libai.inference.text_classification import TextClassificationPipeline
from libai.inference.text_generation import TextGenerationPipeline

__all__ = [
    "BasePipeline",
    "ChatSession",
    "ImageClassificationPipeline",
    "TextClassificationPipeline",
    "TextGenerationPipeline",
]
