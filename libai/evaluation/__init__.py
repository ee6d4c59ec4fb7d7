"""Evaluation: evaluators, the inference loop that feeds them, and result printing.

See ``docs/evaluation.md`` for writing your own :class:`DatasetEvaluator`.
"""
from libai.evaluation.bleu_evaluator import BLEUEvaluator
from libai.evaluation.cls_evaluator import ClsEvaluator
from libai.evaluation.evaluator import DatasetEvaluator, DatasetEvaluators
from libai.evaluation.inference import inference_on_dataset
from libai.evaluation.ppl_evaluator import PPLEvaluator
from libai.evaluation.reg_evaluator import RegEvaluator
from libai.evaluation.sft_evaluator import ResponseLossEvaluator
from libai.evaluation.results import flatten_results_dict, print_csv_format, results_table

__all__ = [
    "BLEUEvaluator",
    "ClsEvaluator",
    "DatasetEvaluator",
    "DatasetEvaluators",
    "PPLEvaluator",
    "RegEvaluator",
    "ResponseLossEvaluator",
    "flatten_results_dict",
    "inference_on_dataset",
    "print_csv_format",
    "results_table",
]
