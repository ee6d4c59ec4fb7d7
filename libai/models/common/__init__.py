"""Code the language models share: config resolution and losses."""
from libai.models.common.config import SYNONYMS, merge_config, resolve_arguments
from libai.models.common.losses import ClassificationLoss, LMLoss

__all__ = ["ClassificationLoss", "LMLoss", "SYNONYMS", "merge_config", "resolve_arguments"]
