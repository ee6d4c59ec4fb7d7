"""``TextClassificationPipeline``: texts in, labels with scores out.

Inputs are texts (encoded with the tokenizer's special tokens, e.g. BERT's ``[CLS] ... [SEP]``)
or already-encoded dicts ``{"input_ids": [...], "attention_mask": [...], "token_type_ids":
[...]}`` (one example, as a tokenizer returns them); a batch is padded on the right. Labels
come from the model config's ``id2label`` (else LiBai's ``Label_{i}``). Call keywords:
``function_to_apply`` (``"softmax"``, ``"sigmoid"``, ``"none"``), ``return_all_scores``,
``top_k``.
"""
from typing import Any, Dict, List, Tuple

import oneflow as flow

from libai.config import try_get_key
from libai.inference.basic import BasePipeline, Params
from libai.inference.scoring import label_names, score_records

__all__ = ["TextClassificationPipeline"]

_POST = ("function_to_apply", "return_all_scores", "top_k")


class TextClassificationPipeline(BasePipeline):
    """Classify texts with a libai sequence classifier (BERT, ...)."""

    hf_architectures = {"BertForSequenceClassification": "BertForClassification"}
    task = "text classification"

    def _parse_parameters(self, **params: Any) -> Tuple[Params, Params, Params]:
        post = {k: params.pop(k) for k in _POST if k in params}
        return params, {}, post

    def _encode(self, item: Any, max_length: Any = None) -> Dict[str, List[int]]:
        if isinstance(item, dict):
            ids = [int(t) for t in item["input_ids"]]
            return {"input_ids": ids,
                    "attention_mask": [int(t) for t in item.get("attention_mask", [1] * len(ids))],
                    "token_type_ids": [int(t) for t in item.get("token_type_ids", [0] * len(ids))]}
        if self.tokenizer is None:
            raise ValueError("this pipeline has no tokenizer (no vocab.txt beside the weights and "
                             "none in the config); pass encoded dicts or give tokenizer=")
        ids = list(self.tokenizer.encode(item, add_special_tokens=True, max_length=max_length,
                                         truncation=max_length is not None))
        return {"input_ids": ids, "attention_mask": [1] * len(ids), "token_type_ids": [0] * len(ids)}

    def preprocess(self, inputs: List[Any], max_length: Any = None, **_: Any) -> Dict[str, Any]:
        rows = [self._encode(item, max_length) for item in inputs]
        width = max(len(r["input_ids"]) for r in rows)
        pad = getattr(self.tokenizer, "pad_token_id", None) if self.tokenizer is not None else None
        pad = 0 if pad is None else pad
        batch = {}
        for key, fill in (("input_ids", pad), ("attention_mask", 0), ("token_type_ids", 0)):
            batch[key] = flow.tensor([r[key] + [fill] * (width - len(r[key])) for r in rows],
                                     dtype=flow.int64)
        return batch

    def forward(self, model_inputs: Dict[str, Any], **_: Any) -> Dict[str, Any]:
        kwargs = {"input_ids": self.place(model_inputs["input_ids"]),
                  "attention_mask": self.place(model_inputs["attention_mask"])}
        for name in ("tokentype_ids", "token_type_ids"):
            if self.model_accepts(name):
                kwargs[name] = self.place(model_inputs["token_type_ids"])
        outputs = self.model(**kwargs)
        logits = outputs.get("logits", outputs.get("prediction_scores"))
        return {"logits": logits}

    def labels(self, num_labels: int) -> List[str]:
        id2label = self.source.hf_config.get("id2label")
        if id2label is None and self.cfg is not None:
            id2label = try_get_key(self.cfg, "model.cfg.id2label")
        return label_names(num_labels, id2label)

    def postprocess(self, model_outputs: Dict[str, Any], **params: Any) -> List[Any]:
        logits = model_outputs["logits"].numpy()
        return score_records(logits, self.labels(logits.shape[-1]), **params)
