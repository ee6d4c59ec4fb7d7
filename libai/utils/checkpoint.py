"""Save and restore a training run: model, optimizer, scheduler, RNG and anything else.

A checkpoint is a directory ``save_dir/<name>/`` with one *part* per object, each written with
``flow.save`` (so ``load_weight`` can read the model alone), a small ``extra`` part (iteration and
such) and a ``manifest.json`` written last. Three decisions shape this module:

* **Layout-free.** Global tensors are gathered into their full value on rank 0 by
  ``flow.save(..., global_dst_rank=0)``; loading broadcasts them back and ``load_state_dict``
  re-splits them, so a checkpoint written under one parallel layout loads under any other, or
  in a single process.
* **Atomic.** Everything is written under ``save_dir/.tmp-<name>-<pid>`` and renamed into place
  once complete; ``last_checkpoint`` is then replaced with ``os.replace``. A run killed mid-save
  leaves the previous checkpoint and ``last_checkpoint`` untouched; its temporary directory is
  removed by the next save. The manifest records every file's size, so a truncated or partial
  checkpoint is refused with a clear error instead of half-loading. (The on-disk rules live in
  :mod:`libai.utils.checkpoint_files`.)
* **LiBai's checkpoints load too.** A directory written by upstream LiBai's ``Checkpointer``
  (one ``flow.save`` directory per part, no manifest, iteration in the name) is recognised by
  :func:`~libai.utils.checkpoint_files.detect_format` and read through
  :mod:`libai.utils.checkpoint_upstream` (parameter names, graph-mode optimizer state and
  scheduler state translated); ``tools/convert_checkpoint.py --to libai-upstream`` writes one.
* **Collective where it must be, decided on rank 0.** In a multi-process run ``save``, ``load``
  and ``resume_or_load`` must be called on every rank (the gather/broadcast of tensors is a
  collective); rank 0 alone touches the disk and shares its verdict, so all ranks raise the same
  error together instead of some of them hanging (:mod:`libai.utils.checkpoint_collective`).

How a read model state is fitted into the model (names, layouts, shapes, the missing and
unexpected keys) and the :class:`LoadReport` of a load live in
:mod:`libai.utils.checkpoint_model_state`.
"""
import logging
import os
import shutil
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional

import oneflow as flow

from libai.utils import distributed as dist
from libai.utils import checkpoint_upstream as upstream
from libai.utils.checkpoint_checksums import say_unchecked, verify_enabled
from libai.utils.checkpoint_collective import all_gather_objects, decide_on_rank0
from libai.utils.checkpoint_files import (
    EXTRA_PART,
    FORMAT_NAMES,
    LIBAI,
    LIBAI_UPSTREAM,
    MODEL_PART,
    TMP_PREFIX,
    CheckpointError,
    check_name,
    checkpoint_name,
    clean_leftovers,
    detect_format,
    finalize_checkpoint,
    keep_last_checkpoints,
    list_checkpoints,
    read_last_checkpoint,
    resume_candidates,
    set_aside,
    verify_checkpoint,
    weights_kind,
)
from libai.utils.checkpoint_messages import (  # noqa: F401  (LiBai's names, re-exported)
    get_missing_parameters_message,
    get_unexpected_parameters_message,
)
from libai.utils.checkpoint_model_state import LoadReport, load_model_state
from libai.utils.rng import RNGState  # re-exported: its home is libai.utils.rng

logger = logging.getLogger(__name__)

__all__ = [
    "Checkpointer",
    "CheckpointError",
    "LoadReport",
    "RNGState",
    "checkpoint_name",
    "detect_format",
    "get_missing_parameters_message",
    "get_unexpected_parameters_message",
    "keep_last_checkpoints",
    "verify_checkpoint",
]


