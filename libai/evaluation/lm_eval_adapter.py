"""A libai causal LM as an ``lm_eval`` (lm-evaluation-harness 0.4) model.

:class:`LibaiLM` implements lm_eval's ``LM`` interface on libai's batched forward and
``generate``, through lm_eval's own ``TemplateLM`` (which splits context and continuation the way
every lm_eval backend does), so a task scores the same text the same way as with the ``hf``
backend on the same checkpoint:

- ``loglikelihood``: ``(context, continuation)`` -> ``(sum of the continuation's token
  log-probabilities, whether greedy decoding would produce it)``; the inputs are the last
  ``max_length`` tokens of context + continuation, right-padded into batches (causal attention
  keeps the padding from mattering);
- ``loglikelihood_rolling``: a document's total log-probability over lm_eval's rolling windows;
- ``generate_until``: greedy (or sampled) continuation, cut at the first stop string.

From Python::

    import lm_eval
    from libai.evaluation.lm_eval_adapter import LibaiLM
    lm = LibaiLM(model=model, tokenizer=tokenizer)   # a libai causal LM and its tokenizer
    lm_eval.simple_evaluate(model=lm, tasks=[...], task_manager=...)

From the command line, :mod:`libai.inference.lm_eval_cli` registers the name ``libai`` (loading
``pretrained=DIR`` with libai's Auto classes) and runs lm_eval's own command line::

    python -m libai.inference.lm_eval_cli run --model libai --model_args pretrained=DIR ...

This module takes the model and tokenizer as values, so evaluation (a layer beside models and
tokenizers) imports neither; the engine never imports it (``.importlinter``). Evaluation runs in
one process on the layout the model was built with.
"""
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np
import oneflow as flow
try:  # the "eval" extra: pip install 'libai[eval]'
    from lm_eval import utils as lm_utils
    from lm_eval.api.model import TemplateLM
    from lm_eval.models.utils import (
        handle_stop_sequences,
        normalize_gen_kwargs,
        postprocess_generated_text,
    )
except ImportError as missing:
    raise ImportError(
        "libai's lm-evaluation-harness adapter needs lm_eval 0.4.13: pip install 'libai[eval]' "
        f"(or lm_eval==0.4.13); {missing}"
    ) from missing

__all__ = ["LibaiLM"]

Request = Tuple[Tuple[str, str], List[int], List[int]]


