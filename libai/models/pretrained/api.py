"""``from_pretrained`` / ``save_pretrained``: the one implementation behind every door.

The model classes' classmethods (:class:`PretrainedMixin`), LiBai's ``*LoaderHuggerFace``
classes and ``train.load_weight=<HF directory>`` all end in :func:`load_into` and
:func:`save_pretrained` here: read (rank 0) -> map by family -> check names and shapes ->
place by the layout (:mod:`~libai.models.pretrained.placement`).
"""
import contextlib
import logging
import os
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple, Type

from oneflow import nn

from libai.models.pretrained import families as _families  # noqa: F401  (fills the family table)
from libai.models.pretrained import files
from libai.models.pretrained.convert import LoadReport, PretrainedLoadError, to_hf, to_libai
from libai.models.pretrained.mapping import FamilyMapping, mapping_for_class
from libai.models.pretrained.placement import (
    assign_state, broadcast_object, gather_state, state_shapes,
)
from libai.utils.distributed import (
    ParallelLayout, get_rank, get_world_size, has_layout, synchronize,
)
from libai.utils.weight_readers import load_weight, register_weight_reader

__all__ = [
    "PretrainedMixin",
    "build_args",
    "from_pretrained",
    "load_into",
    "load_weight",
    "save_pretrained",
]

logger = logging.getLogger(__name__)


def _target_name(cls: Type) -> str:
    """The registered libai class ``cls`` is (or derives from)."""
    for klass in cls.__mro__:
        try:
            mapping_for_class(klass.__name__)
            return klass.__name__
        except ValueError:
            continue
    mapping_for_class(cls.__name__)  # raises the error that lists the supported classes
    raise AssertionError("unreachable")


def build_args(
    cls: Type, hf_config: Mapping[str, Any], overrides: Mapping[str, Any]
) -> Tuple[FamilyMapping, str, Dict[str, Any]]:
    """``(family, target, constructor arguments)`` of ``cls`` for ``config.json`` + overrides."""
    target = _target_name(cls)
    family = mapping_for_class(target, hf_config.get("model_type"))
    family.check_config(hf_config)
    args = family.model_args(hf_config, target)
    args.update(family.targets[target].extra_args(hf_config))
    args.update(overrides)
    return family, target, args


@contextlib.contextmanager
def _some_layout() -> Iterator[None]:
    """The active layout, or a one-process one when none is active in a one-process run."""
    if has_layout():
        yield
        return
    if get_world_size() > 1:
        raise RuntimeError(
            "from_pretrained in a multi-process run needs the parallel layout: call it inside "
            "`with ParallelLayout.from_config(cfg.train.dist):`"
        )
    with ParallelLayout.from_config({}, world_size=1, rank=0):
        yield


def _warn_activation_mismatch(model: nn.Module, hf_config: Mapping[str, Any], path: str) -> None:
    """The weights load whatever the activation; outputs then differ from the checkpoint's own,
    silently. Say so when ``config.json``'s activation is not the one the model computes."""
    from libai.models.pretrained.families.common import HF_TO_LIBAI_ACTIVATION

    key = "hidden_act" if "hidden_act" in hf_config else "activation_function"
    theirs = HF_TO_LIBAI_ACTIVATION.get(str(hf_config.get(key, "")))
    ours = sorted({str(getattr(m.activation_func, "name", "")) for m in model.modules()
                   if hasattr(m, "activation_func")} - {""})
    if theirs is None or not ours or ours == [theirs]:
        return
    logger.warning(
        "%s computes the activation %s but %s/config.json sets %s=%r (%s in libai): the weights "
        "load, but the outputs will differ from the checkpoint's. Set the model's activation to %r "
        "(e.g. model.cfg.activation / hidden_act) or use the matching checkpoint",
        type(model).__name__, " and ".join(repr(a) for a in ours), path, key, hf_config.get(key), theirs, theirs)


def _missing_name(entry: str) -> str:
    """The libai tensor name in a :class:`LoadReport` ``missing`` entry."""
    if entry.endswith(")") and " (for " in entry:
        return entry.rsplit(" (for ", 1)[1][:-1]
    return entry.split(" (", 1)[0]


def _split_missing(missing: Any, backbone_prefix: str) -> Tuple[list, list]:
    """``(task head, backbone)`` entries of ``missing``: with a backbone prefix (``bert.``), a
    tensor outside it belongs to the class's own head (``classifier.weight``)."""
    if not backbone_prefix:
        return [], list(missing)
    head = [m for m in missing if not _missing_name(m).startswith(backbone_prefix)]
    return head, [m for m in missing if m not in head]