# ---------------------------------------------------------------------------------------------
# The checkpointer
# ---------------------------------------------------------------------------------------------
class Checkpointer:
    """Save and load a model together with any objects that have ``state_dict``.

    Args:
        model: the (eager) module whose ``state_dict`` is the ``model`` part.
        save_dir: where checkpoints and ``last_checkpoint`` live; may be empty for a
            load-only checkpointer.
        save_to_disk: whether this process writes files. Defaults to "rank 0 only". Pass
            ``False`` on *every* rank to turn saving off; in a multi-process run only rank 0
            can write, because that is where global tensors are gathered.
        verify: whether loading checks every file's checksum (``train.checkpointer.verify``);
            ``False`` only for trusted storage. ``$LIBAI_CHECKPOINT_VERIFY`` overrides it.
        **checkpointables: named objects with ``state_dict()``/``load_state_dict()``
            (optimizer, scheduler, sampler, hooks, :class:`RNGState`, trainer state). An object
            with ``checkpoint_per_rank = True`` keeps one state per rank (see :class:`RNGState`).
    """

    def __init__(
        self, model: flow.nn.Module, save_dir: str = "", *, save_to_disk: Optional[bool] = None,
        verify: Optional[bool] = None, **checkpointables: Any,
    ) -> None:
        for name, obj in [(MODEL_PART, model), *checkpointables.items()]:
            if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
                raise TypeError(
                    f"checkpointable {name!r} ({type(obj).__name__}) needs state_dict() and "
                    "load_state_dict(); wrap it in a small object that provides them"
                )
        if EXTRA_PART in checkpointables:
            raise ValueError(
                f"{EXTRA_PART!r} is reserved for save(**extra) data; register the object "
                "under another name"
            )
        for name in checkpointables:
            check_name(name, "checkpointable name")
        self.model = model
        self.save_dir = os.path.expanduser(save_dir or "")
        self.checkpointables: Dict[str, Any] = dict(checkpointables)
        self._global = dist.get_world_size() > 1
        self._enabled = save_to_disk is not False
        if self._global and save_to_disk and not dist.is_main_process():
            raise ValueError(
                f"save_to_disk=True on rank {dist.get_rank()}: in a multi-process run only rank 0 "
                "writes (global tensors are gathered there). Leave save_to_disk unset."
            )
        self._writer = self._enabled and dist.is_main_process()
        self.last_load_report = LoadReport()
        self.verify = verify
        self.last_loaded = ""  # the checkpoint the last load read (resume may fall back)
        self._verified: Dict[str, Dict[str, Any]] = {}  # path -> manifest, checked by _resume_target

    # ----------------------------------------------------------------- saving
    def save(self, name: str, *, tag_last_checkpoint: bool = True, **extra: Any) -> str:
        """Write ``save_dir/name/`` atomically and return its path.

        ``extra`` (e.g. ``iteration=999``) is returned by :meth:`load`. With
        ``tag_last_checkpoint=False`` (for ``model_best``) ``last_checkpoint`` is left alone, so
        ``--resume`` keeps continuing from the newest checkpoint. Call on every rank.
        """
        check_name(name, "checkpoint name")
        if not self.save_dir:
            raise ValueError("this Checkpointer has no save_dir; pass save_dir=... to save")
        final = os.path.join(self.save_dir, name)
        if not self._enabled:
            logger.info("Saving is disabled (save_to_disk=False); not writing %s", final)
            return final
        tmp = os.path.join(self.save_dir, f"{TMP_PREFIX}{name}-{os.getpid()}")
        if self._writer:
            os.makedirs(self.save_dir, exist_ok=True)
            clean_leftovers(self.save_dir)
            os.makedirs(tmp)
        try:
            parts = {}
            for part, obj in [(MODEL_PART, self.model), *self.checkpointables.items()]:
                parts[part] = self._write_part(part, obj, os.path.join(tmp, part))
            self._write_state(EXTRA_PART, dict(extra), os.path.join(tmp, EXTRA_PART))
            info = self._manifest_info()
            self._decide_on_rank0(
                lambda: finalize_checkpoint(tmp, final, parts, sorted(extra),
                                            dist.get_world_size(), tag_last_checkpoint, info)
            )
        except BaseException:
            if self._writer:
                shutil.rmtree(tmp, ignore_errors=True)
            raise
        logger.info("Saved checkpoint %s", final)
        return final

    def _manifest_info(self) -> Dict[str, Any]:
        """The model's class and, per optimizer, its parameters' names in the order its state
        numbers them: what writing LiBai's graph-mode layout needs (tools/convert_checkpoint.py)."""
        names = {id(p): n for n, p in self.model.named_parameters()}
        params: Dict[str, List[str]] = {}
        for part, obj in self.checkpointables.items():
            if not (hasattr(obj, "param_groups") or part == "optimizer"):
                continue
            try:
                ordered = upstream._optimizer_params(obj)
            except (TypeError, AttributeError):
                continue
            if all(id(p) in names for p in ordered):
                params[part] = [names[id(p)] for p in ordered]
        cls = type(self.model)
        return {"model_class": f"{cls.__module__}.{cls.__qualname__}", "param_names": params}

    def _write_part(self, part: str, obj: Any, path: str) -> Dict[str, bool]:
        state = obj.state_dict()
        per_rank = bool(getattr(obj, "checkpoint_per_rank", False))
        if per_rank:
            if _tensor_kinds(state):
                raise CheckpointError(
                    f"checkpointable {part!r} is per-rank but its state holds OneFlow tensors; "
                    "per-rank state must be plain Python/NumPy (convert with .numpy())"
                )
            state = {"per_rank": self._all_gather(state)}
        self._write_state(part, state, path)
        return {"per_rank": per_rank}

    def _write_state(self, part: str, state: Any, path: str) -> None:
        kinds = _tensor_kinds(state)
        if kinds == {"local", "global"}:
            raise CheckpointError(
                f"the state of {part!r} mixes local and global tensors, which cannot be saved "
                "together; make them all global (to_global) or all local"
            )
        if "global" in kinds:
            # A collective: every rank takes part, rank 0 receives full values and writes.
            flow.save(state, path, global_dst_rank=0)
        elif self._writer:
            flow.save(state, path)

    # ----------------------------------------------------------------- loading
    def load(self, path: str, checkpointables: Optional[Iterable[str]] = None) -> Dict[str, Any]:
        """Load the model and the named checkpointables (default: all) from ``path``.

        Returns the ``extra`` data given to :meth:`save` (e.g. ``{"iteration": 999}``).
        ``path`` may also be a name inside ``save_dir``. Call on every rank.
        """
        path = self._resolve(path)
        kind = self._decide_on_rank0(lambda: detect_format(path))
        if kind == LIBAI_UPSTREAM:
            self._say_unchecked(path, kind)
            return self._load_libai_layout(path, checkpointables)
        manifest = self._verified.pop(path, None) or self._decide_on_rank0(
            lambda: verify_checkpoint(path, verify_enabled(self.verify)))
        report = LoadReport(format=kind)
        names = self._select(checkpointables, manifest, report)
        load_model_state(self.model, self._read_part(path, MODEL_PART), path, report)
        report.loaded_parts.append(MODEL_PART)
        for name in names:
            self._load_checkpointable(path, name, manifest["parts"][name], report)
        report.skipped_parts = sorted(set(manifest["parts"]) - {MODEL_PART} - set(names))
        if report.skipped_parts:
            logger.info("Not loaded from %s: %s", path, ", ".join(report.skipped_parts))
        self.last_load_report = report
        self.last_loaded = path
        logger.info("Loaded checkpoint %s (%s)", path, ", ".join(report.loaded_parts))
        return dict(self._read_part(path, EXTRA_PART))

    def load_weights_only(self, path: str) -> None:
        """Load only the model's weights (``train.load_weight``).

        ``path`` is a checkpoint written by :meth:`save` or by LiBai's ``Checkpointer``, or a
        directory written by ``flow.save(model.state_dict(), path)`` (converted pretrained
        weights, or the ``model`` part of a LiBai checkpoint).
        """
        path = self._resolve(path)
        kind = self._decide_on_rank0(lambda: weights_kind(path, verify_enabled(self.verify)))
        if kind != "checkpoint":
            self._say_unchecked(path, kind)
        weights = path if kind == "state_dict" else os.path.join(path, MODEL_PART)
        state = self._read(weights, path)
        report = LoadReport(loaded_parts=[MODEL_PART],
                            format=LIBAI if kind == "checkpoint" else kind)
        load_model_state(self.model, state, path, report)
        self.last_load_report = report
        self.last_loaded = path
        logger.info("Loaded model weights from %s", path)

    def resume_or_load(self, path: Optional[str], resume: bool = True) -> Dict[str, Any]:
        """Resume from ``last_checkpoint`` if asked and one exists, else load ``path`` as weights.

        Resuming loads every checkpointable and returns the saved extra data; loading weights
        (or starting from scratch when ``path`` is empty) returns ``{}``. When the checkpoint
        ``last_checkpoint`` names fails verification, the newest one that passes is resumed
        from, with a warning naming the bad file; nothing is deleted. Call on every rank.
        """
        if resume:
            last, manifest = self._decide_on_rank0(self._resume_target)
            if last:
                logger.info("Resuming from %s", last)
                if manifest is not None:
                    self._verified[last] = manifest
                return self.load(last)
            logger.info("No checkpoint to resume from in %r", self.save_dir)
        if path:
            self.load_weights_only(path)
        else:
            logger.info("No weights to load: starting from scratch")
        return {}

    def _say_unchecked(self, path: str, kind: str) -> None:
        if verify_enabled(self.verify):
            say_unchecked(path, f"is {FORMAT_NAMES[kind]}, which records no checksums: its content "
                                "cannot be verified")

    def _resume_target(self) -> "tuple[str, Optional[Dict[str, Any]]]":
        """The newest checkpoint that verifies (``last_checkpoint``'s first) and its manifest
        (``None`` for LiBai's layout), or ``("", None)``; each one refused is warned about."""
        if self._writer and os.path.isdir(self.save_dir):
            clean_leftovers(self.save_dir)
        if not self.get_checkpoint_file():
            return "", None
        refused = []
        for name in resume_candidates(self.save_dir):
            path = os.path.join(self.save_dir, name)
            try:
                if detect_format(path) == LIBAI_UPSTREAM:
                    manifest = None
                else:
                    manifest = verify_checkpoint(path, verify_enabled(self.verify))
            except CheckpointError as exc:
                kept = set_aside(self.save_dir, name) if self._writer and os.path.isdir(path) else name
                logger.warning("Not resuming from %s: %s It is kept as %s.", path, exc, kept)
                refused.append(name)
                continue
            if refused:
                logger.warning("Resuming from %s, the newest checkpoint that verifies, instead of "
                               "%s, which failed verification (kept, renamed, see above)",
                               path, ", ".join(refused))
            return path, manifest
        raise CheckpointError(
            f"no checkpoint in {self.save_dir} verifies (tried {', '.join(refused)}; the warnings "
            "above name each bad file). Restore one from a copy, or start without --resume."
        )

    def _load_libai_layout(self, path: str, checkpointables: Optional[Iterable[str]]) -> Dict[str, Any]:
        """Load a checkpoint written by upstream LiBai's ``Checkpointer`` (see
        :mod:`libai.utils.checkpoint_upstream`); return ``{"iteration": n, "iter": n}``."""
        seen = FORMAT_NAMES[LIBAI_UPSTREAM]
        parts = self._decide_on_rank0(
            lambda: sorted(e for e in os.listdir(path) if not e.startswith(".")))
        report = LoadReport(format=LIBAI_UPSTREAM)
        load_model_state(self.model, self._read_part(path, MODEL_PART), path, report)
        report.loaded_parts.append(MODEL_PART)
        wanted = list(self.checkpointables) if checkpointables is None else list(checkpointables)
        for name in wanted:
            if name not in self.checkpointables:
                raise KeyError(f"no checkpointable named {name!r}; registered: "
                               f"{sorted(self.checkpointables)}")
        scheduler_state = None
        for name in wanted:
            obj = self.checkpointables[name]
            try:
                if name in parts:
                    state = self._read_part(path, name)
                    if _is_scheduler(obj):
                        scheduler_state = state
                        state = upstream.scheduler_state_from_libai(state, obj.state_dict())
                    elif name == "optimizer" and _is_optimizer(obj):
                        upstream.check_optimizer_state(state, obj, path)
                elif name == "optimizer" and "graph" in parts and _is_optimizer(obj):
                    state = upstream.optimizer_state_from_graph(
                        self._read_part(path, "graph"), obj, self.model, report.renamed_keys)
                else:
                    report.absent_parts.append(name)
                    continue
                obj.load_state_dict(state)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise CheckpointError(
                    f"cannot restore {name!r} from {path} ({seen}): {type(exc).__name__}: {exc}"
                ) from exc
            report.loaded_parts.append(name)
        if report.absent_parts:
            logger.info("%s is %s: it holds no state for %s (LiBai does not save it); they start "
                        "fresh", path, seen, ", ".join(report.absent_parts))
        report.skipped_parts = sorted(set(parts) - set(report.loaded_parts) - {"graph"})
        if scheduler_state is None and "lr_scheduler" in parts:
            scheduler_state = self._read_part(path, "lr_scheduler")
        iteration = self._libai_iteration(path, scheduler_state)
        self.last_load_report = report
        logger.info("Loaded %s (%s): %s, iteration %d", path, seen, ", ".join(report.loaded_parts),
                    iteration)
        return {"iteration": iteration, "iter": iteration}

    @staticmethod
    def _libai_iteration(path: str, scheduler_state: Optional[Mapping[str, Any]]) -> int:
        """LiBai's rule (the number ending the name); for ``model_final`` and other names
        without one, the scheduler's step count (it steps once per iteration), else 0."""
        iteration = upstream.iteration_from_name(os.path.basename(os.path.normpath(path)))
        if iteration is not None:
            return iteration
        if isinstance(scheduler_state, Mapping) and "last_step" in scheduler_state:
            iteration = int(scheduler_state["last_step"]) - 1
            logger.info("%s has no iteration in its name; its LR scheduler has taken %d steps, so "
                        "it is the state after iteration %d", path, iteration + 1, iteration)
            return max(iteration, 0)
        logger.info("%s has no iteration in its name and no LR scheduler state: iteration 0 "
                    "(LiBai's rule)", path)
        return 0

    def _select(
        self, names: Optional[Iterable[str]], manifest: Dict[str, Any], report: LoadReport
    ) -> List[str]:
        saved = manifest["parts"]
        if names is None:
            report.absent_parts = [n for n in self.checkpointables if n not in saved]
            if report.absent_parts:
                logger.warning("Checkpoint has no state for %s; they keep their current state",
                               ", ".join(report.absent_parts))
            return [n for n in self.checkpointables if n in saved]
        names = list(names)
        for name in names:
            if name not in self.checkpointables:
                raise KeyError(f"no checkpointable named {name!r}; registered: "
                               f"{sorted(self.checkpointables)}")
            if name not in saved:
                raise CheckpointError(f"the checkpoint has no part {name!r}; it holds "
                                      f"{sorted(saved)}")
        return names

    def _load_checkpointable(
        self, path: str, name: str, info: Dict[str, Any], report: LoadReport
    ) -> None:
        state = self._read_part(path, name)
        if info.get("per_rank"):
            states = state["per_rank"]
            if len(states) != dist.get_world_size():
                logger.warning(
                    "%r was saved by %d process(es) and this run has %d: not restored, each "
                    "process keeps its current state", name, len(states), dist.get_world_size())
                report.absent_parts.append(name)
                return
            state = states[dist.get_rank()]
        obj = self.checkpointables[name]
        if hasattr(obj, "param_groups") and isinstance(state, dict):
            upstream.match_optimizer_state(state, obj)
        obj.load_state_dict(state)
        report.loaded_parts.append(name)

    def _read_part(self, path: str, part: str) -> Any:
        return self._read(os.path.join(path, part), path)

    def _read(self, part_path: str, checkpoint: str) -> Any:
        try:
            return flow.load(part_path, global_src_rank=0 if self._global else None)
        except Exception as exc:  # flow.load raises many kinds; name the file for the user
            raise CheckpointError(
                f"cannot read {part_path} of checkpoint {checkpoint}: {type(exc).__name__}: "
                f"{exc}. The checkpoint is corrupt; load an earlier one."
            ) from exc

    def _resolve(self, path: str) -> str:
        if not path:
            raise ValueError("no checkpoint path given")
        path = os.path.expanduser(str(path))
        inside = os.path.join(self.save_dir, path) if self.save_dir else ""
        if not os.path.exists(path) and inside and os.path.exists(inside):
            return inside
        return path

    # ----------------------------------------------------------------- queries (local)
    def has_checkpoint(self) -> bool:
        """Whether ``save_dir/last_checkpoint`` names a checkpoint to resume from."""
        return bool(self.get_checkpoint_file())

    def get_checkpoint_file(self) -> str:
        """Path of the checkpoint named by ``last_checkpoint``, or ``""`` when there is none."""
        name = read_last_checkpoint(self.save_dir) if self.save_dir else ""
        return os.path.join(self.save_dir, name) if name else ""

    def get_all_checkpoint_files(self) -> List[str]:
        """Paths of every complete checkpoint in ``save_dir`` (libai's, and LiBai's
        Checkpointer layout), sorted by name."""
        if not self.save_dir:
            return []
        return [os.path.join(self.save_dir, n) for n in list_checkpoints(self.save_dir)]

    def keep_last(self, max_to_keep: Optional[int], prefix: str = "model_") -> List[str]:
        """Delete all but the newest ``max_to_keep`` ``<prefix><number>`` checkpoints.

        Never deletes other names (``model_final``, ``model_best``) or the checkpoint that
        ``last_checkpoint`` names. Returns the names deleted (always ``[]`` off rank 0).
        """
        if not self._writer or not self.save_dir:
            return []
        return keep_last_checkpoints(self.save_dir, max_to_keep, prefix)

    # ----------------------------------------------------------------- collectives
    def _all_gather(self, obj: Any) -> List[Any]:
        return all_gather_objects(obj) if self._global else [obj]

    def _decide_on_rank0(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on rank 0 and give every rank its result, or its error."""
        return decide_on_rank0(fn, collective=self._global)


def _is_scheduler(obj: Any) -> bool:
    return hasattr(obj, "last_step") and hasattr(obj, "get_last_lr")


def _is_optimizer(obj: Any) -> bool:
    return hasattr(obj, "param_groups") or hasattr(getattr(obj, "optimizer", None), "param_groups")


def _tensor_kinds(state: Any) -> set:
    """``{"local", "global"}`` subset: which kinds of OneFlow tensor ``state`` holds."""
    if isinstance(state, flow.Tensor):
        return {"global" if state.is_global else "local"}
    if isinstance(state, dict):
        values: Iterable[Any] = state.values()
    elif isinstance(state, (list, tuple)):
        values = state
    else:
        return set()
    kinds: set = set()
    for value in values:
        kinds |= _tensor_kinds(value)
    return kinds