class LibaiLM(TemplateLM):
    """lm_eval's model interface over a libai causal LM.

    Args:
        model: a libai causal LM (``forward(input_ids)["prediction_scores"]``, ``generate``).
        tokenizer: ``encode``, ``decode``, ``eos_token_id`` (``bos_token_id``, ``pad_token_id``).
        batch_size: sequences per forward pass (lm_eval passes its ``--batch_size``).
        max_length: the longest input (default: the model's ``max_position_embeddings`` /
            ``max_seq_length``, else 2048).
        max_gen_toks: default number of new tokens in ``generate_until``.
        add_bos_token: encode with the tokenizer's BOS (None: the tokenizer's default).
        prefix_token_id: the token that stands for an empty context (default: BOS, else EOS).
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        batch_size: Any = 1,
        max_length: Optional[int] = None,
        max_gen_toks: int = 256,
        add_bos_token: Optional[bool] = None,
        prefix_token_id: Optional[int] = None,
        **unused: Any,
    ) -> None:
        super().__init__()
        if model is None or tokenizer is None:
            raise ValueError(
                "LibaiLM needs model= and tokenizer= (from the command line: "
                "python -m libai.inference.lm_eval_cli ... --model_args pretrained=DIR)"
            )
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.batch_size = 1 if str(batch_size).startswith("auto") else int(batch_size)
        self._max_length = int(max_length) if max_length else _model_max_length(model)
        self.max_gen_toks = int(max_gen_toks)
        self.add_bos_token = add_bos_token
        self._prefix_token_id = prefix_token_id

    # ------------------------------------------------------------------ tokens
    @property
    def eot_token_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    @property
    def prefix_token_id(self) -> int:
        if self._prefix_token_id is not None:
            return int(self._prefix_token_id)
        bos = getattr(self.tokenizer, "bos_token_id", None)
        return int(bos) if bos is not None else self.eot_token_id

    @property
    def max_length(self) -> int:
        return self._max_length

    @property
    def tokenizer_name(self) -> str:
        return type(self.tokenizer).__name__

    def tok_encode(self, string: str, add_special_tokens: Optional[bool] = None,
                   left_truncate_len: Optional[int] = None, **kwargs: Any) -> List[int]:
        if add_special_tokens is None:
            add_special_tokens = self.add_bos_token
        options = {} if add_special_tokens is None else {"add_special_tokens": add_special_tokens}
        ids = list(self.tokenizer.encode(string, **options))
        return ids[-left_truncate_len:] if left_truncate_len else ids

    def apply_chat_template(self, chat_history: List[dict], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(
            chat_history, add_generation_prompt=add_generation_prompt, tokenize=False)

    # ------------------------------------------------------------------ scoring
    def _log_probs(self, sequences: Sequence[List[int]]) -> List[np.ndarray]:
        """Log-softmax of the logits of each sequence (right-padded into one batch)."""
        longest = max(len(seq) for seq in sequences)
        pad = getattr(self.tokenizer, "pad_token_id", None) or 0
        ids = [list(seq) + [pad] * (longest - len(seq)) for seq in sequences]
        with flow.no_grad():
            logits = self.model(flow.tensor(ids, dtype=flow.long))["prediction_scores"]
            log_probs = flow.log_softmax(logits.to(flow.float32), dim=-1)
        if log_probs.is_global:
            whole = [flow.sbp.broadcast] * len(log_probs.sbp)  # every rank holds all of it
            log_probs = log_probs.to_global(sbp=whole).to_local()
        array = log_probs.numpy()
        return [array[i, : len(seq)] for i, seq in enumerate(sequences)]

    def _loglikelihood_tokens(self, requests: List[Request], disable_tqdm: bool = False,
                              **kwargs: Any) -> List[Tuple[float, bool]]:
        results: List[Tuple[float, bool]] = []
        for start in range(0, len(requests), self.batch_size):
            chunk = requests[start:start + self.batch_size]
            inputs = [(ctx + cont)[-(self.max_length + 1):][:-1] for _, ctx, cont in chunk]
            for (key, _, cont), inp, scores in zip(chunk, inputs, self._log_probs(inputs)):
                span = scores[len(inp) - len(cont):]  # position t scores token t + 1
                picked = span[np.arange(len(cont)), cont]
                answer = (float(picked.sum()), bool((span.argmax(-1) == np.asarray(cont)).all()))
                results.append(answer)
                if key is not None:
                    self.cache_hook.add_partial("loglikelihood", key, answer)
        return results

    def loglikelihood_rolling(self, requests: List[Any], disable_tqdm: bool = False) -> List[float]:
        results = []
        for (string,) in [req.args for req in requests]:
            windows = [
                (None,) + lm_utils.make_disjoint_window(window)
                for window in lm_utils.get_rolling_token_windows(
                    token_list=self.tok_encode(string), prefix_token=self.prefix_token_id,
                    max_seq_len=self.max_length, context_len=1)
            ]
            total = sum(score for score, _ in self._loglikelihood_tokens(windows))
            results.append(total)
            self.cache_hook.add_partial("loglikelihood_rolling", (string,), total)
        return results

    # ------------------------------------------------------------------ generation
    def generate_until(self, requests: List[Any], disable_tqdm: bool = False) -> List[str]:
        """Continuations, ``batch_size`` requests at a time (consecutive requests with the same
        generation settings share a left-padded batch)."""
        eos = self.tokenizer.decode([self.eot_token_id], skip_special_tokens=False)
        args = [req.args for req in requests]
        results: List[str] = []
        while len(results) < len(args):
            start, settings = len(results), args[len(results)][1]
            chunk = [context for context, kw in args[start:start + self.batch_size] if kw == settings]
            kwargs = normalize_gen_kwargs(dict(settings), self.max_gen_toks)
            until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)
            new_tokens = kwargs.pop("max_gen_toks")
            for context, text in zip(chunk, self.generate_texts(chunk, until, new_tokens, **kwargs)):
                results.append(text)
                self.cache_hook.add_partial("generate_until", (context, settings), text)
        return results

    def generate_texts(self, contexts: Sequence[str], until: Sequence[str], max_new_tokens: int,
                       do_sample: bool = False, temperature: float = 0.0, **kwargs: Any) -> List[str]:
        """The continuations of ``contexts`` (one left-padded batch), each cut before the first
        of ``until``."""
        room = max(1, self.max_length - max_new_tokens)
        prompts = [self.tok_encode(context, left_truncate_len=room) for context in contexts]
        longest = max(len(prompt) for prompt in prompts)
        pad = self.eot_token_id
        ids = [[pad] * (longest - len(p)) + p for p in prompts]
        mask = [[0] * (longest - len(p)) + [1] * len(p) for p in prompts]
        sampling = {"do_sample": True, "temperature": temperature} if do_sample else {}
        for name in ("top_k", "top_p"):
            if name in kwargs:
                sampling[name] = kwargs.pop(name)
        tokens = self.model.generate(
            flow.tensor(ids, dtype=flow.long), attention_mask=flow.tensor(mask, dtype=flow.long),
            max_new_tokens=max_new_tokens, eos_token_id=pad, pad_token_id=pad, **sampling,
        )
        texts = [self.tokenizer.decode(row[longest:].tolist()) for row in tokens]
        return [postprocess_generated_text(text, list(until), None) for text in texts]


def _model_max_length(model: Any) -> int:
    config = getattr(model, "config", None) or {}
    for key in ("max_position_embeddings", "max_seq_length", "n_positions"):
        value = config.get(key) if isinstance(config, dict) else getattr(config, key, None)
        if value:
            return int(value)
    return 2048