def from_pretrained(cls: Type[nn.Module], path: str, strict: bool = True, **overrides: Any) -> nn.Module:
    """Build ``cls`` with the sizes of ``path/config.json`` (plus ``overrides``) and load its weights.

    Args:
        path: a Hugging Face model directory (``config.json`` and safetensors / ``.bin``).
        strict: raise when a tensor of the base model (the backbone) is missing from the
            checkpoint (otherwise keep the model's initial value and log it). A task head the
            checkpoint lacks (``BertForClassification`` from a base BERT) is initialised with a
            warning naming it, as Hugging Face does, also when ``strict``. Unexpected tensors
            and shape mismatches always raise.
        overrides: libai constructor arguments that replace the mapped ones (dropouts,
            fusions; sizes only if the weights still fit).
    """
    hf_config = files.read_config(path)
    family, target, args = build_args(cls, hf_config, overrides)
    with _some_layout():
        model = cls(**args)
    load_into(model, path, strict=strict, hf_config=hf_config, family=family, target=target)
    return model


def load_into(
    model: nn.Module,
    path: str,
    strict: bool = True,
    hf_config: Optional[Mapping[str, Any]] = None,
    family: Optional[FamilyMapping] = None,
    target: Optional[str] = None,
) -> LoadReport:
    """Load the Hugging Face checkpoint ``path`` into an already built libai ``model``.

    This is what ``train.load_weight=<HF directory>`` does. Returns the :class:`LoadReport`
    (the same on every rank); raises :class:`PretrainedLoadError` when the weights do not fit.
    """
    if hf_config is None:
        hf_config = files.read_config(path)
    if target is None:
        target = _target_name(type(model))
    if family is None:
        family = mapping_for_class(target, hf_config.get("model_type"))
        family.check_config(hf_config)
    expected = state_shapes(model)
    arrays, report = None, None
    if get_rank() == 0:
        try:
            state = files.read_state_dict(path)
            arrays, report = to_libai(family, hf_config, target, state, expected)
        except Exception as exc:  # every rank must learn of it, or the others would hang
            report = exc
    report = broadcast_object(report)
    if isinstance(report, Exception):
        raise report
    head, backbone = _split_missing(report.missing, family.targets[target].prefix)
    if report.mismatched or report.unexpected or (strict and backbone):
        if strict and backbone:
            report.missing = backbone  # a new task head is not the problem
        raise PretrainedLoadError(report.describe(path, type(model).__name__))
    if head:
        # Hugging Face's behaviour: a base checkpoint fine-tuned with a new task head.
        logger.warning("%s: the task head %s is not in %s and was newly initialised; train it "
                       "(fine-tune) before using the model's predictions. The backbone loaded in full.",
                       type(model).__name__, ", ".join(_missing_name(m) for m in head), path)
    if backbone:
        logger.warning("%s: kept the initial values of %d tensors absent from %s: %s",
                       type(model).__name__, len(backbone), path, ", ".join(backbone))
    if report.unused_heads:
        logger.info("%s does not use these tensors of %s (another head): %s",
                    type(model).__name__, path, ", ".join(report.unused_heads))
    _warn_activation_mismatch(model, hf_config, path)
    assign_state(model, arrays)
    model.pretrained_config = dict(hf_config)
    logger.info("Loaded %s from %s (%s)", type(model).__name__, path, family.__class__.__name__)
    return report


def export_state(model: nn.Module) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """``(config.json dict, {HF name: array})`` of ``model`` (call on every rank)."""
    target = _target_name(type(model))
    family = mapping_for_class(target)
    base = getattr(model, "pretrained_config", None) or {}
    hf_config = family.hf_config(model, target, base)
    return hf_config, to_hf(family, hf_config, target, gather_state(model))


def save_pretrained(model: nn.Module, path: str) -> None:
    """Write ``model`` as a Hugging Face directory (``model.safetensors`` + ``config.json``).

    Call on every rank (sharded tensors are gathered); rank 0 writes. ``transformers``'
    ``AutoModel...from_pretrained(path)`` then computes the same function.
    """
    hf_config, state = export_state(model)
    if get_rank() == 0:
        files.write_checkpoint(path, state, hf_config)
        logger.info("Saved %s in Hugging Face format to %s", type(model).__name__,
                    os.path.abspath(path))
    if get_world_size() > 1:
        synchronize()  # every rank returns only once the directory is complete


class PretrainedMixin:
    """Adds ``Model.from_pretrained(path, **overrides)`` and ``model.save_pretrained(path)``."""

    @classmethod
    def from_pretrained(cls, path: str, strict: bool = True, **overrides: Any) -> Any:
        """See :func:`libai.models.pretrained.api.from_pretrained`."""
        return from_pretrained(cls, path, strict=strict, **overrides)

    def save_pretrained(self, path: str) -> None:
        """See :func:`libai.models.pretrained.api.save_pretrained`."""
        save_pretrained(self, path)


def _load_hf_directory(model: nn.Module, path: str) -> None:
    load_into(model, path)


# ``train.load_weight=<Hugging Face directory>``: the engine loads weights through
# libai.utils.weight_readers (it never imports the models); this registers the format there.
register_weight_reader("Hugging Face directory", files.is_hf_directory, _load_hf_directory)
