"""The checks, one function per direction, in the order ``main`` runs them (each prints its rows
as it goes; see ``tools/libai_checkpoint_check.py`` for what each one proves)."""
import os
import shutil
from dataclasses import dataclass
from typing import Any, Dict, List

from tools.checkpoint_check.libai_side import (copy_resume_point, libai_family_outputs,
                                               libai_logits, metrics)
from tools.checkpoint_check.report import Report, compare_logits, compare_outputs, compare_resume
from tools.checkpoint_check.setup import REPO, RESUME_FROM, SEQ, Runner, overrides
from tools.checkpoint_check.upstream import (FAMILIES, UPSTREAM_FAMILIES, UPSTREAM_LOGITS,
                                             family_inputs)

EAGER = "graph.enabled=False"
MODES = (("graph", []), ("eager", [EAGER]))


@dataclass
class Workspace:
    """The work folder, the two libraries' data (``sides``: ``up`` and ``lb``), the corpus's
    vocabulary files, and where the results go."""

    work: str
    runner: Runner
    report: Report
    sides: Dict[str, str]
    vocab: str
    merges: str
    padded_vocab: int
    tol: float

    def opts(self, side: str, out: str, *more: str) -> List[str]:
        """The overrides of a run of ``side``'s data writing to ``work/out``, plus ``more``."""
        return overrides(self.sides[side], self.vocab, self.merges, os.path.join(self.work, out)) + list(more)

    def path(self, *parts: str) -> str:
        return os.path.join(self.work, *parts)


def check_families(ws: Workspace) -> None:
    """BERT, T5, ViT, Swin, SwinV2 and ResMLP: LiBai saves, libai loads (every route), then
    libai's export is read back by LiBai."""
    import numpy as np

    runner = ws.runner
    print("Other families: LiBai saves, libai loads ...", flush=True)
    fam_dir = ws.path("families")
    os.makedirs(fam_dir, exist_ok=True)
    for name, inputs in family_inputs().items():
        np.savez(os.path.join(fam_dir, name + "_inputs.npz"), **inputs)
    runner.upstream_script(UPSTREAM_FAMILIES, {
        "shims": runner.shims, "src": os.path.join(runner.ref, "src"), "out": fam_dir,
        "families": FAMILIES}, "up_families.log")
    mine: Dict[str, Dict[str, Any]] = {}
    for name in FAMILIES:
        theirs = dict(np.load(os.path.join(fam_dir, name + "_outputs.npz")))
        inputs = dict(np.load(os.path.join(fam_dir, name + "_inputs.npz")))
        try:
            routes = libai_family_outputs(os.path.join(runner.ref, "src"), name, fam_dir)
        except Exception as exc:  # report and go on: one family must not hide the others
            ws.report.add(f"LiBai -> libai {name}", False, f"{type(exc).__name__}: {str(exc)[:300]}")
            continue
        mine[name] = routes["Checkpointer.load"]
        for route, outputs in routes.items():
            for key in sorted(theirs):
                if key not in outputs:
                    ws.report.add(f"LiBai -> libai {name} {route} {key}", False, "output missing")
                    continue
                compare_outputs(ws.report, f"LiBai -> libai {name} {route} {key}",
                                outputs[key], theirs[key], inputs, ws.tol)

    runner.upstream_script(UPSTREAM_FAMILIES, {
        "shims": runner.shims, "src": os.path.join(runner.ref, "src"), "out": fam_dir,
        "families": {n: FAMILIES[n] for n in mine}, "load": os.path.join(fam_dir, "exported"),
        "suffix": "_export"}, "up_families_export.log")
    for name, outputs in mine.items():
        theirs = dict(np.load(os.path.join(fam_dir, name + "_export_outputs.npz")))
        inputs = dict(np.load(os.path.join(fam_dir, name + "_inputs.npz")))
        for key in sorted(theirs):
            compare_outputs(ws.report, f"libai -> LiBai {name} (exported, LiBai Checkpointer.load) {key}",
                            outputs[key], theirs[key], inputs, ws.tol)


@dataclass
class GPTRun:
    """What the GPT-2 checks share: the fixed batch, where LiBai's logits go, and the options."""

    batch: Any
    logits_dir: str
    vocab_opt: str
    lb_opts: List[str]


def upstream_logits_spec(ws: Workspace, gpt: GPTRun, **entries: Any) -> Dict[str, Any]:
    """The spec of one run of ``UPSTREAM_LOGITS`` (``entries``: its checkpoints and loaders)."""
    return dict({
        "shims": ws.runner.shims, "config": ws.runner.config, "batch": ws.path("batch.npy"),
        "overrides": ws.opts("up", "up_logits", gpt.vocab_opt, "+train.dist.device_type=cpu")},
        **entries, out=gpt.logits_dir)


