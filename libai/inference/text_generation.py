"""``TextGenerationPipeline``: prompts in, continued text out (``model.generate`` underneath).

Inputs are texts (encoded by the pipeline's tokenizer) or token id lists; a batch of prompts of
different lengths is padded on the left for decoder-only models (on the right for the encoder
of encoder-decoder ones) with an attention mask, so every prompt continues as if alone.
Each record is ``{"generated_text": str, "generated_token_ids": [int, ...]}`` (the text only
with a tokenizer). Call keywords are ``generate``'s (``max_new_tokens``, ``do_sample``,
``num_beams`` ...) plus ``return_full_text`` (decoder-only: keep the prompt in the text,
default True, as Hugging Face does; LiBai's ``return_type="new_text"`` means False) and
``skip_special_tokens`` (default True).
"""
from typing import Any, Dict, List, Tuple

import oneflow as flow

from libai.inference.basic import BasePipeline, Params

__all__ = ["TextGenerationPipeline"]

_POST = ("return_full_text", "return_type", "skip_special_tokens")


class TextGenerationPipeline(BasePipeline):
    """Generate text with a libai causal (GPT-2, Llama and its families: Qwen2, Mistral, Qwen3, Gemma,
    Phi-3) or encoder-decoder (T5) model."""

    hf_architectures = {
        "GPT2LMHeadModel": "GPTForPreTraining",
        "GPT2Model": "GPTForPreTraining",
        "LlamaForCausalLM": "LlamaForCausalLM",
        "Qwen2ForCausalLM": "Qwen2ForCausalLM",
        "MistralForCausalLM": "MistralForCausalLM",
        "Qwen3ForCausalLM": "Qwen3ForCausalLM",
        "GemmaForCausalLM": "GemmaForCausalLM",
        "Phi3ForCausalLM": "Phi3ForCausalLM",
        "T5ForConditionalGeneration": "T5ForPreTraining",
        "MT5ForConditionalGeneration": "T5ForPreTraining",
    }
    task = "text generation"

    def _parse_parameters(self, **params: Any) -> Tuple[Params, Params, Params]:
        post = {k: params.pop(k) for k in _POST if k in params}
        pre = {k: params.pop(k) for k in ("add_special_tokens",) if k in params}
        return pre, params, post

    def _is_batch(self, inputs: Any) -> bool:
        if isinstance(inputs, (list, tuple)):
            return not (inputs and all(isinstance(t, int) for t in inputs))
        return False

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(getattr(self.model, "is_encoder_decoder", False))

    def pad_token_id(self) -> int:
        """The id that fills padding: the tokenizer's, else the model config's, else 0."""
        pad = getattr(self.tokenizer, "pad_token_id", None) if self.tokenizer is not None else None
        if pad is None:
            pad = self.source.hf_config.get("pad_token_id")
        return 0 if pad is None else int(pad)

    def encode(self, prompt: Any, add_special_tokens: Any = None) -> List[int]:
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise ValueError(
                    "this pipeline has no tokenizer (no vocabulary files beside the weights and "
                    "none in the config); pass token id lists, or give tokenizer="
                )
            return list(self.tokenizer.encode(prompt, add_special_tokens=add_special_tokens))
        return [int(t) for t in prompt]

    def preprocess(self, inputs: List[Any], add_special_tokens: Any = None, **_: Any) -> Dict[str, Any]:
        rows = [self.encode(p, add_special_tokens) for p in inputs]
        if any(not r for r in rows):
            raise ValueError("a prompt encoded to no tokens; give at least one token per prompt")
        width, pad = max(len(r) for r in rows), self.pad_token_id()
        left = not self.is_encoder_decoder
        ids, mask = [], []
        for r in rows:
            fill = [pad] * (width - len(r))
            ones, zeros = [1] * len(r), [0] * (width - len(r))
            ids.append(fill + r if left else r + fill)
            mask.append(zeros + ones if left else ones + zeros)
        return {"input_ids": flow.tensor(ids, dtype=flow.int64),
                "attention_mask": flow.tensor(mask, dtype=flow.int64),
                "prompt_lengths": [len(r) for r in rows], "padded_length": width}

    def forward(self, model_inputs: Dict[str, Any], **generate_kwargs: Any) -> Dict[str, Any]:
        generate_kwargs.setdefault("pad_token_id", self.pad_token_id())
        tokens = self.model.generate(
            model_inputs["input_ids"], attention_mask=model_inputs["attention_mask"],
            **generate_kwargs,
        )
        rows = model_inputs["input_ids"].shape[0]
        return {"tokens": tokens, "per_prompt": tokens.shape[0] // rows,
                "prompt_lengths": model_inputs["prompt_lengths"],
                "padded_length": model_inputs["padded_length"]}

    def postprocess(self, model_outputs: Dict[str, Any], return_full_text: bool = True,
                    return_type: Any = None, skip_special_tokens: bool = True,
                    **_: Any) -> List[Any]:
        if return_type is not None:
            return_full_text = return_type != "new_text"
        tokens = model_outputs["tokens"].numpy().tolist()
        n, width = model_outputs["per_prompt"], model_outputs["padded_length"]
        records: List[Any] = []
        for i, length in enumerate(model_outputs["prompt_lengths"]):
            group = []
            for row in tokens[i * n:(i + 1) * n]:
                if self.is_encoder_decoder:
                    ids = row[1:]  # after the decoder start token
                else:
                    ids = row[width - length:] if return_full_text else row[width:]
                group.append(self._record(ids, skip_special_tokens))
            records.append(group[0] if n == 1 else group)
        return records

    def _record(self, ids: List[int], skip_special_tokens: bool) -> Dict[str, Any]:
        record: Dict[str, Any] = {"generated_token_ids": ids}
        if self.tokenizer is not None:
            record["generated_text"] = self.tokenizer.decode(
                ids, skip_special_tokens=skip_special_tokens
            )
        return record
