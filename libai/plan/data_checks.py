"""Checks of the data against the model: the first samples of each dataset vs ``forward``.

The tokenizer and the datasets are built as the trainer builds them (nodes from the config, the
tokenizer handed to every dataset that takes one), then the first ``num_samples`` samples of the
training set and of each test set are compared with the model's ``forward``: field names,
integer dtypes for ids and labels, token ids inside the vocabulary, sequence lengths within the
positions, image sizes equal to the model's. Missing files (placeholder paths in a config made
on a laptop for a cluster) are warnings, not errors: the plan says what it could not check.
"""
import inspect
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import oneflow as flow

from libai.config import instantiate, instantiate_with
from libai.plan.problems import Problem

__all__ = ["DataFacts", "build_tokenizer_for_plan", "check_data", "forward_arguments"]


@dataclass
class DataFacts:
    """What the data told the planner."""

    train_size: Optional[int] = None
    sample_shapes: Dict[str, Tuple[int, ...]] = field(default_factory=dict)
    checked: List[str] = field(default_factory=list)  # datasets whose samples were checked

    @property
    def seq_length(self) -> Optional[int]:
        """Tokens per sample, when the samples carry token ids."""
        for name in ("input_ids", "encoder_input_ids", "tokens"):
            if name in self.sample_shapes and self.sample_shapes[name]:
                return int(self.sample_shapes[name][-1])
        return None


_MISSING_HINTS = ("does not exist", "not found", "no such file", "missing", "cannot find",
                  "no checkpoint", "could not find")


