"""Auto classes: config.json's model_type picks the libai class through the one family table,
for every family libai imports; unknown types and missing roles are named."""
import json
import os
import shutil

import numpy as np
import pytest

from libai import models
from libai.models import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM
from libai.models.pretrained.registry import registered_types

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf")

# fixture -> (AutoModel's class, AutoModelForCausalLM's class or None)
EXPECTED = {
    "gpt2": ("GPTModel", "GPTForPreTraining"),
    "bert": ("BertModel", None),
    "roberta": ("RobertaModel", "RobertaForCausalLM"),
    "t5": ("T5Model", None),
    "mt5": ("T5Model", None),
    "llama": ("LlamaModel", "LlamaForCausalLM"),
    "vit": ("VisionTransformer", None),
    "swin": ("SwinTransformer", None),
    "swinv2": ("SwinTransformerV2", None),
}


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_auto_classes_pick_the_family_class(fixture):
    path = os.path.join(FIXTURES, fixture)
    base, causal = EXPECTED[fixture]
    assert AutoModel.class_for(path) is getattr(models, base)
    if causal is None:
        with pytest.raises(ValueError, match="has no libai class for 'causal_lm'"):
            AutoModelForCausalLM.class_for(path)
    else:
        assert AutoModelForCausalLM.class_for(path) is getattr(models, causal)


def test_auto_causal_lm_loads_the_weights_and_config():
    path = os.path.join(FIXTURES, "llama")
    model = AutoModelForCausalLM.from_pretrained(path, hidden_dropout_prob=0.0)
    assert isinstance(model, models.LlamaForCausalLM)
    direct = models.LlamaForCausalLM.from_pretrained(path)
    ours, theirs = model.state_dict(), direct.state_dict()
    assert all(np.array_equal(ours[k].numpy(), theirs[k].numpy()) for k in theirs)
    assert AutoConfig.from_pretrained(path)["model_type"] == "llama"
    assert AutoConfig.model_args(path)["hidden_layers"] == 2
    assert AutoModelForSeq2SeqLM.class_for(os.path.join(FIXTURES, "t5")) is models.T5ForPreTraining


def test_unknown_model_type_names_the_supported_ones(tmp_path):
    out = tmp_path / "ckpt"
    shutil.copytree(os.path.join(FIXTURES, "llama"), out)
    cfg = json.loads((out / "config.json").read_text())
    cfg["model_type"] = "falcon"
    (out / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"model_type='falcon'.*supported: \[.*'llama'"):
        AutoModelForCausalLM.from_pretrained(str(out))
    with pytest.raises(ValueError, match="'falcon'"):
        AutoConfig.from_pretrained(str(out))
    assert {"gpt2", "bert", "roberta", "t5", "mt5", "llama", "vit", "swin", "swinv2"} <= set(
        registered_types())
