"""libai's side: the outputs of LiBai's checkpoints loaded by libai (every route), and the
metrics and resume points of the runs."""
import json
import os
import shutil
from typing import Any, Dict, List, Tuple

from tools.checkpoint_check.setup import RESUME_FROM
from tools.checkpoint_check.upstream import FAMILIES


def libai_family_outputs(ref_src: str, name: str, folder: str) -> Dict[str, Dict[str, Any]]:
    """libai's outputs for the LiBai checkpoint of family ``name``, per route."""
    import numpy as np
    import oneflow as flow

    import libai.models.utils.model_loader as loaders
    from libai.config import LazyConfig, instantiate
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    config, node, loader, shrink = FAMILIES[name]
    cfg = LazyConfig.load(os.path.join(ref_src, config))[node]
    for key, value in shrink.items():
        cfg.cfg[key] = value
    for key in ("bias_gelu_fusion", "bias_dropout_fusion", "scale_mask_softmax_fusion"):
        if key in cfg.cfg:
            cfg.cfg[key] = False
    path = os.path.join(folder, name, "model_0000000")
    inputs = dict(np.load(os.path.join(folder, name + "_inputs.npz")))
    results = {}
    with dist.ParallelLayout.from_config({"device_type": "cpu"}):
        built = {"Checkpointer.load": instantiate(cfg)}
        Checkpointer(built["Checkpointer.load"]).load(path)
        # libai's own checkpoint of it, exported to LiBai's layout for the way back
        ours = Checkpointer(built["Checkpointer.load"], os.path.join(folder, "ours", name)).save(
            "model_0000000", iteration=0)
        from libai.utils.checkpoint_convert import export_to_libai_upstream

        export_to_libai_upstream(ours, os.path.join(folder, "exported", name))
        if loader:
            built[loader] = getattr(loaders, loader)(cfg, cfg.cfg, path).load()
        for route, model in built.items():
            model.eval()
            with flow.no_grad():
                out = model(**{k: flow.tensor(v) for k, v in inputs.items()})
            results[route] = {k: dist.ttol(v).numpy() for k, v in out.items() if isinstance(v, flow.Tensor)}
    return results


def libai_logits(config: str, opts: List[str], batch: Any, routes: Dict[str, Tuple[str, str]]) -> Dict[str, Any]:
    """libai's logits on ``batch`` for each ``{tag: (route, path)}``; route is ``load``
    (Checkpointer.load), ``load_weight`` (a DefaultTrainer with train.load_weight) or
    ``loader`` (GPT2LoaderLiBai)."""
    import numpy as np
    import oneflow as flow

    from libai.config import LazyConfig
    from libai.engine import DefaultTrainer
    from libai.engine.setup import complete_config
    from libai.models import GPTForPreTraining
    from libai.models.utils.model_loader import GPT2LoaderLiBai
    from libai.utils import distributed as dist
    from libai.utils.checkpoint import Checkpointer

    def logits(model: Any) -> Any:
        model.eval()
        with flow.no_grad():
            return dist.ttol(model(flow.tensor(batch, dtype=flow.long))["prediction_scores"]).numpy()

    out = {}
    for tag, (route, path) in routes.items():
        cfg = LazyConfig.apply_overrides(complete_config(LazyConfig.load(config)), opts)
        layout = dist.ParallelLayout.from_config(cfg.train.dist)
        with layout:
            if route == "load":
                model = DefaultTrainer.build_model(cfg)
                Checkpointer(model).load(path, checkpointables=[])
                model.train()  # the training loss on the same batch, labels shifted by one
                labels = flow.tensor(np.roll(batch, 1, axis=1), dtype=flow.long)
                loss = model(flow.tensor(batch, dtype=flow.long), labels)["lm_loss"]
                out[tag.split("/")[0] + "_loss"] = dist.ttol(loss).numpy()
            elif route == "load_weight":
                cfg.train.load_weight = path
                trainer = DefaultTrainer(cfg)
                trainer.resume_or_load(resume=False)
                model = trainer.model
            else:
                model = GPT2LoaderLiBai(GPTForPreTraining, cfg.model.cfg, path).load()
            out[tag] = logits(model)
    return out


def metrics(output_dir: str) -> Dict[int, Dict[str, float]]:
    """``{iteration: {"lr": ..., "total_loss": ...}}`` from a run's metrics.json."""
    rows: Dict[int, Dict[str, float]] = {}
    with open(os.path.join(output_dir, "metrics.json")) as f:
        for line in f:
            row = json.loads(line)
            if "lr" in row:
                rows[int(row["iteration"])] = {"lr": row["lr"], "loss": row.get("total_loss")}
    return rows


def copy_resume_point(src_dir: str, dst_dir: str, name: str = RESUME_FROM) -> None:
    """``dst_dir`` as a run stopped right after saving ``name``: that checkpoint and a
    ``last_checkpoint`` naming it."""
    shutil.rmtree(dst_dir, ignore_errors=True)
    os.makedirs(dst_dir)
    shutil.copytree(os.path.join(src_dir, name), os.path.join(dst_dir, name))
    with open(os.path.join(dst_dir, "last_checkpoint"), "w") as f:
        f.write(name)

