"""What runs in LiBai's own environment: the logits of its GPT-2 checkpoints, and the other
model families built from LiBai's config files, saved by its ``Checkpointer`` and computed on
fixed inputs (the inputs are written here)."""
import textwrap
from typing import Any, Dict


# LiBai's side of the logits check, run in LiBai's environment (written into the work folder).
UPSTREAM_LOGITS = textwrap.dedent('''
    import json, os, sys
    spec = json.load(open(sys.argv[1]))
    sys.path.insert(0, spec["shims"])
    import run_libai  # noqa: F401  (CPU shims, causal GPT-2)
    import numpy as np
    import oneflow as flow
    from libai.config import LazyConfig, instantiate
    from libai.models import GPTForPreTraining
    from libai.models.utils.model_loader.gpt_loader import GPT2LoaderLiBai
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    cfg = LazyConfig.apply_overrides(LazyConfig.load(spec["config"]), spec["overrides"])
    dist.setup_dist_util(cfg.train.dist)
    ids = flow.tensor(np.load(spec["batch"]), dtype=flow.long).to_global(
        placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)

    def logits(model):
        model.eval()
        with flow.no_grad():
            return model(ids)["prediction_scores"].to_local().numpy()

    for tag, path in spec["checkpoints"].items():
        model = instantiate(cfg.model)
        model._apply(dist.convert_to_distributed_default_setting)
        Checkpointer(model).load(path, checkpointables=[])
        np.save(os.path.join(spec["out"], tag + ".npy"), logits(model))
        model.train()  # no dropout in these runs: the training loss on the same batch
        labels = flow.tensor(np.roll(np.load(spec["batch"]), 1, axis=1), dtype=flow.long).to_global(
            placement=ids.placement, sbp=ids.sbp)
        loss = model(ids, labels)["lm_loss"].to_local().numpy()
        np.save(os.path.join(spec["out"], tag + "_loss.npy"), loss)
    for tag, path in spec.get("loader", {}).items():
        model = GPT2LoaderLiBai(GPTForPreTraining, cfg.model.cfg, path).load()
        np.save(os.path.join(spec["out"], tag + ".npy"), logits(model))
''')


# Other model families: LiBai builds each from its own config file (shrunk), moves every parameter
# by seeded noise (so that zero-initialised biases count), saves it with its Checkpointer and
# computes its outputs on fixed inputs; libai loads the checkpoint and computes the same outputs.
FAMILIES = {
    # name: (LiBai config, node, loader class, shrink)
    "BERT": ("configs/common/models/bert.py", "pretrain_model", "BertLoaderLiBai",
             dict(hidden_layers=2, hidden_size=16, intermediate_size=32, num_attention_heads=2,
                  vocab_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)),
    "T5": ("configs/common/models/t5.py", "pretrain_model", "T5LoaderLiBai",
           dict(hidden_layers=2, hidden_size=16, intermediate_size=32, num_attention_heads=2,
                vocab_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, embedding_dropout_prob=0.0)),
    "ViT": ("configs/common/models/vit/vit_tiny_patch16_224.py", "model", "ViTLoaderLiBai",
            dict(img_size=32, patch_size=16, embed_dim=16, depth=2, num_heads=2, num_classes=10)),
    "Swin": ("configs/common/models/swin/swin_tiny_patch4_window7_224.py", "model", "SwinLoaderLiBai",
             dict(img_size=32, embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4,
                  num_classes=10, drop_path_rate=0.0)),
    "SwinV2": ("configs/common/models/swinv2/swinv2_tiny_patch4_window8_256.py", "model",
               "SwinV2LoaderLiBai",
               dict(img_size=32, embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=4,
                    num_classes=10, drop_path_rate=0.0, pretrained_window_sizes=[0, 0])),
    "ResMLP": ("configs/common/models/resmlp/resmlp_12.py", "model", None,
               dict(img_size=32, embed_dim=16, depth=2, num_classes=10, drop_path_rate=0.0)),
}


