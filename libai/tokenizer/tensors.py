"""``encode(..., return_tensors=...)``: ids as a numpy array or a OneFlow tensor.

OneFlow is imported only when a OneFlow tensor is asked for, so tokenizing (for example in
data-preprocessing processes) never pays for it.
"""
from typing import Any, List, Optional, Union

import numpy as np

__all__ = ["convert_to_tensors"]

Ids = Union[List[int], List[List[int]]]


def convert_to_tensors(
    token_ids: Ids,
    return_tensors: Optional[str] = None,
    is_global: bool = False,
    device: Optional[str] = None,
    **kwargs: Any,
) -> Any:
    """``None``: the list unchanged; ``"np"``: an int64 array; ``"of"``: an int64 OneFlow tensor.

    With ``is_global=True`` the OneFlow tensor is global, broadcast to every rank: pass
    ``placement`` and ``sbp`` to choose otherwise. ``device`` defaults to ``"cuda"`` when
    OneFlow sees a GPU, else ``"cpu"``. Rows must have equal lengths for either tensor type.
    """
    if return_tensors is None:
        return token_ids
    if return_tensors == "np":
        return np.array(token_ids, dtype=np.int64)
    if return_tensors != "of":
        raise ValueError(f"return_tensors must be None, 'np' or 'of', got {return_tensors!r}")
    import oneflow as flow

    if not is_global:
        return flow.tensor(token_ids, dtype=flow.long)
    from libai.utils import distributed as dist

    if device is None:
        device = "cuda" if flow.cuda.is_available() else "cpu"
    placement = kwargs.get("placement", flow.placement(device, list(range(dist.get_world_size()))))
    sbp = kwargs.get("sbp", flow.sbp.broadcast)
    return flow.tensor(token_ids, dtype=flow.long, placement=placement, sbp=sbp)
