"""``BasePipeline``: model + tokenizer + the preprocess -> forward -> postprocess of one task.

A pipeline is built from files (LiBai's constructor: ``config_file``, the parallel sizes,
``model_path``, ``mode``, ``device``; see :mod:`libai.inference.loading` for what each file
kind means) or from objects already in memory (``model=``, ``tokenizer=``). Calling it on one
input returns one record; on a list, a list of records, computed ``batch_size`` inputs at a
time (``progress`` is called with the number of inputs done after each batch, e.g. a tqdm
bar's ``update``).

Under data/tensor/pipeline parallelism (a launched multi-process run) every rank builds the
same pipeline and calls it with the same inputs; inputs become broadcast global tensors on the
first stage, outputs come back whole on every rank, so every rank returns the same records.
"""
import abc
import inspect
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import oneflow as flow
from oneflow import nn

from libai.inference.loading import (
    ModelSource, build_layout, load_model, load_tokenizer, resolve_source,
)
from libai.models.utils.generation.mixin import model_layout
from libai.tokenizer import BaseTokenizer
from libai.utils.distributed import ttol

__all__ = ["BasePipeline"]

Params = Dict[str, Any]


class BasePipeline(abc.ABC):
    """Base class of the task pipelines.

    Args:
        config_file: a libai training ``output_dir`` (``config.yaml`` + checkpoints), a
            Hugging Face model directory (``config.json`` + weights), or a config file.
        data_parallel, tensor_parallel, pipeline_parallel: parallel sizes over the launched
            processes (unset: 1, data parallel takes the remaining processes).
        pipeline_stage_id, pipeline_num_layers: stage of each block / number of blocks
            (inferred from the model config when pipeline parallel and not given).
        model_path: the weights (a checkpoint directory or a Hugging Face directory); defaults
            to ``output_dir/model_final`` or the Hugging Face directory itself.
        mode: ``"libai"``, ``"huggingface"`` or ``"random"`` (no weights, for debugging);
            inferred from the files when None.
        device: ``"cpu"`` or ``"cuda"`` (default: what the machine has).
        model, tokenizer: use these objects instead of loading (keyword only).
        **kwargs: default call parameters (e.g. ``max_new_tokens=20``).
    """

    #: Hugging Face ``architectures`` entry -> libai.models class name, per task.
    hf_architectures: Mapping[str, str] = {}
    task = "a task"

    def __init__(
        self,
        config_file: Optional[str] = None,
        data_parallel: Optional[int] = None,
        tensor_parallel: Optional[int] = None,
        pipeline_parallel: Optional[int] = None,
        pipeline_stage_id: Optional[Sequence[int]] = None,
        pipeline_num_layers: Optional[int] = None,
        model_path: Optional[str] = None,
        mode: Optional[str] = None,
        device: Optional[str] = None,
        *,
        model: Optional[nn.Module] = None,
        tokenizer: Optional[BaseTokenizer] = None,
        **kwargs: Any,
    ) -> None:
        if model is not None:
            self.source = ModelSource(mode="object", hf_config=dict(getattr(model, "pretrained_config", {}) or {}))
            self.model = model.eval()
            self.tokenizer = tokenizer
        else:
            self.source = resolve_source(config_file, model_path, mode)
            self.layout = build_layout(self.source, data_parallel, tensor_parallel,
                                       pipeline_parallel, pipeline_stage_id, pipeline_num_layers,
                                       device)
            self.model = load_model(self.source, self.layout, self.hf_architectures, self.task)
            self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(self.source)
        self.layout = model_layout(self.model)
        self.cfg = self.source.cfg
        self._preprocess_params, self._forward_params, self._postprocess_params = (
            self._parse_parameters(**kwargs)
        )

    # ------------------------------------------------------------------------- calling
    def __call__(
        self,
        inputs: Any,
        *args: Any,
        batch_size: Optional[int] = None,
        progress: Optional[Callable[[int], Any]] = None,
        **kwargs: Any,
    ) -> Any:
        """Run the task on one input (one record back) or a list of inputs (a list back)."""
        pre, fwd, post = self._parse_parameters(**kwargs)
        pre = {**self._preprocess_params, **pre}
        fwd = {**self._forward_params, **fwd}
        post = {**self._postprocess_params, **post}
        single = not self._is_batch(inputs)
        items = [inputs] if single else list(inputs)
        size = batch_size or max(len(items), 1)
        records: List[Any] = []
        with flow.no_grad():
            for start in range(0, len(items), size):
                batch = items[start:start + size]
                model_inputs = self.preprocess(batch, **pre)
                outputs = self.to_local(self.forward(model_inputs, **fwd))
                records.extend(self.postprocess(outputs, **post))
                if progress is not None:
                    progress(len(batch))
        return records[0] if single else records

    def _is_batch(self, inputs: Any) -> bool:
        """Whether ``inputs`` is a list of inputs (rather than one input)."""
        return isinstance(inputs, (list, tuple))

    def to_local(self, outputs: Dict[str, Any]) -> Dict[str, Any]:
        """Global output tensors -> their whole value as local tensors on every rank."""
        return {k: ttol(v) if isinstance(v, flow.Tensor) else v for k, v in outputs.items()}

    def place(self, tensor: flow.Tensor) -> flow.Tensor:
        """A local input tensor as the model expects it (broadcast on the first stage)."""
        b = flow.sbp.broadcast
        return self.layout.to_global(tensor, [b, b], stage=0)

    def model_accepts(self, name: str) -> bool:
        """Whether the model's ``forward`` takes an argument ``name``."""
        return name in inspect.signature(self.model.forward).parameters

    # ------------------------------------------------------------------------- task parts
    @abc.abstractmethod
    def _parse_parameters(self, **pipeline_parameters: Any) -> Tuple[Params, Params, Params]:
        """Split call keywords into (preprocess, forward, postprocess) parameters."""

    @abc.abstractmethod
    def preprocess(self, inputs: List[Any], **params: Any) -> Dict[str, Any]:
        """A batch of raw inputs -> model inputs (placed tensors)."""

    @abc.abstractmethod
    def forward(self, model_inputs: Dict[str, Any], **params: Any) -> Dict[str, Any]:
        """Model inputs -> model outputs (tensors, maybe global)."""

    @abc.abstractmethod
    def postprocess(self, model_outputs: Dict[str, Any], **params: Any) -> List[Any]:
        """Local model outputs -> one record per input of the batch."""

