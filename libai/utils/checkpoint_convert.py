"""Write a libai checkpoint in upstream LiBai's layout, so a team can move back to LiBai.

``export_to_libai_upstream(src, dst)`` reads one of our checkpoints (``src``, or the newest one
in a ``save_dir``) and writes ``dst/<name>/`` the way LiBai's ``Checkpointer`` does: ``model``
(LiBai's parameter names), ``optimizer`` (the eager state, read by LiBai in eager mode),
``graph`` (the same moments by parameter name plus the step counter, read by LiBai in graph
mode), ``lr_scheduler``, and ``dst/last_checkpoint``. The name carries the iteration
(``model_0000004``), since that is where LiBai reads it from. ``tools/convert_checkpoint.py`` is
the command line. It runs in one process and needs no model: names come from the manifest.
"""
import logging
import os
import shutil
from typing import Any, Dict, Optional

import oneflow as flow

from libai.utils import checkpoint_upstream as upstream
from libai.utils.checkpoint_files import (
    EXTRA_PART, LAST_CHECKPOINT, LIBAI, LIBAI_UPSTREAM, MODEL_PART, TMP_PREFIX, CheckpointError,
    check_name, detect_format, read_last_checkpoint, verify_checkpoint)

__all__ = ["export_to_libai_upstream", "resolve_source"]

logger = logging.getLogger(__name__)


def resolve_source(src: str) -> str:
    """``src`` itself when it is a checkpoint, else the one its ``last_checkpoint`` names."""
    src = os.path.expanduser(src)
    if os.path.isdir(src) and os.path.isfile(os.path.join(src, LAST_CHECKPOINT)):
        name = read_last_checkpoint(src)
        if not name:
            raise CheckpointError(f"{src}/{LAST_CHECKPOINT} is empty: name a checkpoint directory")
        return os.path.join(src, name)
    return src


def export_to_libai_upstream(
    src: str, dst: str, name: Optional[str] = None, model_class: Optional[str] = None,
    tag_last_checkpoint: bool = True,
) -> str:
    """Write the libai checkpoint ``src`` into the LiBai ``save_dir`` ``dst``; return the path.

    Args:
        src: a checkpoint written by :class:`~libai.utils.checkpoint.Checkpointer`, or its
            ``save_dir`` (then the checkpoint ``last_checkpoint`` names).
        dst: LiBai's ``train.output_dir`` to write into (created when missing).
        name: the checkpoint's name; default ``model_<iteration:07d>``, which is how LiBai
            knows the iteration to resume from (it refuses to resume from ``model_final``).
        model_class: the model class (``GPTForPreTraining``...), when the manifest predates
            recording it; it picks the parameter names to translate.
        tag_last_checkpoint: write ``dst/last_checkpoint`` so LiBai's ``--resume`` finds it.
    """
    src = resolve_source(src)
    kind = detect_format(src)
    if kind == LIBAI_UPSTREAM:
        raise CheckpointError(f"{src} is already in LiBai's layout; copy it as it is")
    if kind != LIBAI:
        raise CheckpointError(f"{src} is a plain flow.save directory, not a libai checkpoint: "
                              "there is no optimizer, scheduler or iteration to export")
    manifest = verify_checkpoint(src)
    extra = flow.load(os.path.join(src, EXTRA_PART)) if EXTRA_PART in os.listdir(src) else {}
    iteration = extra.get("iteration")
    if name is None:
        if iteration is None:
            raise CheckpointError(f"{src} records no iteration; pass a name (e.g. model_0000999)")
        name = f"model_{int(iteration):07d}"
    check_name(name, "checkpoint name")
    if iteration is not None and upstream.iteration_from_name(name) not in (None, int(iteration)):
        logger.warning("the name %s says iteration %s, the checkpoint holds iteration %s; LiBai "
                       "reads the name", name, upstream.iteration_from_name(name), iteration)

    model = dict(flow.load(os.path.join(src, MODEL_PART)))
    family = upstream.family_of(model, model_class or manifest.get("model_class"))
    theirs = _model_for_libai(model, family)
    parts: Dict[str, Any] = {MODEL_PART: theirs}
    saved = manifest["parts"]
    if "optimizer" in saved:
        optimizer = flow.load(os.path.join(src, "optimizer"))
        parts["optimizer"] = optimizer
        names = manifest.get("param_names", {}).get("optimizer")
        if names:
            renamed = list(upstream.to_libai_names({n: None for n in names}, family))
            parts["graph"] = upstream.graph_state_from_optimizer(optimizer, renamed, theirs)
        else:
            logger.warning("%s does not record the optimizer's parameter names (written by an "
                           "older libai): no 'graph' part, so LiBai in graph mode resumes with "
                           "fresh optimizer moments (eager mode reads 'optimizer')", src)
    if "lr_scheduler" in saved:
        parts["lr_scheduler"] = upstream.scheduler_state_for_libai(
            flow.load(os.path.join(src, "lr_scheduler")))
    skipped = sorted(set(saved) - set(parts))
    if skipped:
        logger.info("not exported (LiBai has no place for them): %s", ", ".join(skipped))
    return _write(dst, name, parts, tag_last_checkpoint)


def _model_for_libai(model: Dict[str, Any], family: Optional[str]) -> Dict[str, Any]:
    """Our model state with LiBai's names, and the tensors LiBai's model has and ours lacks."""
    theirs = upstream.to_libai_names(model, family)
    if family == "t5":
        # a T5 in Google's flavour (linear_bias=False) has no LM-head bias, LiBai's model always
        # has one: a zero bias computes the same logits
        for key in [k for k in theirs if k.endswith("embedding.word_embeddings.weight")]:
            bias = key[: -len("embedding.word_embeddings.weight")] + "lm_head.bias"
            theirs.setdefault(bias, flow.zeros(theirs[key].shape[0], dtype=theirs[key].dtype))
    if family == "vision":
        # LiBai's SwinV2 keeps logit_scale as (1, heads, 1, 1)
        for key in [k for k in theirs if k.endswith("attn.logit_scale")]:
            if theirs[key].ndim == 3:
                theirs[key] = theirs[key].unsqueeze(0)
        upstream.swin_for_libai(theirs)  # q/k/v row order, Swin's index buffers
    return theirs


def _write(dst: str, name: str, parts: Dict[str, Any], tag_last: bool) -> str:
    os.makedirs(dst, exist_ok=True)
    final = os.path.join(dst, name)
    tmp = os.path.join(dst, f"{TMP_PREFIX}{name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        os.makedirs(tmp)
        for part, state in parts.items():
            flow.save(state, os.path.join(tmp, part))
        if os.path.exists(final):
            shutil.rmtree(final)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if tag_last:
        pointer = os.path.join(dst, f"{TMP_PREFIX}{LAST_CHECKPOINT}-{os.getpid()}")
        with open(pointer, "w") as f:
            f.write(name)
        os.replace(pointer, os.path.join(dst, LAST_CHECKPOINT))
    logger.info("Wrote %s in LiBai's layout (%s)", final, ", ".join(parts))
    return final
