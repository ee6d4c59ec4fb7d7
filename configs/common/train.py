"""Default training settings: ``from configs.common.train import train``.

This is the one place where the defaults of ``train`` are written. The trainer completes a
user's (possibly partial) ``train`` with these values and warns about keys not listed here.
Targets are dotted strings so this file loads even where those modules are not importable yet.
"""
from libai.config import LazyCall

train = dict(
    output_dir="./output",  # where logs, metrics.json, config.yaml and checkpoints go
    train_micro_batch_size=32,  # samples per data-parallel rank per micro-batch
    global_batch_size=None,  # micro batch × accumulation steps × data parallel; None = derived
    num_accumulation_steps=None,  # micro-batches per optimizer step; None = derived (or 1)
    train_iter=10000,  # iterations; total = max(train_iter, train_epoch × iters per epoch)
    train_epoch=0,  # epochs; 0 = count by train_iter only
    train_samples=None,  # if set, iterations = train_samples // global_batch_size
    warmup_ratio=0.0,  # fraction of the total iterations spent warming up the lr
    start_iter=0,  # first iteration (set by --resume from the checkpoint)
    consumed_train_samples=0,  # samples already seen, so the sampler resumes exactly
    # kept for LiBai configs: evaluation always reads each test set from its first sample, so
    # there is no evaluation position to resume; a non-zero value is reported as having no effect
    consumed_valid_samples=0,
    amp=dict(enabled=False),  # mixed precision
    activation_checkpoint=dict(enabled=False),  # recompute activations to save memory
    # Graph mode on CUDA (flow.boxing.nccl): fuse NCCL collectives up to this many MB, at most
    # this many ops per launch; not applicable (and reported so) on the CPU
    nccl_fusion_threshold_mb=16,
    nccl_fusion_max_ops=24,
    zero_optimization=dict(enabled=False, stage=1),  # shard optimizer state (ZeRO stage 1-3)
    # save every `period` iters; keep newest N; verify: check every file's checksum when loading
    # (False only for trusted storage; $LIBAI_CHECKPOINT_VERIFY=0/1 overrides)
    checkpointer=dict(period=5000, max_to_keep=100, verify=True),
    test_micro_batch_size=32,  # evaluation samples per data-parallel rank per batch
    evaluation=dict(
        enabled=True,  # evaluate during training
        evaluator=LazyCall("libai.evaluation.ClsEvaluator")(topk=(1, 5)),  # what to measure
        eval_period=5000,  # evaluate every this many iterations (and after the last one)
        eval_iter=int(1e5),  # at most this many batches per evaluation
        eval_metric="Acc@1",  # the metric that decides the best checkpoint
        eval_mode="max",  # "max" or "min": which direction of eval_metric is better
    ),
    load_weight="",  # a checkpoint to initialize the model from ("" = none)
    log_period=20,  # write metrics every this many iterations
    scheduler=LazyCall("libai.scheduler.WarmupCosineLR")(  # the trainer fills max_iter, warmup_iter
        warmup_factor=0.001,  # lr starts at warmup_factor × base lr
        alpha=0.01,  # cosine floor as a fraction of the base lr
        warmup_method="linear",  # "linear" or "constant"
    ),
    dist=dict(
        data_parallel_size=None,  # None = whatever world size the other two leave
        tensor_parallel_size=1,  # ranks that split each layer's weights
        pipeline_parallel_size=1,  # pipeline stages
        pipeline_num_layers=None,  # layers to spread over the stages (None = model's count)
        custom_pipeline_stage_id=None,  # optional explicit stage of every layer
        device_type=None,  # "cuda" or "cpu"; None = what the machine has
    ),
    # LiBai's setting: where batches are placed. None = the layout's device; "cpu" in a CUDA run
    # keeps inputs on the host (the model moves them), as LiBai's pipeline-parallel configs do
    input_placement_device=None,
    seed=1234,  # random seed; every rank uses the same one (parallel runs start from identical weights)
    # exponential moving average of the weights; `enable`/`decay_rate` are the TrainFramework spellings
    ema=dict(enabled=False, decay=0.9999, enable=None, decay_rate=None),
    # on a NaN/inf loss: "stop" or "skip" the step; the loss is read every `period` iterations
    # (None: train.log_period) and before every checkpoint or evaluation
    nan_check=dict(enabled=True, action="stop", period=None),
    early_stopping=dict(enabled=False, patience=5),  # stop after `patience` evals without gain
    # training visuals (docs/training_visuals.md). TensorBoard extras, each every N iterations
    # (0 = off): lr of every parameter group (None: log_period), parameter/gradient histograms,
    # a grid of up to max_images images of [N, C, H, W] batch fields
    tensorboard=dict(lr_period=None, histogram_period=0, image_period=0, max_images=16),
    # PNGs in output_dir/plots refreshed every `period` iterations (None: log_period); `weight`
    # names a parameter (model.named_parameters()) to draw as an image
    live_plots=dict(enabled=False, period=None, weight=None),
    # table of modules, parameters and output shapes after the first step, logged and written to
    # output_dir/model-summary.txt; modules deeper than max_depth are folded into their parents
    model_summary=dict(enabled=True, max_depth=3, output_shapes=True),
    # hang watchdog (docs/long_runs.md): a training step, evaluation batch or checkpoint save
    # longer than `factor` x its median over the last `window` ones and than `floor` seconds writes
    # every rank's stacks to output_dir/watchdog/; one longer than `timeout` seconds ends the run
    # (exit 124) so that the launcher can restart it. $LIBAI_WATCHDOG=0 turns it off,
    # LIBAI_WATCHDOG=timeout=600,floor=60 overrides keys
    watchdog=dict(enabled=True, factor=10.0, floor=300.0, timeout=1800.0, window=50),
)


def ppl_evaluation(eval_period: int) -> dict:
    """``train.evaluation`` of a language model: perplexity every ``eval_period`` iterations,
    lower is better (the best checkpoint has the lowest). Use as
    ``train.update(dict(evaluation=ppl_evaluation(100)))`` (the keys listed here only) or
    ``train.evaluation.update(ppl_evaluation(100))`` (keeping ``eval_iter``)."""
    from libai.evaluation import PPLEvaluator

    return dict(
        enabled=True,
        evaluator=LazyCall(PPLEvaluator)(),
        eval_period=eval_period,
        eval_metric="PPL",
        eval_mode="min",
    )
