"""The named size presets in configs/common/models build models with the published sizes.

Reference parameter counts are the original implementations' (timm for ViT and Swin, Hugging
Face for BERT and GPT-2; GPT-2's vocabulary is padded here from 50257 to 50304 tokens, 47 extra
embedding rows). The models are built under ``skip_weight_init``: counting needs shapes, not
drawn values (drawing them all costs about a minute here).
"""
import pytest

from libai.config import instantiate
from libai.layers import skip_weight_init
from configs.common.models import bert, gpt, swin, vit

PUBLISHED = {
    (vit, "vit_tiny_patch16_224"): 5_717_416,
    (vit, "vit_small_patch16_224"): 22_050_664,
    (vit, "vit_base_patch16_224"): 86_567_656,
    (vit, "vit_base_patch32_224"): 88_224_232,
    (vit, "vit_large_patch16_224"): 304_326_632,
    (swin, "swin_tiny_patch4_window7_224"): 28_288_354,
    (swin, "swin_small_patch4_window7_224"): 49_606_258,
    (swin, "swin_base_patch4_window7_224"): 87_768_224,
    (bert, "bert_base"): 110_106_428,  # BertForPreTraining, bert-base-uncased
    (bert, "bert_large"): 336_226_108,  # BertForPreTraining, bert-large-uncased
    (gpt, "gpt2_small"): 124_439_808 + 47 * 768,
    (gpt, "gpt2_medium"): 354_823_168 + 47 * 1024,
}


@pytest.mark.parametrize("module, name", list(PUBLISHED), ids=[n for _, n in PUBLISHED])
def test_preset_has_the_published_parameter_count(module, name, local_layout):
    with skip_weight_init():
        model = instantiate(getattr(module, name)())
    assert sum(p.numel() for p in model.parameters()) == PUBLISHED[(module, name)]


def test_every_size_has_a_preset_and_presets_are_independent_copies():
    assert {f"{s}_{p}" for s in ("tiny", "small", "base", "large") for p in ("patch16", "patch32")} == {
        n[len("vit_"):-len("_224")] for n in dir(vit) if n.startswith("vit_") and n.endswith("_224")}
    for size in ("large", "xl"):
        assert gpt.gpt2_cfg(size)["hidden_size"] == {"large": 1280, "xl": 1600}[size]
    first = swin.swin_tiny_patch4_window7_224()
    first.depths[2] = 99
    assert swin.swin_tiny_patch4_window7_224().depths == [2, 2, 6, 2]
    assert swin.model.depths == [2, 2, 2]  # the file's small default is untouched


def test_unknown_size_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown ViT size 'huge'; choose one of \['base', 'large', 'small', 'tiny'\]"):
        vit.vit_preset("huge")
    with pytest.raises(ValueError, match="unknown GPT-2 size 'tiny'"):
        gpt.gpt2_cfg("tiny")
