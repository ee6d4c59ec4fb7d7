"""The export check the Hugging Face fixture tests share."""
from typing import Any, Iterable

import numpy as np

from libai.models.pretrained import read_config, read_state_dict


def assert_export_round_trips(model: Any, fixture: str, out_dir: str, config_keys: Iterable[str]) -> None:
    """``model.save_pretrained(out_dir)`` writes exactly the fixture's tensor names and values,
    and the fixture's value of every key in ``config_keys``."""
    model.save_pretrained(out_dir)
    exported, original = read_state_dict(out_dir), read_state_dict(fixture)
    assert sorted(exported) == sorted(original)
    assert all(np.array_equal(exported[k], original[k]) for k in original)
    cfg, ref_cfg = read_config(out_dir), read_config(fixture)
    for key in config_keys:
        assert cfg[key] == ref_cfg[key], key
