"""The table of libai's own classes in the built-in registries, by dotted path.

Why a table of strings: ``libai.config`` is the lowest layer (see ``.importlinter``) and may
not import the models, data, engine, ... whose classes these are. :mod:`libai.config.registry`
declares every entry below (:meth:`Registry.declare`); a class is imported the first time a
config names it. Each path is the module that *defines* the class, so a class that also
registers itself with a decorator (the augmentation transforms do) agrees with its entry.

``tests/config/test_registry_builtins.py`` keeps this table honest: every path must resolve,
and every public class of each kind (from the packages' ``__all__``) must be listed, so a new
model or dataset that is not added here fails CI instead of being silently unnamed.
"""
from typing import Dict

__all__ = ["BUILTIN_DECLARATIONS"]

_MODELS = {
    "BertModel": "libai.models.bert.BertModel",
    "BertForPreTraining": "libai.models.bert.BertForPreTraining",
    "BertForClassification": "libai.models.bert.BertForClassification",
    "GPTModel": "libai.models.gpt.GPTModel",
    "GPTForPreTraining": "libai.models.gpt.GPTForPreTraining",
    "RobertaModel": "libai.models.roberta.RobertaModel",
    "RobertaForPreTraining": "libai.models.roberta.RobertaForPreTraining",
    "RobertaForCausalLM": "libai.models.roberta.RobertaForCausalLM",
    "T5Model": "libai.models.t5.T5Model",
    "T5ForPreTraining": "libai.models.t5.T5ForPreTraining",
    "LlamaModel": "libai.models.llama.LlamaModel",
    "LlamaForCausalLM": "libai.models.llama.LlamaForCausalLM",
    "Qwen2Model": "libai.models.qwen2.Qwen2Model",
    "Qwen2ForCausalLM": "libai.models.qwen2.Qwen2ForCausalLM",
    "MistralModel": "libai.models.mistral.MistralModel",
    "MistralForCausalLM": "libai.models.mistral.MistralForCausalLM",
    "Qwen3Model": "libai.models.qwen3.Qwen3Model",
    "Qwen3ForCausalLM": "libai.models.qwen3.Qwen3ForCausalLM",
    "GemmaModel": "libai.models.gemma.GemmaModel",
    "GemmaForCausalLM": "libai.models.gemma.GemmaForCausalLM",
    "Phi3Model": "libai.models.phi3.Phi3Model",
    "Phi3ForCausalLM": "libai.models.phi3.Phi3ForCausalLM",
    "TextEmbedding": "libai.models.transformer.TextEmbedding",
    "TransformerStack": "libai.models.transformer.TransformerStack",
    "VisionTransformer": "libai.models.vit.VisionTransformer",
    "SwinTransformer": "libai.models.swin.SwinTransformer",
    "SwinTransformerV2": "libai.models.swin_transformer_v2.SwinTransformerV2",
    "AlexNet": "libai.models.alexnet.AlexNet",
    "ResMLP": "libai.models.resmlp.ResMLP",
    "ResNet": "libai.models.resnet.ResNet",
}

_DATASETS = {
    "ImageClassificationDataset": "libai.data.datasets.image_base.ImageClassificationDataset",
    "MNISTDataset": "libai.data.datasets.mnist.MNISTDataset",
    "CIFAR10Dataset": "libai.data.datasets.cifar.CIFAR10Dataset",
    "CIFAR100Dataset": "libai.data.datasets.cifar.CIFAR100Dataset",
    "ImageFolderDataset": "libai.data.datasets.imagefolder.ImageFolderDataset",
    "ImageNetDataset": "libai.data.datasets.imagenet.ImageNetDataset",
    "OFRecordImageDataset": "libai.data.datasets.ofrecord.OFRecordImageDataset",
    "GPT2Dataset": "libai.data.datasets.gpt_dataset.GPT2Dataset",
    "GPTDataset": "libai.data.datasets.gpt_dataset.GPT2Dataset",  # LiBai's name for it
    "BertDataset": "libai.data.datasets.bert_dataset.BertDataset",
    "RobertaDataset": "libai.data.datasets.roberta_dataset.RobertaDataset",
    "T5Dataset": "libai.data.datasets.t5_dataset.T5Dataset",
    "TextClassificationDataset": "libai.data.datasets.text_classification.TextClassificationDataset",
    "SyntheticLMDataset": "libai.data.datasets.synthetic.SyntheticLMDataset",
    "SyntheticImageDataset": "libai.data.datasets.synthetic.SyntheticImageDataset",
    "SFTDataset": "libai.data.datasets.sft.SFTDataset",
    "InstructionDataset": "libai.data.datasets.instruction.InstructionDataset",
    "ChatDataset": "libai.data.datasets.chat.ChatDataset",
    "PackedDataset": "libai.data.datasets.packing.PackedDataset",
    "PadCollate": "libai.data.datasets.packing.PadCollate",
}

_TRANSFORMS = {
    "AugmentationPipeline": "libai.data.augmentation.pipeline.AugmentationPipeline",
    "Compose": "libai.data.augmentation.pipeline.AugmentationPipeline",
    "RandomFlip": "libai.data.augmentation.geometric.RandomFlip",
    "Resize": "libai.data.augmentation.geometric.Resize",
    "RandomCrop": "libai.data.augmentation.geometric.RandomCrop",
    "CenterCrop": "libai.data.augmentation.geometric.CenterCrop",
    "RandomResizedCrop": "libai.data.augmentation.geometric.RandomResizedCrop",
    "RandomColorJitter": "libai.data.augmentation.color.RandomColorJitter",
    "RandAugment": "libai.data.augmentation.policies.RandAugment",
    "AutoAugment": "libai.data.augmentation.policies.AutoAugment",
    "RandomErasing": "libai.data.augmentation.policies.RandomErasing",
    "Normalize": "libai.data.augmentation.tensor.Normalize",
    "ToTensor": "libai.data.augmentation.tensor.ToTensor",
}

