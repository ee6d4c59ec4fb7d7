"""What the libai engine costs: ``DefaultTrainer`` against a hand-written OneFlow loop.

    python benchmarks/bench_trainer_overhead.py                    # ~2-3 minutes
    python benchmarks/bench_trainer_overhead.py --iters 60 --repeats 3 --breakdown

Both sides train the same model on the same data with the same optimizer and schedule:

* the model is the MNIST project's ``MNISTClassifier`` widened to three hidden layers of
  ``--hidden`` (1024) units, so that a step is real arithmetic, not only Python overhead;
* the data is scikit-learn's real handwritten digits written as MNIST IDX files, read by
  ``MNISTDataset`` (batch ``--batch-size``, 256), in the main process (``num_workers=0``);
* AdamW over the same parameter groups (no weight decay on biases, no gradient clipping), and
  a ``WarmupCosineLR`` schedule (no warmup) stepped after every iteration;
* OneFlow threads: ``OMP_NUM_THREADS`` is set to ``--threads`` (1) before OneFlow is imported,
  the same for both sides (the multi-process launcher also uses one thread per process).

(a) the hand-written loop is plain eager OneFlow: a ``DataLoader`` over the dataset, forward,
``loss.backward()``, ``optimizer.step()``, ``zero_grad()``, ``scheduler.step()``, and the loss
read every ``--log-period`` iterations. (b) is ``DefaultTrainer`` with its default hooks:
iteration timer, LR scheduler, preemption handler, periodic checkpointer (period beyond the run),
writers every ``--log-period`` iterations (console line to ``log.txt``, ``metrics.json``,
TensorBoard when installed); evaluation off.

The two loops run in the same process and take turns: (b) trains, and every ``--chunk``
timed iterations it hands over to (a) for as many iterations, then continues (each turn
bounded by a wait for queued work). So both meet the same machine, second by second; on a
shared machine whose load changes from one second to the next, running (a) and then (b)
compares two different machines (timings moved 10-15% between identical runs here, far more
when others ran tests). Each side first runs ``--warmup`` untimed iterations, and the
trainer's final checkpoint falls after the timed ones. ``--repeats`` such paired runs, each
from scratch, alternate who takes the first turn; the report gives every ratio and their
spread. ``--breakdown`` adds one trainer run that times every hook, to show where overhead goes.
"""
import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Throughput of DefaultTrainer against a hand-written OneFlow loop on the same "
        "model, data, optimizer and schedule (samples/s, their ratio and spread)."
    )
    parser.add_argument("--iters", type=int, default=30, help="timed iterations per run (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=5,
                        help="untimed iterations at the start of each run (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="paired runs of (a) and (b), each from scratch (default: %(default)s)")
    parser.add_argument("--chunk", type=int, default=5,
                        help="iterations per turn: (a) and (b) take turns of this many timed "
                        "iterations (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=256, help="samples per step (default: %(default)s)")
    parser.add_argument("--hidden", type=int, default=1024,
                        help="width of each of the three hidden layers (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP_NUM_THREADS for OneFlow, set before it is imported (default: %(default)s)")
    parser.add_argument("--log-period", type=int, default=20,
                        help="both loops read the loss (libai: writers run) this often (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1234, help="seed of both runs (default: %(default)s)")
    parser.add_argument("--breakdown", action="store_true",
                        help="add one DefaultTrainer run timing each hook and the step itself")
    args = parser.parse_args(argv)
    for name in ("iters", "warmup", "repeats", "chunk", "batch_size", "hidden", "threads", "log_period"):
        minimum = 0 if name == "warmup" else 1
        if getattr(args, name) < minimum:
            parser.error(f"--{name.replace('_', '-')} must be >= {minimum}, got {getattr(args, name)}")
    return args


if __name__ == "__main__":
    # OneFlow sizes its CPU thread pools when it is imported: set the thread count first.
    ARGS = parse_args()
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)

sys.path.insert(0, REPO_ROOT)

import libai  # noqa: E402,F401  (before oneflow)
import oneflow as flow  # noqa: E402
from oneflow.utils.data import DataLoader  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from libai.config import LazyCall, get_config  # noqa: E402
from libai.data import Instance  # noqa: E402
from libai.data.build import build_image_train_loader  # noqa: E402
from libai.data.datasets import MNISTDataset  # noqa: E402
from libai.data.datasets.mnist import make_digits_mnist  # noqa: E402
from libai.engine import DefaultTrainer  # noqa: E402
from libai.engine.trainer import HookBase  # noqa: E402
from libai.optim import get_default_optimizer_params  # noqa: E402
from libai.scheduler import WarmupCosineLR  # noqa: E402
from libai.utils import distributed as dist  # noqa: E402
from projects.MNIST.modeling.model import MNISTClassifier  # noqa: E402

LR, WEIGHT_DECAY, BETAS, EPS, COSINE_FLOOR = 1e-3, 0.01, (0.9, 0.999), 1e-8, 0.01


@dataclass
class RunResult:
    """One side of a paired run, over its timed iterations: samples per second of wall time
    and per second of this process's CPU time (all threads); the CPU time of the Python thread
    per iteration, in ms (the engine's own work, hooks included, happens there, while OneFlow
    computes on its own threads); and the last loss read."""

    samples_per_s: float
    samples_per_cpu_s: float
    python_ms_per_iter: float
    last_loss: float


def wait_for(model: flow.nn.Module) -> None:
    """Block until queued work is done. OneFlow runs eager ops asynchronously; reading the last
    parameter waits for its update, which is queued after the whole step."""
    list(model.parameters())[-1].numpy()


class Stopwatch:
    """Adds up wall time, process CPU time and this thread's CPU time over several
    ``start()``/``pause()`` intervals, each bounded by a wait for queued work. Other programs
    on the machine slow the wall clock most, process CPU time less, and this thread's CPU time
    least: together they tell engine overhead from a busy machine."""

    CLOCKS = (time.perf_counter, time.process_time, time.thread_time)

    def __init__(self) -> None:
        self.totals = [0.0, 0.0, 0.0]
        self._starts = [0.0, 0.0, 0.0]

    def start(self, model: flow.nn.Module) -> None:
        wait_for(model)
        self._starts = [clock() for clock in self.CLOCKS]

    def pause(self, model: flow.nn.Module) -> None:
        wait_for(model)
        for i, clock in enumerate(self.CLOCKS):
            self.totals[i] += clock() - self._starts[i]

    def result(self, iters: int, batch_size: int, last_loss: float) -> RunResult:
        wall, cpu, thread = self.totals
        samples = iters * batch_size
        return RunResult(samples / wall, samples / cpu, 1000 * thread / iters, last_loss)


def make_model(args: argparse.Namespace) -> MNISTClassifier:
    return MNISTClassifier(input_size=28 * 28, hidden_sizes=(args.hidden,) * 3, num_classes=10)


# ---------------------------------------------------------------------------------------------
# (a) the hand-written loop
# ---------------------------------------------------------------------------------------------
def endless(loader: DataLoader) -> Iterator[Instance]:
    while True:
        yield from loader


class HandLoop:
    """Plain eager OneFlow, the reference an engine should be close to. One iteration per
    :meth:`step`, so that it can take turns with the trainer."""

    def __init__(self, args: argparse.Namespace, data_dir: str) -> None:
        self.device = flow.device(dist.default_device_type())
        flow.manual_seed(args.seed)
        self.model = make_model(args).to(self.device)
        self.model.train()
        groups = get_default_optimizer_params(self.model, weight_decay_norm=0.0, weight_decay_bias=0.0)
        self.optimizer = flow.optim.AdamW(groups, lr=LR, weight_decay=WEIGHT_DECAY, betas=BETAS, eps=EPS)
        self.scheduler = WarmupCosineLR(self.optimizer, max_iter=args.warmup + args.iters + 1,
                                        warmup_iter=0, alpha=COSINE_FLOOR)
        dataset = MNISTDataset(data_dir, train=True, image_field="inputs")
        loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, drop_last=True,
                            collate_fn=Instance.stack, num_workers=0)
        self.batches = endless(loader)
        self.log_period = args.log_period
        self.iter = 0
        self.last_loss = float("nan")

    def step(self) -> None:
        batch = next(self.batches)
        inputs = batch.get("inputs").tensor.to(self.device)
        labels = batch.get("labels").tensor.to(self.device)
        loss = self.model(inputs=inputs, labels=labels)["losses"]
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        self.scheduler.step()
        self.iter += 1
        if self.iter % self.log_period == 0:
            self.last_loss = float(loss.numpy())

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()


# ---------------------------------------------------------------------------------------------
# (b) DefaultTrainer, taking turns with (a)
# ---------------------------------------------------------------------------------------------
def make_config(args: argparse.Namespace, data_dir: str, output_dir: str) -> Any:
    """The same run as a libai config (what a project's config file would hold)."""
    cfg = OmegaConf.create()
    cfg.model = LazyCall(MNISTClassifier)(input_size=28 * 28, hidden_sizes=(args.hidden,) * 3, num_classes=10)
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.train = LazyCall(build_image_train_loader)(
        dataset=[LazyCall(MNISTDataset)(root=data_dir, train=True, image_field="inputs")], num_workers=0)
    cfg.dataloader.test = []
    cfg.optim = get_config("common/optim.py").optim
    cfg.optim.update(lr=LR, weight_decay=WEIGHT_DECAY, betas=BETAS, eps=EPS)
    cfg.optim.params.clip_grad_max_norm = None
    cfg.optim.params.clip_grad_norm_type = None
    cfg.graph = get_config("common/models/graph.py").graph
    cfg.train = get_config("common/train.py").train
    # One iteration past the timed ones, so the final checkpoint is not timed.
    max_iter = args.warmup + args.iters + 1
    cfg.train.update(dict(
        output_dir=output_dir, train_micro_batch_size=args.batch_size, train_iter=max_iter,
        train_epoch=0, warmup_ratio=0.0, log_period=args.log_period, seed=args.seed,
        checkpointer=dict(period=max_iter + 1000), evaluation=dict(enabled=False),
    ))
    cfg.train.scheduler.alpha = COSINE_FLOOR
    return cfg


class Turns(HookBase):
    """Makes the trainer and the hand-written loop take turns of ``chunk`` timed iterations.

    Registered last, so a turn of the trainer ends after all its hooks. Each turn starts and
    ends with a wait for queued work; while one side runs, the other is idle. Both sides thus
    meet the same machine, second by second, which a busy shared machine needs: there, running
    (a) and then (b) compares two different machines. ``hand_first`` swaps who starts.
    """

    def __init__(self, hand: HandLoop, warmup: int, iters: int, chunk: int, hand_first: bool) -> None:
        self.hand, self.warmup, self.iters, self.chunk = hand, warmup, iters, chunk
        self.hand_first = hand_first
        self.trainer_watch, self.hand_watch = Stopwatch(), Stopwatch()
        self.hand_timed = 0

    def _hand_turn(self) -> None:
        steps = min(self.chunk, self.iters - self.hand_timed)
        if steps > 0:
            self.hand_watch.start(self.hand.model)
            self.hand.run(steps)
            self.hand_watch.pause(self.hand.model)
            self.hand_timed += steps

    def _timed_done(self) -> int:
        """Timed iterations of the trainer finished after the current one."""
        return self.trainer.iter + 1 - self.warmup

    def before_train(self) -> None:
        self.hand.run(self.warmup)  # the hand loop's own untimed warm-up
        if self.warmup == 0:
            self._start_window()

    def _start_window(self) -> None:
        if self.hand_first:
            self._hand_turn()
        self.trainer_watch.start(self.trainer.model)

    def after_step(self) -> None:
        done = self._timed_done()
        if done == 0:
            self._start_window()
        elif 0 < done <= self.iters and (done % self.chunk == 0 or done == self.iters):
            self.trainer_watch.pause(self.trainer.model)
            self._hand_turn()
            if done < self.iters:
                self.trainer_watch.start(self.trainer.model)


def log_to_file(output_dir: str) -> logging.Handler:
    """Send libai's log (the console line included) to ``log.txt`` only, as a run would."""
    handler = logging.FileHandler(os.path.join(output_dir, "log.txt"))
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(name)s %(levelname)s: %(message)s"))
    log = logging.getLogger("libai")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(handler)
    return handler


def run_trainer(args: argparse.Namespace, data_dir: str, extra_hooks: List[HookBase],
                instrument: Optional[Callable[[DefaultTrainer], Any]] = None) -> DefaultTrainer:
    """Train with ``DefaultTrainer`` and its default hooks plus ``extra_hooks`` (registered
    last); ``instrument(trainer)`` may wrap its parts first."""
    with tempfile.TemporaryDirectory(prefix="bench_trainer_") as out:
        handler = log_to_file(out)
        try:
            trainer = DefaultTrainer(make_config(args, data_dir, out))
            trainer.register_hooks(extra_hooks)
            if instrument is not None:
                instrument(trainer)
            trainer.train()
        finally:
            logging.getLogger("libai").removeHandler(handler)
            handler.close()
    return trainer


def run_pair(args: argparse.Namespace, data_dir: str, hand_first: bool) -> Dict[str, RunResult]:
    """(a) and (b) from scratch, taking turns; their results by name."""
    hand = HandLoop(args, data_dir)
    turns = Turns(hand, args.warmup, args.iters, args.chunk, hand_first)
    trainer = run_trainer(args, data_dir, [turns])
    if turns.hand_timed != args.iters or trainer.iter != args.warmup + args.iters + 1:
        raise RuntimeError(f"uneven turns: the hand-written loop ran {turns.hand_timed} timed "
                           f"iterations, the trainer {trainer.iter - args.warmup - 1}; expected {args.iters}")
    loss = float(trainer.storage.history("total_loss").latest())
    return {
        "hand-written loop": turns.hand_watch.result(args.iters, args.batch_size, hand.last_loss),
        "DefaultTrainer": turns.trainer_watch.result(args.iters, args.batch_size, loss),
    }


# ---------------------------------------------------------------------------------------------
# --breakdown: where the trainer's time goes
# ---------------------------------------------------------------------------------------------
class HookTimes:
    """Wraps each hook event and the step runner so that their time inside the window adds up.

    Every wrapped call waits for queued work before and after itself, so time is charged to
    the call that causes it rather than to whichever later call happens to wait for it.
    """

    EVENTS = ("before_step", "after_backward", "after_step")

    def __init__(self, warmup: int, iters: int) -> None:
        self.first, self.last = warmup, warmup + iters - 1
        self.seconds: Dict[str, float] = defaultdict(float)
        self.floor: List[float] = []

    def __call__(self, trainer: DefaultTrainer) -> None:
        for hook in trainer.hooks:
            for event in self.EVENTS:
                if getattr(type(hook), event) is not getattr(HookBase, event):
                    setattr(hook, event, self._timed(trainer, f"{hook.name}.{event}", getattr(hook, event)))
        runner = trainer._trainer
        runner.run_step = self._timed(trainer, "step (data, forward, backward, update)", runner.run_step)

    def _timed(self, trainer: DefaultTrainer, name: str, fn: Callable[[], None]) -> Callable[[], None]:
        def timed() -> None:
            if not self.first <= trainer.iter <= self.last:
                return fn()
            wait_for(trainer.model)
            start = time.perf_counter()
            wait_for(trainer.model)  # the cost of measuring: a wait with nothing queued
            begin = time.perf_counter()
            fn()
            wait_for(trainer.model)
            end = time.perf_counter()
            self.seconds[name] += end - begin
            self.floor.append(begin - start)
        return timed

    def table(self, iters: int) -> List[str]:
        """Milliseconds per iteration of each part, less the measuring cost (after_backward
        runs inside the step, so the step's time includes it)."""
        floor = statistics.mean(self.floor)
        width = max(len(name) for name in self.seconds)
        rows = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        lines = [f"  {name:<{width}}  {1000 * (seconds / iters - floor):8.3f} ms/iter" for name, seconds in rows]
        lines.append(f"  (the measuring cost, {1000 * floor:.3f} ms per call, is subtracted from each line; "
                     "values within about that much of 0 mean: too small to measure)")
        return lines


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def spread(values: List[float]) -> str:
    mean = statistics.mean(values)
    low, high = min(values), max(values)
    return f"mean {mean:8.1f}  min {low:8.1f}  max {high:8.1f}  spread {100 * (high - low) / mean:5.1f}%"


def describe(args: argparse.Namespace) -> str:
    params = sum(p.numel() for p in make_model(args).parameters())
    return (
        f"model: MNISTClassifier 784-{args.hidden}-{args.hidden}-{args.hidden}-10 ({params:,} parameters), "
        f"batch {args.batch_size}, AdamW, WarmupCosineLR stepped every iteration\n"
        f"device: {dist.default_device_type()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; "
        f"{args.warmup} warm-up + {args.iters} timed iterations per side and run, in turns of "
        f"{args.chunk}; {args.repeats} run(s); loss read / writers every {args.log_period} iterations"
    )


def run_pairs(args: argparse.Namespace, data_dir: str) -> Dict[str, List[RunResult]]:
    """``repeats`` paired runs; who takes the first turn alternates from one to the next."""
    results: Dict[str, List[RunResult]] = {"hand-written loop": [], "DefaultTrainer": []}
    print(f"{'':6}  {'samples/s (wall time)':^28}  {'samples per CPU second':^28}  {'Python thread CPU ms/iter':^26}")
    print(f"{'repeat':>6}  {'hand':>8} {'libai':>8} {'ratio':>8}    {'hand':>8} {'libai':>8} {'ratio':>8}    "
          f"{'hand':>7} {'libai':>7} {'extra':>7}")
    for repeat in range(args.repeats):
        for name, result in run_pair(args, data_dir, hand_first=repeat % 2 == 1).items():
            results[name].append(result)
        a, b = results["hand-written loop"][-1], results["DefaultTrainer"][-1]
        print(f"{repeat + 1:>6}  {a.samples_per_s:>8.1f} {b.samples_per_s:>8.1f} {b.samples_per_s / a.samples_per_s:>8.3f}"
              f"    {a.samples_per_cpu_s:>8.1f} {b.samples_per_cpu_s:>8.1f} "
              f"{b.samples_per_cpu_s / a.samples_per_cpu_s:>8.3f}    {a.python_ms_per_iter:>7.2f} "
              f"{b.python_ms_per_iter:>7.2f} {b.python_ms_per_iter - a.python_ms_per_iter:>+7.2f}", flush=True)
    return results


def report(results: Dict[str, List[RunResult]]) -> None:
    """Per side: mean, min, max and spread. Then DefaultTrainer / hand-written three ways: the
    ratio of the means; the median of the per-repeat ratios (robust to one disturbed repeat);
    and the ratio of the best runs (a busy machine only ever adds time, so the fastest run of
    each side is the least disturbed estimate of what it costs). Last, the extra CPU time the
    trainer's Python thread spends per iteration: its overhead, measured where it happens."""
    hand, ours = results["hand-written loop"], results["DefaultTrainer"]
    for label, field in (("wall time", "samples_per_s"), ("CPU time", "samples_per_cpu_s")):
        a = [getattr(r, field) for r in hand]
        b = [getattr(r, field) for r in ours]
        ratios = [y / x for x, y in zip(a, b)]
        ratio = statistics.mean(b) / statistics.mean(a)
        unit = "samples/s" if field == "samples_per_s" else "samples/CPU-s"
        print(f"\n[{label}]")
        print(f"hand-written loop: {spread(a)}  {unit}")
        print(f"DefaultTrainer:    {spread(b)}  {unit}")
        print(f"ratio DefaultTrainer / hand-written ({label}): {ratio:.3f}  "
              f"(median of per-repeat ratios {statistics.median(ratios):.3f}, range {min(ratios):.3f} .. "
              f"{max(ratios):.3f}; best run / best run {max(b) / max(a):.3f})")
    extra = [b.python_ms_per_iter - a.python_ms_per_iter for a, b in zip(hand, ours)]
    print(f"\n[Python thread]\nhand-written loop: {statistics.mean(r.python_ms_per_iter for r in hand):.2f} ms/iter, "
          f"DefaultTrainer: {statistics.mean(r.python_ms_per_iter for r in ours):.2f} ms/iter; "
          f"libai extra: median {statistics.median(extra):+.2f} ms/iter (range {min(extra):+.2f} .. {max(extra):+.2f})")
    print(f"\nlast loss read: hand-written {hand[-1].last_loss:.4f}, DefaultTrainer {ours[-1].last_loss:.4f}")


def main(args: argparse.Namespace) -> int:
    print(describe(args), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_digits_") as data_dir:
        make_digits_mnist(data_dir)
        results = run_pairs(args, data_dir)
        report(results)
        if args.breakdown:
            times = HookTimes(args.warmup, args.iters)
            run_trainer(args, data_dir, [], instrument=times)
            print("\nDefaultTrainer breakdown (one extra run, a device wait around each part):")
            print("\n".join(times.table(args.iters)))
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
