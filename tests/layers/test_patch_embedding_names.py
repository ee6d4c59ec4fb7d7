"""``PatchEmbedding`` has LiBai's structure: the patch projection is a convolution called
``proj`` (so parameters are ``proj.weight`` / ``proj.bias``, as in LiBai checkpoints and in the
MAE and MoCo v3 projects, which read and re-initialise ``patch_embed.proj.weight``), and
``norm`` is an ``nn.Identity`` when there is no norm."""
import numpy as np
import oneflow as flow
from oneflow import nn

from libai.layers import LayerNorm, PatchEmbedding
from libai.models import VisionTransformer


def _patches_times_kernel(images, weight, bias, patch):
    """The definition: each non-overlapping patch, flattened, times the flattened kernel."""
    b, c, h, w = images.shape
    gh, gw = h // patch, w // patch
    cells = images.reshape(b, c, gh, patch, gw, patch).transpose(0, 2, 4, 1, 3, 5)
    return cells.reshape(b, gh * gw, -1) @ weight.reshape(weight.shape[0], -1).T + bias


def test_the_projection_is_a_conv_named_proj(local_layout):
    embed = PatchEmbedding(img_size=8, patch_size=4, in_chans=3, embed_dim=5)
    assert isinstance(embed.proj, nn.Conv2d)
    assert tuple(embed.proj.weight.shape) == (5, 3, 4, 4)
    assert tuple(embed.proj.bias.shape) == (5,)
    assert sorted(name for name, _ in embed.named_parameters()) == ["proj.bias", "proj.weight"]
    assert isinstance(embed.norm, nn.Identity)
    images = np.random.RandomState(0).randn(2, 3, 8, 8).astype(np.float32)
    expected = _patches_times_kernel(images, embed.proj.weight.numpy(), embed.proj.bias.numpy(), 4)
    np.testing.assert_allclose(embed(flow.tensor(images)).numpy(), expected, rtol=1e-5, atol=1e-5)


def test_code_written_for_libai_can_reinitialise_proj(local_layout):
    """What MoCo v3's ViT does to its patch projection: uniform init, zero bias, frozen."""
    embed = PatchEmbedding(img_size=8, patch_size=4, in_chans=1, embed_dim=2)
    nn.init.uniform_(embed.proj.weight, -0.1, 0.1)
    nn.init.zeros_(embed.proj.bias)
    embed.proj.weight.requires_grad = False
    assert float(embed.proj.weight.abs().max().numpy()) <= 0.1
    assert not embed.proj.bias.numpy().any()
    assert [n for n, p in embed.named_parameters() if p.requires_grad] == ["proj.bias"]


def test_norm_layer_parameters_keep_libais_names(local_layout):
    embed = PatchEmbedding(img_size=4, patch_size=2, in_chans=1, embed_dim=4, norm_layer=LayerNorm)
    assert sorted(embed.state_dict()) == ["norm.bias", "norm.weight", "proj.bias", "proj.weight"]


def test_vit_checkpoints_name_the_patch_projection_like_libai(local_layout):
    vit = VisionTransformer(img_size=8, patch_size=4, in_chans=3, embed_dim=8, depth=1,
                            num_heads=2, num_classes=3)
    keys = set(vit.state_dict())
    assert {"patch_embed.proj.weight", "patch_embed.proj.bias"} <= keys
    assert "patch_embed.weight" not in keys