def check_libai_loads_libai_gpt(ws: Workspace) -> GPTRun:
    """LiBai trains GPT-2 (graph and eager); libai loads its checkpoints by every route and
    computes the same logits and training loss."""
    import numpy as np

    print("LiBai trains (graph mode, eager mode) ...", flush=True)
    ws.runner.upstream_train(ws.opts("up", "up_graph"), "up_graph.log")
    ws.runner.upstream_train(ws.opts("up", "up_eager", EAGER), "up_eager.log")

    batch = np.random.RandomState(0).randint(0, 265, size=(2, SEQ)).astype(np.int64)
    np.save(ws.path("batch.npy"), batch)
    logits_dir = ws.path("logits")
    os.makedirs(logits_dir, exist_ok=True)
    vocab_opt = f"model.cfg.vocab_size={ws.padded_vocab}"
    gpt = GPTRun(batch, logits_dir, vocab_opt,
                 ws.opts("lb", "lb_logits", vocab_opt, "train.dist.device_type=cpu"))
    up_ckpts = {"graph_0000002": ws.path("up_graph", RESUME_FROM),
                "eager_final": ws.path("up_eager", "model_final")}
    ws.runner.upstream_script(UPSTREAM_LOGITS, upstream_logits_spec(ws, gpt, checkpoints=up_ckpts),
                              "up_logits.log")

    print("libai loads LiBai's checkpoints ...", flush=True)
    routes = {}
    for tag, path in up_ckpts.items():
        routes[f"{tag}/Checkpointer.load"] = ("load", path)
        routes[f"{tag}/train.load_weight"] = ("load_weight", path)
        routes[f"{tag}/GPT2LoaderLiBai"] = ("loader", path)
        routes[f"{tag}/GPT2LoaderLiBai(model part)"] = ("loader", os.path.join(path, "model"))
    ours = libai_logits(ws.runner.config, gpt.lb_opts, batch, routes)
    for name, value in ours.items():
        if name.endswith("_loss"):
            theirs = np.load(os.path.join(logits_dir, name + ".npy"))
            compare_logits(ws.report, f"LiBai -> libai training loss on the same batch, "
                           f"{name[:-5]}", value, theirs, ws.tol)
            continue
        theirs = np.load(os.path.join(logits_dir, name.split("/")[0] + ".npy"))
        compare_logits(ws.report, f"LiBai -> libai logits, {name}", value, theirs, ws.tol)
    return gpt


def check_libai_resumes_libai(ws: Workspace) -> None:
    """libai's ``--resume`` continues LiBai's runs with LiBai's iterations and learning rates."""
    print("libai resumes LiBai's runs ...", flush=True)
    for mode, extra in MODES:
        resumed = ws.path(f"lb_resume_{mode}")
        copy_resume_point(ws.path(f"up_{mode}"), resumed)
        ws.runner.libai_train(ws.opts("lb", f"lb_resume_{mode}", *extra), f"lb_resume_{mode}.log",
                              resume=True)
        compare_resume(ws.report, f"LiBai {mode} run resumed by libai", metrics(resumed),
                       metrics(ws.path(f"up_{mode}")))


def check_libai_to_libai(ws: Workspace, gpt: GPTRun) -> None:
    """libai trains; its exported checkpoint gives LiBai the same logits and resumes there."""
    import numpy as np

    print("libai trains; its checkpoint goes back to LiBai ...", flush=True)
    ws.runner.libai_train(ws.opts("lb", "lb_run"), "lb_run.log")
    exported = ws.path("exported")
    ws.runner.libai_tool([os.path.join(REPO, "tools", "convert_checkpoint.py"), "--to", "libai-upstream",
                          ws.path("lb_run", RESUME_FROM), exported], "export.log")
    export_ckpt = os.path.join(exported, RESUME_FROM)
    spec = upstream_logits_spec(ws, gpt, checkpoints={"exported": export_ckpt},
                                loader={"exported_loader": os.path.join(export_ckpt, "model")})
    ws.runner.upstream_script(UPSTREAM_LOGITS, spec, "up_logits_exported.log")
    mine = libai_logits(ws.runner.config, gpt.lb_opts, gpt.batch,
                        {"ours": ("load", ws.path("lb_run", RESUME_FROM))})["ours"]
    compare_logits(ws.report, "libai -> LiBai logits, LiBai Checkpointer.load of the export", mine,
                   np.load(os.path.join(gpt.logits_dir, "exported.npy")), ws.tol)
    compare_logits(ws.report, "libai -> LiBai logits, LiBai GPT2LoaderLiBai of the export's model", mine,
                   np.load(os.path.join(gpt.logits_dir, "exported_loader.npy")), ws.tol)
    for mode, extra in MODES:
        target = ws.path(f"up_resume_{mode}")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(exported, target)
        ws.runner.upstream_train(ws.opts("up", f"up_resume_{mode}", *extra), f"up_resume_{mode}.log",
                                 resume=True)
        compare_resume(ws.report, f"libai run resumed by LiBai ({mode})", metrics(target),
                       metrics(ws.path("lb_run")))
