"""The shape pass: one sample through the model built with stand-ins, every module's shapes read.

libai's transformer layers are planned from their sizes alone (:mod:`libai.plan.costs`), which
is why a 175B model plans in seconds. Everything else (convolutions, pooling, batch norms, a
window attention's own products, a user's ``nn.Module``) is planned from what it computes: the
model built without weights (:mod:`libai.plan.shapes`) runs forward once on one zero-filled
sample of the run's input shape, in training mode with zero labels (evaluation mode without
labels if the model refuses: a batch norm over one value), without autograd; forward hooks read
each module's input and output shapes. OneFlow executes lazily, so the pass costs the shapes'
inference, not the arithmetic (ResNet-50 at 224²: 0.03 s). Matrix products and softmaxes that a
module's own code makes through ``flow.matmul``/``flow.bmm``/``flow.softmax`` are counted for
that module. libai's transformer modules are not counted again: the pass only tells how many
tokens each of them saw (Swin's later stages see a quarter of the tokens of the one before).

Where the input shape comes from, in order: the first sample of the training set when the data
could be read; else the model's ``img_size``/``in_chans`` settings, or the training loader's
image ``size`` with the first convolution's input channels; else the first linear layer's input
width (a model that flattens its input, as the MNIST quickstart does); token ids get the
planned sequence length.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import oneflow as flow

from libai.plan.module_costs import CallCost, leaf_cost, matmul_cost, numel

__all__ = ["TracedModule", "Trace", "trace_model", "needs_trace", "sample_inputs"]


@dataclass
class TracedModule:
    """A module the pass counted (or could not count: ``known`` False), per sample."""

    name: str
    cls: str
    layer_idx: int
    params: int
    flops: float = 0.0
    kept_e: float = 0.0  # elements kept for backward (compute dtype)
    kept_1: float = 0.0  # bytes kept for backward (masks, indices, ids)
    work_e: float = 0.0  # elements of its backward workspace: its output's gradient and its input's
    known: bool = True
    calls: int = 0


@dataclass
class Trace:
    """What the pass found: counted modules, and the tokens each planned-by-size module saw."""

    modules: List[TracedModule] = field(default_factory=list)
    tokens: Dict[str, float] = field(default_factory=dict)  # module name -> tokens per sample
    pairs: Dict[str, float] = field(default_factory=dict)  # attention -> query·key pairs per sample
    inputs: Dict[str, Tuple[int, ...]] = field(default_factory=dict)  # the sample given forward

    @property
    def uncounted(self) -> List[TracedModule]:
        return [m for m in self.modules if not m.known]

    def uncounted_summary(self) -> str:
        """``"2 modules of class MyGate, 12k parameters; ..."``, largest first."""
        by_cls: Dict[str, List[int]] = {}
        for m in self.uncounted:
            by_cls.setdefault(m.cls, []).append(m.params)
        rows = sorted(by_cls.items(), key=lambda kv: -sum(kv[1]))
        return "; ".join(f"{len(v)} module{'s' if len(v) > 1 else ''} of class {cls}, "
                         f"{_count(sum(v))} parameters" for cls, v in rows)


def _count(n: int) -> str:
    for suffix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{suffix}"
    return str(n)


def _is_leaf(module: Any) -> bool:
    return not any(True for _ in module.children())


def _covered(name: str, planned: Sequence[str], inside: Sequence[str]) -> bool:
    return name in planned or any(name == p or name.startswith(p + ".") for p in inside)


def needs_trace(model: Any, planned: Sequence[str], inside: Sequence[str]) -> bool:
    """Whether some leaf module with parameters (not an embedding table), or a convolution or
    pooling, is not planned by size: then the pass runs (never for libai's transformer zoo,
    planned by size alone)."""
    for name, m in model.named_modules():
        if not name or not _is_leaf(m) or _covered(name, planned, inside):
            continue
        cls = type(m).__name__.lower()
        if "embedding" in cls:  # a lookup computes nothing (libai's position embeddings)
            continue
        if any(True for _ in m.parameters(recurse=False)) or "pool" in cls or "conv" in cls:
            return True
    return False


class _Pass:
    """Hooks and patched functions of one traced forward."""

    def __init__(self, model: Any, planned: Sequence[str], inside: Sequence[str]) -> None:
        self.trace = Trace()
        self.planned, self.inside = set(planned), list(inside)
        self.stack: List[str] = []
        self.kept_ids: set = set()
        self.alive: List[Any] = []  # keeps traced tensors alive so ids stay unique
        self.by_name: Dict[str, TracedModule] = {}
        self.modules = dict(model.named_modules())
        self.training = True

    def record(self, name: str) -> TracedModule:
        if name not in self.by_name:
            m = self.modules.get(name)
            params = sum(p.numel() for p in m.parameters()) if m is not None else 0
            idx = int(getattr(m, "layer_idx", 0) or 0) if m is not None else 0
            self.by_name[name] = TracedModule(name, type(m).__name__, idx, params)
            self.trace.modules.append(self.by_name[name])
        return self.by_name[name]

    def add(self, rec: TracedModule, cost: CallCost) -> None:
        rec.flops += cost.flops
        rec.kept_1 += cost.kept_1
        rec.kept_e += cost.extra_e
        for t in cost.keep:
            if t is not None and id(t) not in self.kept_ids:
                self.kept_ids.add(id(t))
                self.alive.append(t)
                rec.kept_e += numel(t.shape)

    def pre(self, name: str):
        def hook(module: Any, inputs: Tuple) -> None:
            self.stack.append(name)
        return hook

    def post(self, name: str):
        def hook(module: Any, inputs: Tuple, output: Any) -> None:
            self.stack.pop()
            self.alive += [x for x in inputs if hasattr(x, "shape")] + [output]
            out = output[0] if isinstance(output, (tuple, list)) and output else output
            x = next((t for t in inputs if hasattr(t, "shape")), None)
            if name in self.planned or any(name == p for p in self.inside):
                ids = x is not None and "int" in str(x.dtype)  # an embedding's token ids
                if x is not None and (x.ndim >= 2 or ids):
                    tokens = numel(x.shape) if ids else numel(x.shape[:-1])
                    self.trace.tokens[name] = self.trace.tokens.get(name, 0.0) + tokens
                    if x.ndim >= 3:
                        self.trace.pairs[name] = self.trace.pairs.get(name, 0.0) + x.shape[0] * x.shape[1] ** 2
                return
            if not _is_leaf(module) or _covered(name, self.planned, self.inside):
                return
            rec = self.record(name)
            rec.calls += 1
            cost = leaf_cost(module, inputs, out, self.training)
            if cost is None:
                rec.known = False
            else:
                self.add(rec, cost)
                if hasattr(out, "shape"):  # two gradients of its output's size live together
                    rec.work_e = max(rec.work_e, 2.0 * numel(out.shape))
        return hook

    def owner(self) -> Optional[str]:
        """The innermost running module, when a product it makes is not counted elsewhere."""
        if not self.stack:
            return None
        name = self.stack[-1]
        m = self.modules.get(name)
        if _covered(name, self.planned, self.inside) or (m is not None and _is_leaf(m)):
            return None
        return name

    def wrap_matmul(self, fn: Any) -> Any:
        def wrapped(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
            out = fn(a, b, *args, **kwargs)
            owner = self.owner()
            if owner is not None:
                transpose_b = kwargs.get("transpose_b", False)
                inner = int(a.shape[-1])
                cost = matmul_cost(a, b, out)
                cost.flops = 2.0 * numel(out.shape) * inner if transpose_b or b.ndim < 2 else cost.flops
                self.alive += [a, b, out]
                self.add(self.record(owner), cost)
            return out
        return wrapped

    def wrap_softmax(self, fn: Any) -> Any:
        def wrapped(x: Any, *args: Any, **kwargs: Any) -> Any:
            out = fn(x, *args, **kwargs)
            owner = self.owner()
            if owner is not None:
                self.alive.append(out)
                self.add(self.record(owner), CallCost(5.0 * numel(out.shape), [out]))
            return out
        return wrapped


_PATCHED = ((flow, "matmul", "wrap_matmul"), (flow, "bmm", "wrap_matmul"),
            (flow, "softmax", "wrap_softmax"), (flow.nn.functional, "softmax", "wrap_softmax"))


def trace_model(model: Any, inputs: Dict[str, Any], planned: Sequence[str], inside: Sequence[str],
                training: bool = True) -> Trace:
    """Run ``model(**inputs)`` (one sample) with hooks; ``planned``: modules planned by size (their
    tokens are read), ``inside``: modules whose whole subtree is planned by size. ``training``:
    the modules' mode during the pass."""
    run = _Pass(model, planned, inside)
    run.trace.inputs = {k: tuple(v.shape) for k, v in inputs.items()}
    run.training = True  # the run planned trains: dropout makes its masks whatever the pass's mode
    hooked = []  # OneFlow 0.9 returns no handles: the hooks are taken out of the dicts after
    for name, m in model.named_modules():  # the model itself too (""): its own products
        before = (dict(m._forward_pre_hooks), dict(m._forward_hooks))
        m.register_forward_pre_hook(run.pre(name))
        m.register_forward_hook(run.post(name))
        hooked.append((m, before))
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in _PATCHED]
    was_training = model.training
    try:
        for (mod, attr, wrap), (_, _, original) in zip(_PATCHED, saved):
            setattr(mod, attr, getattr(run, wrap)(original))
        model.train(training)  # training: the modules only the loss path runs are counted too
        with flow.no_grad():
            model(**inputs)
    finally:
        for mod, attr, original in saved:
            setattr(mod, attr, original)
        for m, (pre, post) in hooked:
            m._forward_pre_hooks.clear()
            m._forward_pre_hooks.update(pre)
            m._forward_hooks.clear()
            m._forward_hooks.update(post)
        model.train(was_training)
    for name, m in model.named_modules():  # weights the pass never ran: not counted either
        if (name and name not in run.by_name and _is_leaf(m) and not _covered(name, planned, inside)
                and "embedding" not in type(m).__name__.lower() and any(True for _ in m.parameters())):
            run.record(name).known = False
    return run.trace