def family_inputs() -> Dict[str, Dict[str, Any]]:
    import numpy as np

    rng = np.random.RandomState(0)
    attention = np.ones((2, 8), dtype=bool)
    attention[1, 6:] = False
    text = {"input_ids": rng.randint(0, 64, (2, 8)), "attention_mask": attention,
            "tokentype_ids": (np.arange(8)[None, :] >= 4).repeat(2, 0).astype(np.int64)}
    t5 = {"encoder_input_ids": rng.randint(0, 64, (2, 8)), "decoder_input_ids": rng.randint(0, 64, (2, 6)),
          "encoder_attn_mask": np.ones((2, 8, 8), bool),
          "decoder_attn_mask": np.tril(np.ones((6, 6), bool))[None].repeat(2, 0),
          "encoder_decoder_attn_mask": np.ones((2, 6, 8), bool)}
    image = {"images": rng.randn(2, 3, 32, 32).astype(np.float32)}
    return {"BERT": text, "T5": t5, "ViT": image, "Swin": image, "SwinV2": image, "ResMLP": image}


UPSTREAM_FAMILIES = textwrap.dedent('''
    import json, os, sys, zlib
    spec = json.load(open(sys.argv[1]))
    sys.path.insert(0, spec["shims"])
    import run_libai  # noqa: F401
    import numpy as np
    import oneflow as flow
    from libai.config import LazyConfig, instantiate
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    train = LazyConfig.load(os.path.join(spec["src"], "configs/common/train.py")).train
    train.dist.device_type = "cpu"
    dist.setup_dist_util(train.dist)

    # CPU shim: LiBai's Swin models ask for CUDA-only fused kernels whatever the config says;
    # build those layers unfused (the same formula, computed by separate ops).
    import inspect
    from libai.layers import mlp
    from libai.models import swin_transformer, swin_transformer_v2
    FUSED = ("bias_gelu_fusion", "bias_dropout_fusion", "fused_bias_add_dropout")

    def unfused(cls):
        original = cls.__init__
        names = list(inspect.signature(original).parameters)

        def init(self, *args, **kwargs):
            for key in FUSED:
                if key in names:
                    position = names.index(key) - 1  # without self
                    if position < len(args):
                        args = args[:position] + (False,) + args[position + 1:]
                    else:
                        kwargs[key] = False
            original(self, *args, **kwargs)
        cls.__init__ = init

    unfused(mlp.MLP)
    for module in (swin_transformer, swin_transformer_v2):
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module.__name__ and any(
                    key in inspect.signature(value.__init__).parameters for key in FUSED):
                unfused(value)
    place = dict(placement=flow.placement("cpu", ranks=[0]), sbp=flow.sbp.broadcast)
    for name, (config, node, _, shrink) in spec["families"].items():
        cfg = LazyConfig.load(os.path.join(spec["src"], config))[node]
        for key, value in shrink.items():
            cfg.cfg[key] = value
        for key in ("bias_gelu_fusion", "bias_dropout_fusion", "scale_mask_softmax_fusion"):
            if key in cfg.cfg:
                cfg.cfg[key] = False
        model = instantiate(cfg)
        model._apply(dist.convert_to_distributed_default_setting)
        if spec.get("load"):  # the export of libai's model, read back by LiBai
            Checkpointer(model).load(os.path.join(spec["load"], name, "model_0000000"), checkpointables=[])
        else:
            with flow.no_grad():
                for key, tensor in model.named_parameters():  # buffers are computed: kept
                    noise = np.random.RandomState(zlib.crc32(key.encode())).randn(*tensor.shape)
                    tensor.copy_(flow.tensor((tensor.numpy() + 0.1 * noise).astype(np.float32)).to_global(**place))
            Checkpointer(model, os.path.join(spec["out"], name)).save("model_0000000")
        inputs = {k: flow.tensor(v).to_global(**place) for k, v in np.load(os.path.join(spec["out"], name + "_inputs.npz")).items()}
        model.eval()
        with flow.no_grad():
            out = model(**inputs)
        np.savez(os.path.join(spec["out"], name + spec.get("suffix", "") + "_outputs.npz"),
                 **{k: v.to_local().numpy() for k, v in out.items() if isinstance(v, flow.Tensor)})
''')
