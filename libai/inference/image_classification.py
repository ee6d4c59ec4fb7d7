"""``ImageClassificationPipeline``: images in, labels with scores out.

Inputs: image file paths, ``PIL.Image`` objects, or arrays ``[channels, height, width]`` that
are already model inputs (preprocessed pixel values). Images are transformed as the source
says: a libai training directory uses its test dataset's ``transform``; a Hugging Face
directory uses ``preprocessor_config.json`` (``size``, ``image_mean``, ``image_std``,
``rescale_factor``) when present, else ``config.json``'s ``image_size`` with Hugging Face's ViT
defaults (mean = std = 0.5). Labels: ``id2label`` of the config, else ``Label_{i}``. Call
keywords as :class:`~libai.inference.TextClassificationPipeline`.
"""
import json
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import oneflow as flow

from libai.config import instantiate, try_get_key
from libai.inference.basic import BasePipeline, Params
from libai.inference.scoring import label_names, score_records

__all__ = ["ImageClassificationPipeline", "PixelTransform"]

_POST = ("function_to_apply", "return_all_scores", "top_k")


class PixelTransform:
    """Resize (bilinear) to ``size``, scale by ``rescale_factor``, normalise per channel."""

    def __init__(self, size: Tuple[int, int], mean: List[float], std: List[float],
                 rescale_factor: float = 1 / 255) -> None:
        self.size, self.rescale_factor = size, rescale_factor
        self.mean = np.asarray(mean, dtype=np.float32).reshape(-1, 1, 1)
        self.std = np.asarray(std, dtype=np.float32).reshape(-1, 1, 1)

    def __call__(self, image: Any) -> np.ndarray:
        from PIL import Image

        resized = image.convert("RGB").resize((self.size[1], self.size[0]), Image.BILINEAR)
        pixels = np.asarray(resized, dtype=np.float32).transpose(2, 0, 1) * self.rescale_factor
        return (pixels - self.mean) / self.std


def _hf_transform(folder: Optional[str], hf_config: Dict[str, Any]) -> PixelTransform:
    side = int(hf_config.get("image_size", 224))
    settings: Dict[str, Any] = {}
    path = os.path.join(folder, "preprocessor_config.json") if folder else None
    if path and os.path.isfile(path):
        with open(path) as f:
            settings = json.load(f)
    size = settings.get("size", {"height": side, "width": side})
    if isinstance(size, int):
        size = {"height": size, "width": size}
    return PixelTransform(
        (int(size.get("height", side)), int(size.get("width", side))),
        settings.get("image_mean", [0.5, 0.5, 0.5]), settings.get("image_std", [0.5, 0.5, 0.5]),
        float(settings.get("rescale_factor", 1 / 255)),
    )


class ImageClassificationPipeline(BasePipeline):
    """Classify images with a libai vision model (ViT, Swin, ...)."""

    hf_architectures = {
        "ViTForImageClassification": "VisionTransformer",
        "SwinForImageClassification": "SwinTransformer",
        "Swinv2ForImageClassification": "SwinTransformerV2",
    }
    task = "image classification"

    def __init__(self, *args: Any, transform: Optional[Callable[[Any], Any]] = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.transform = transform if transform is not None else self._default_transform()

    def _default_transform(self) -> Callable[[Any], Any]:
        node = try_get_key(self.cfg, "dataloader.test") if self.cfg is not None else None
        if node:
            transform = try_get_key(node[0], "dataset.transform")
            if transform is not None:
                return instantiate(transform)
        return _hf_transform(self.source.weights, self.source.hf_config)

    def _parse_parameters(self, **params: Any) -> Tuple[Params, Params, Params]:
        post = {k: params.pop(k) for k in _POST if k in params}
        return params, {}, post

    def _pixels(self, item: Any) -> np.ndarray:
        if isinstance(item, (np.ndarray, flow.Tensor)):
            return np.asarray(item.numpy() if isinstance(item, flow.Tensor) else item, np.float32)
        if isinstance(item, str):
            from PIL import Image

            if not os.path.isfile(item):
                raise FileNotFoundError(f"image {item!r} does not exist")
            with open(item, "rb") as f:
                item = Image.open(f)
                item.load()
        out = self.transform(item)
        return np.asarray(out.numpy() if isinstance(out, flow.Tensor) else out, np.float32)

    def preprocess(self, inputs: List[Any], **_: Any) -> Dict[str, Any]:
        return {"images": flow.tensor(np.stack([self._pixels(i) for i in inputs]))}

    def forward(self, model_inputs: Dict[str, Any], **_: Any) -> Dict[str, Any]:
        outputs = self.model(images=self.place(model_inputs["images"]))
        return {"logits": outputs.get("logits", outputs.get("prediction_scores"))}

    def labels(self, num_labels: int) -> List[str]:
        id2label = self.source.hf_config.get("id2label")
        if id2label is None and self.cfg is not None:
            id2label = try_get_key(self.cfg, "model.id2label") or try_get_key(
                self.cfg, "model.cfg.id2label")
        return label_names(num_labels, id2label)

    def postprocess(self, model_outputs: Dict[str, Any], **params: Any) -> List[Any]:
        logits = model_outputs["logits"].numpy()
        return score_records(logits, self.labels(logits.shape[-1]), **params)