_IMAGE_NAMES = ("images", "image", "inputs", "pixel_values", "x", "img", "imgs", "input")


def _items(node: Any) -> List[Tuple[Any, Any]]:
    if hasattr(node, "items"):
        return list(node.items())
    if hasattr(node, "__iter__") and not isinstance(node, (str, bytes)):
        return list(enumerate(node))
    return []


def _find_size(node: Any, depth: int = 0) -> Optional[int]:
    """The first image ``size``/``img_size``/``image_size``/``crop_size`` in a loader's config."""
    if depth > 6 or node is None:
        return None
    for key, value in _items(node):
        if key in ("size", "img_size", "image_size", "crop_size", "input_size"):
            value = _items(value)[0][1] if _items(value) else value
            if isinstance(value, int) and value > 1:
                return value
    for _, value in _items(node):
        found = _find_size(value, depth + 1) if _items(value) else None
        if found:
            return found
    return None


def _first_weighted_leaf(model: Any) -> Optional[Any]:
    for m in model.modules():
        w = getattr(m, "weight", None)
        table = "embedding" in type(m).__name__.lower()
        if _is_leaf(m) and getattr(w, "ndim", 0) >= 2 and not table:
            return m
    return None


def sample_inputs(model: Any, names: Sequence[str], required: Sequence[str],
                  sample_shapes: Dict[str, Tuple[int, ...]], setting: Any, loader: Any,
                  seq: int, labels: bool = True) -> Dict[str, Any]:
    """One zero-filled sample for each input the pass gives ``forward`` (module docstring), with
    class ids for its ``labels`` when ``labels``. ``setting(key)`` reads the model's config;
    ``loader`` is the training loader's node. Raises ValueError naming the input whose shape
    could not be found."""
    out: Dict[str, Any] = {}
    for name in names:
        if "label" in name and labels:  # class ids (a sample's own shape when read)
            out[name] = flow.zeros((1,) + tuple(sample_shapes.get(name, ())), dtype=flow.int64)
            continue
        if "label" in name or ("mask" in name and name not in sample_shapes):
            continue  # no labels in an evaluation pass; a mask only when the samples carry one
        if name in sample_shapes:
            shape = tuple(sample_shapes[name])
            ids = "ids" in name or "token" in name
            out[name] = flow.zeros((1,) + shape, dtype=flow.int64 if ids else flow.float32)
        elif "ids" in name or "tokens" in name:
            out[name] = flow.zeros(1, seq, dtype=flow.int64)
        elif name in _IMAGE_NAMES and (name in required or not out):
            out[name] = flow.zeros((1,) + _image_shape(model, setting, loader, name))
    missing = [n for n in required if n not in out and "label" not in n]
    if missing:
        raise ValueError(f"no shape for forward's input(s) {missing}: give the data (its first "
                         "sample is read) or set the model's img_size")
    return out


def _image_shape(model: Any, setting: Any, loader: Any, name: str) -> Tuple[int, ...]:
    first = _first_weighted_leaf(model)
    size = setting("img_size") or setting("image_size") or _find_size(loader)
    size = size[0] if isinstance(size, (list, tuple)) else size
    chans = setting("in_chans") or setting("in_channels") or setting("num_channels")
    if first is not None and first.weight.ndim >= 3:
        chans = chans or int(first.weight.shape[1]) * int(getattr(first, "groups", 1) or 1)
        if not size:
            raise ValueError(f"no image size for forward's input {name!r}: give the data (its "
                             "first sample is read) or set the model's img_size")
        return (int(chans), int(size), int(size))
    if first is not None and hasattr(first, "in_features"):
        return (int(first.in_features),)
    raise ValueError(f"no shape for forward's input {name!r}: give the data (its first sample is read)")