def _is_missing_file(exc: BaseException) -> bool:
    while exc is not None:
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            return True
        if any(h in str(exc).lower() for h in _MISSING_HINTS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _failure(key: str, what: str, exc: BaseException) -> Problem:
    first = _first_sentence(exc)
    if _is_missing_file(exc):
        return Problem(key, f"{what} skipped: {first} (fine for a plan made away from the data; "
                            "the run itself needs it)", "warning")
    return Problem(key, f"{what} failed: {first}")


def _first_sentence(exc: BaseException) -> str:
    """The innermost error's first sentence (config errors wrap the real one)."""
    inner = exc
    while inner.__cause__ is not None:
        inner = inner.__cause__
    text = str(inner).strip().splitlines()[0] if str(inner).strip() else type(inner).__name__
    cut = text.find(". ")
    return f"{type(inner).__name__}: {text[:cut + 1] if cut > 0 else text}"


def build_tokenizer_for_plan(cfg: Any, tp: int) -> Tuple[Any, List[Problem]]:
    """``cfg.tokenization``'s tokenizer and the model's vocabulary size set from it, as the
    trainer does (None and a warning when its files are missing)."""
    node = cfg.get("tokenization", None)
    if node is None or node.get("tokenizer", None) is None:
        return None, []
    from libai.tokenizer import build_tokenizer

    try:
        tokenizer = build_tokenizer(node, tensor_parallel_size=tp)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a reported problem
        return None, [_failure("tokenization.tokenizer", "building the tokenizer", exc)]
    model_cfg = cfg.model.get("cfg", None) if hasattr(cfg.model, "get") else None
    if model_cfg is not None and "vocab_size" in model_cfg:
        model_cfg.vocab_size = int(tokenizer.padded_vocab_size)
    return tokenizer, []


def forward_arguments(model_cls: Any) -> Tuple[List[str], List[str], bool]:
    """``(names, required names, takes **kwargs)`` of ``model_cls.forward``."""
    sig = inspect.signature(model_cls.forward)
    params = [p for n, p in sig.parameters.items() if n != "self"]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = [p.name for p in params if p.default is p.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return names, required, any(p.kind == p.VAR_KEYWORD for p in params)


def check_data(cfg: Any, tokenizer: Any, model_cls: Any, limits: Dict[str, int],
               num_samples: int = 1) -> Tuple[DataFacts, List[Problem]]:
    """Build each dataset of ``cfg.dataloader`` and check its first samples (module doc).

    ``limits`` holds what the model allows: ``vocab_size``, ``max_positions``, ``img_size``.
    """
    facts, problems = DataFacts(), []
    loaders = [("dataloader.train", cfg.dataloader.get("train", None))]
    loaders += [(f"dataloader.test.{i}", n) for i, n in enumerate(cfg.dataloader.get("test", None) or [])]
    for key, node in loaders:
        if node is None or not hasattr(node, "get"):
            continue
        if getattr(_target(node), "builds_own_datasets", False):
            problems.append(Problem(key, "this loader builds its datasets itself; their samples "
                                         "were not checked", "warning"))
            continue
        datasets = node.get("dataset", None)
        many = datasets is not None and not hasattr(datasets, "keys")
        for i, ds_node in enumerate(list(datasets) if many else [datasets]):
            if ds_node is None:
                continue
            ds_key = f"{key}.dataset" + (f".{i}" if many else "")
            try:
                dataset = _build_dataset(ds_node, tokenizer)
                samples = [dataset[j] for j in range(min(num_samples, len(dataset)))]
            except Exception as exc:  # noqa: BLE001
                problems.append(_failure(ds_key, "reading the first samples", exc))
                continue
            if key == "dataloader.train":
                facts.train_size = (facts.train_size or 0) + len(dataset)
            facts.checked.append(ds_key)
            for sample in samples:
                problems += _check_sample(ds_key, sample, model_cls, limits, facts)
    return facts, _dedupe(problems)


def _target(node: Any) -> Any:
    from libai.config.targets import locate

    target = node.get("_target_", None)
    try:
        return locate(target) if isinstance(target, str) else target
    except Exception:  # noqa: BLE001
        return None


def _build_dataset(node: Any, tokenizer: Any) -> Any:
    if not hasattr(node, "keys"):
        return node
    if tokenizer is not None and "tokenizer" in node:
        return instantiate_with(node, tokenizer=tokenizer)
    return instantiate(node)


def _fields(sample: Any) -> Dict[str, Any]:
    if hasattr(sample, "get_fields"):
        items = dict(sample.get_fields())
    elif isinstance(sample, dict):
        items = dict(sample)
    else:
        raise TypeError(f"a sample is a {type(sample).__name__}; libai datasets return an Instance")
    return {k: getattr(v, "tensor", v) for k, v in items.items()}


def _check_sample(key: str, sample: Any, model_cls: Any, limits: Dict[str, int],
                  facts: DataFacts) -> List[Problem]:
    try:
        fields = _fields(sample)
    except TypeError as exc:
        return [Problem(key, str(exc))]
    names, required, any_kw = forward_arguments(model_cls)
    problems = []
    owner = f"{model_cls.__name__}.forward({', '.join(names)})"
    for name in fields:
        if name not in names and not any_kw:
            problems.append(Problem(key, f"samples carry '{name}', which is not an argument of {owner}; "
                                         "rename the field or the argument"))
    for name in required:
        if name not in fields:
            problems.append(Problem(key, f"{owner} needs '{name}', which the samples do not carry"))
    for name, value in fields.items():
        if not isinstance(value, flow.Tensor):
            continue
        facts.sample_shapes.setdefault(name, tuple(value.shape))
        problems += _check_tensor(key, name, value, limits)
    return problems


def _check_tensor(key: str, name: str, value: flow.Tensor, limits: Dict[str, int]) -> List[Problem]:
    problems = []
    integer = value.dtype in (flow.int64, flow.int32, flow.int8, flow.uint8, flow.bool)
    array = value.numpy() if integer and value.numel() else None  # one read of the values
    is_ids = name.endswith("ids") or name in ("labels", "lm_labels", "tokens")
    if is_ids and not integer:
        return [Problem(f"{key}.{name}", f"'{name}' is {value.dtype}; ids and labels must be integers "
                                         "(flow.long)")]
    vocab = limits.get("vocab_size")
    if is_ids and array is not None and name.endswith("input_ids") and vocab:
        high, low = int(array.max()), int(array.min())
        if high >= vocab or low < 0:
            problems.append(Problem(f"{key}.{name}", (
                f"token ids span [{low}, {high}] but the model's vocabulary has {vocab} entries; "
                "match model.cfg.vocab_size to the tokenizer")))
    if name.endswith("labels") and array is not None:
        classes = limits.get("num_classes") or (vocab if "lm" in name or name == "labels" else None)
        high = int(array.max())
        if classes and high >= classes:
            problems.append(Problem(f"{key}.{name}", (
                f"labels reach {high} but the model predicts {classes} classes; match the model's "
                "number of classes (or vocabulary) to the data")))
    positions = limits.get("max_positions")
    if is_ids and positions and value.ndim >= 1 and int(value.shape[-1]) > positions:
        problems.append(Problem(f"{key}.{name}", (
            f"samples are {int(value.shape[-1])} tokens long, more than the model's {positions} "
            "positions; set the dataset's max_seq_length to the model's")))
    img = limits.get("img_size")
    if name == "images" and img and value.ndim == 3 and tuple(value.shape[-2:]) != (img, img):
        problems.append(Problem(f"{key}.{name}", (
            f"images are {tuple(value.shape[-2:])} but the model expects {img}×{img}; resize in the "
            "transforms or set model.img_size")))
    return problems


def _dedupe(problems: Sequence[Problem]) -> List[Problem]:
    seen, out = set(), []
    for p in problems:
        if (p.key, p.message) not in seen:
            seen.add((p.key, p.message))
            out.append(p)
    return out
