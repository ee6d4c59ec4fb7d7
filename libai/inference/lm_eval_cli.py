"""``lm_eval``'s command line with libai's model registered as ``--model libai``.

lm-evaluation-harness 0.4 finds models in its registry (``lm_eval.api.registry``), filled by
its own modules; it has no plugin entry point for other packages. This module registers
:class:`PretrainedLibaiLM` (:class:`~libai.evaluation.lm_eval_adapter.LibaiLM` loading
``pretrained=DIR``, a Hugging Face directory, with libai's Auto classes) under the name ``libai``
and then runs lm_eval's own command line unchanged, so every lm_eval option works::

    HF_DATASETS_OFFLINE=1 python -m libai.inference.lm_eval_cli run --model libai \\
        --model_args pretrained=path/to/hf_dir --batch_size 8 \\
        --tasks my_task --include_path path/to/task_dir --output_path results/

From Python, call :func:`register` before ``lm_eval.simple_evaluate(model="libai", ...)``, or
pass a ``LibaiLM`` instance as ``model``.
"""
import sys
from typing import Any, List, Optional, Tuple

from libai.evaluation.lm_eval_adapter import LibaiLM

__all__ = ["PretrainedLibaiLM", "load_pretrained", "register", "main"]

NAME = "libai"


def load_pretrained(path: str) -> Tuple[Any, Any]:
    """``(model, tokenizer)`` of a Hugging Face directory (config, weights, tokenizer files)."""
    from libai.models import AutoModelForCausalLM
    from libai.tokenizer import AutoTokenizer

    # the family (Llama, GPT-2, ...) comes from config.json's model_type
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


class PretrainedLibaiLM(LibaiLM):
    """:class:`LibaiLM` built from ``pretrained=DIR`` (what lm_eval's ``--model_args`` give)."""

    def __init__(self, pretrained: Optional[str] = None, **options: Any) -> None:
        if pretrained is None:
            raise ValueError("--model libai needs --model_args pretrained=DIR (a Hugging Face "
                             "model directory with its tokenizer files)")
        model, tokenizer = load_pretrained(str(pretrained))
        super().__init__(model=model, tokenizer=tokenizer, **options)


def register() -> None:
    """Register :class:`PretrainedLibaiLM` as lm_eval's ``libai`` model (idempotent).

    lm_eval's own models (``hf``, ...) are registered first: its registry loads them only when
    it is empty, which it would no longer be.
    """
    import lm_eval.models  # noqa: F401  (fills the registry with lm_eval's models, lazily)
    from lm_eval.api.registry import model_registry, register_model

    if NAME not in model_registry:
        register_model(NAME)(PretrainedLibaiLM)


def main(argv: Optional[List[str]] = None) -> None:
    """Run lm_eval's command line (``argv`` defaults to this process's arguments)."""
    register()
    from lm_eval.__main__ import cli_evaluate

    if argv is not None:
        sys.argv = [sys.argv[0]] + list(argv)
    cli_evaluate()


if __name__ == "__main__":
    main()