_LOSSES = {
    # weighted wrappers over oneflow.nn losses (each takes lambda_weight)
    "CrossEntropyLoss": "libai.layers.weighted_loss.CrossEntropyLoss",
    "NLLLoss": "libai.layers.weighted_loss.NLLLoss",
    "BCELoss": "libai.layers.weighted_loss.BCELoss",
    "BCEWithLogitsLoss": "libai.layers.weighted_loss.BCEWithLogitsLoss",
    "L1Loss": "libai.layers.weighted_loss.L1Loss",
    "MSELoss": "libai.layers.weighted_loss.MSELoss",
    "SmoothL1Loss": "libai.layers.weighted_loss.SmoothL1Loss",
    "KLDivLoss": "libai.layers.weighted_loss.KLDivLoss",
    "LossKeyCompose": "libai.layers.loss_compose.LossKeyCompose",
    "ParallelCrossEntropyLoss": "libai.layers.cross_entropy.ParallelCrossEntropyLoss",
    "LMLoss": "libai.models.common.losses.LMLoss",
    "ClassificationLoss": "libai.models.common.losses.ClassificationLoss",
    "GPTLoss": "libai.models.common.losses.GPTLoss",
    "T5Loss": "libai.models.common.losses.T5Loss",
}

_EVALUATORS = {
    "ClsEvaluator": "libai.evaluation.cls_evaluator.ClsEvaluator",
    "PPLEvaluator": "libai.evaluation.ppl_evaluator.PPLEvaluator",
    "RegEvaluator": "libai.evaluation.reg_evaluator.RegEvaluator",
    "BLEUEvaluator": "libai.evaluation.bleu_evaluator.BLEUEvaluator",
    "DatasetEvaluators": "libai.evaluation.evaluator.DatasetEvaluators",
    "ResponseLossEvaluator": "libai.evaluation.sft_evaluator.ResponseLossEvaluator",
}

_SCHEDULERS = {
    "WarmupCosineLR": "libai.scheduler.lr_scheduler.WarmupCosineLR",
    "WarmupCosineAnnealingLR": "libai.scheduler.lr_scheduler.WarmupCosineAnnealingLR",
    "WarmupExponentialLR": "libai.scheduler.lr_scheduler.WarmupExponentialLR",
    "WarmupMultiStepLR": "libai.scheduler.lr_scheduler.WarmupMultiStepLR",
    "WarmupPolynomialLR": "libai.scheduler.lr_scheduler.WarmupPolynomialLR",
    "WarmupStepLR": "libai.scheduler.lr_scheduler.WarmupStepLR",
}

# libai has no optimizer classes of its own: its configs use OneFlow's.
_OPTIMIZERS = {
    name: f"oneflow.optim.{name}"
    for name in ("SGD", "Adam", "AdamW", "LAMB", "RMSprop", "Adagrad", "Adadelta")
}

_HOOKS = {
    "IterationTimer": "libai.engine.hooks.iteration_timer.IterationTimer",
    "LRScheduler": "libai.engine.hooks.lr_scheduler.LRScheduler",
    "PeriodicCheckpointer": "libai.engine.hooks.periodic_checkpointer.PeriodicCheckpointer",
    "BestCheckpointer": "libai.engine.hooks.best_checkpointer.BestCheckpointer",
    "EvalHook": "libai.engine.hooks.eval_hook.EvalHook",
    "EarlyStopping": "libai.engine.hooks.early_stopping.EarlyStopping",
    "PeriodicWriter": "libai.engine.hooks.periodic_writer.PeriodicWriter",
    "PreemptionHandler": "libai.engine.hooks.preemption.PreemptionHandler",
    "EMAHook": "libai.engine.hooks.ema.EMAHook",
    "NaNLossHook": "libai.engine.hooks.nan_check.NaNLossHook",
    "TensorboardVisuals": "libai.engine.hooks.tensorboard_visuals.TensorboardVisuals",
    "LivePlots": "libai.engine.hooks.live_plots.LivePlots",
    "ModelSummaryHook": "libai.engine.hooks.model_summary.ModelSummaryHook",
}

_TRAINERS = {
    "DefaultTrainer": "libai.engine.default_trainer.DefaultTrainer",
    "EagerTrainer": "libai.engine.trainer.EagerTrainer",
    "GraphTrainer": "libai.engine.trainer.GraphTrainer",
}

# registry name -> {entry name: dotted path of the class}
BUILTIN_DECLARATIONS: Dict[str, Dict[str, str]] = {
    "MODEL": _MODELS,
    "DATASET": _DATASETS,
    "TRANSFORM": _TRANSFORMS,
    "LOSS": _LOSSES,
    "EVALUATOR": _EVALUATORS,
    "SCHEDULER": _SCHEDULERS,
    "OPTIMIZER": _OPTIMIZERS,
    "HOOK": _HOOKS,
    "TRAINER": _TRAINERS,
}
