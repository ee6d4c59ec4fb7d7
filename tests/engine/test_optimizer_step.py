"""OptimizerStep: clipping by the norm of all parameters together, accumulation scaling, and
the start-up check of technique combinations."""
import numpy as np
import oneflow as flow
import pytest

from libai.engine.optimizer_step import OptimizerStep, clip_grad_norm_global
from libai.engine.support import check_supported, zero_applies


def _model_with_grads():
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(3, 4), flow.nn.Linear(4, 2))
    (model(flow.randn(5, 3)) ** 2).sum().backward()
    return model


def test_clipping_uses_the_norm_of_all_parameters_together():
    model = _model_with_grads()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    total = np.sqrt(sum((g ** 2).sum() for g in grads))
    returned = clip_grad_norm_global(list(model.parameters()), max_norm=0.5)
    assert float(returned) == pytest.approx(total, rel=1e-5)
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_allclose(p.grad.numpy(), g * 0.5 / (total + 1e-6), rtol=1e-5)


@pytest.mark.parametrize("norm_type", [1.0, 3.0, float("inf")])
def test_clipping_by_other_norms_uses_that_norm_of_all_parameters(norm_type):
    model = _model_with_grads()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    flat = np.abs(np.concatenate([g.ravel() for g in grads]).astype(np.float64))
    total = flat.max() if norm_type == float("inf") else (flat ** norm_type).sum() ** (1 / norm_type)
    returned = clip_grad_norm_global(list(model.parameters()), max_norm=0.1, norm_type=norm_type)
    assert float(returned) == pytest.approx(total, rel=1e-5)
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_allclose(p.grad.numpy(), g * 0.1 / (total + 1e-6), rtol=1e-5)


def test_two_parameter_groups_are_clipped_jointly_not_each_by_its_own_norm():
    model = _model_with_grads()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    params = list(model.parameters())
    opt = flow.optim.SGD([
        {"params": params[:2], "clip_grad_max_norm": 0.5, "clip_grad_norm_type": 2.0},
        {"params": params[2:], "clip_grad_max_norm": 0.5, "clip_grad_norm_type": 2.0},
    ], lr=1.0)
    before = [p.numpy().copy() for p in params]
    OptimizerStep(opt).step()
    total = np.sqrt(sum((g ** 2).sum() for g in grads))
    for p, w, g in zip(params, before, grads):
        np.testing.assert_allclose(p.numpy(), w - g * 0.5 / (total + 1e-6), rtol=1e-5, atol=1e-7)


def test_groups_that_disagree_on_clipping_are_an_error():
    params = list(_model_with_grads().parameters())
    opt = flow.optim.SGD([{"params": params[:2], "clip_grad_max_norm": 0.5},
                          {"params": params[2:], "clip_grad_max_norm": 1.0}], lr=1.0)
    with pytest.raises(ValueError, match="different gradient clipping"):
        OptimizerStep(opt).step()


def test_accumulated_backward_averages_micro_batch_losses():
    flow.manual_seed(0)
    w = flow.nn.Parameter(flow.ones(3))
    opt = flow.optim.SGD([w], lr=1.0)
    step = OptimizerStep(opt, grad_acc_steps=2)
    step.backward((w * 2).sum())
    step.backward((w * 4).sum())
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0, 3.0])


def test_unsupported_combinations_fail_at_start_up_naming_what_works():
    with pytest.raises(ValueError, match="needs Graph mode.*graph.enabled=True"):
        check_supported(graph_enabled=False, amp=False, zero=True, zero_stage=1,
                        data_parallel_size=2, device_type="cpu")
    notes = check_supported(graph_enabled=True, amp=False, zero=True, zero_stage=2,
                            data_parallel_size=1, device_type="cpu")
    assert any("no effect" in n for n in notes)


@pytest.mark.parametrize(
    "enabled,dp,device,applies",
    [(True, 2, "cuda", True), (True, 8, "cuda", True), (False, 2, "cuda", False),
     (True, 1, "cuda", False), (True, 2, "cpu", False)],
)
def test_zero_shards_only_with_several_data_parallel_ranks_on_cuda(enabled, dp, device, applies):
    assert zero_applies(enabled, dp, device) is applies


def test_zero_on_the_cpu_is_reported_not_silently_dropped():
    notes = check_supported(graph_enabled=True, amp=False, zero=True, zero_stage=2,
                            data_parallel_size=2, device_type="cpu")
    assert any("ZeRO on the CPU" in n and "trains without ZeRO" in n for n in notes)
    assert check_supported(graph_enabled=True, amp=False, zero=True, zero_stage=2,
                           data_parallel_size=2, device_type="cuda") == []


def test_a_graph_is_given_zero_exactly_when_it_applies():
    class Recorder:
        """Stands in for nn.Graph's config: records what configure_graph asks of it."""

        def __init__(self):
            self.zero = None
            self.config = self

        def add_optimizer(self, *args, **kwargs):
            pass

        def enable_zero(self, enabled, stage):
            self.zero = (enabled, stage)

        def allow_fuse_model_update_ops(self, mode):
            pass

        allow_fuse_add_to_output = allow_fuse_cast_scale = allow_fuse_model_update_ops

    optimizer = flow.optim.SGD(flow.nn.Linear(2, 2).parameters(), lr=0.1)
    for device, dp, expected in (("cuda", 2, (True, 2)), ("cpu", 2, None), ("cuda", 1, None)):
        graph = Recorder()
        OptimizerStep(optimizer, device_type="cpu").configure_graph(
            graph, zero=True, zero_stage=2, data_parallel_size=dp, device_type=device)
        assert graph.zero == expected, (device, dp)


def test_a_model_parallel_cpu_graph_with_one_micro_batch_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="num_accumulation_steps=2"):
        check_supported(graph_enabled=True, amp=False, zero=False, zero_stage=1, data_parallel_size=1,
                        device_type="cpu", tensor_parallel_size=2, grad_acc_steps=1)
    assert check_supported(graph_enabled=True, amp=False, zero=False, zero_stage=1, data_parallel_size=1,
                           device_type="cpu", pipeline_parallel_size=2, grad_acc_steps=2) == []


def test_a_graph_step_fuses_clipping_into_the_update_and_computes_the_same():
    """configure_graph turns on OneFlow's update/add/cast fusions: the clipped AdamW step in a
    graph then needs no separate per-parameter scaling op, and computes what the unfused graph
    computes (and what Eager computes, to the rounding the two modes differ by anyway)."""

    def build():
        flow.manual_seed(1)
        model = flow.nn.Sequential(flow.nn.Linear(6, 6), flow.nn.GELU(), flow.nn.Linear(6, 6))
        opt = flow.optim.AdamW([{"params": list(model.parameters()), "clip_grad_max_norm": 0.05,
                                 "clip_grad_norm_type": 2.0}], lr=0.1, weight_decay=0.01)
        return model, opt

    x = flow.randn(8, 6)

    def loss_of(model, x):
        return ((x + model(x)) ** 2).mean()  # a residual add for the add-to-output fusion

    def graph_steps(fused):
        model, opt = build()

        class Step(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                OptimizerStep(opt).configure_graph(self)
                if not fused:
                    self.config.allow_fuse_model_update_ops(False)
                    self.config.allow_fuse_add_to_output(False)
                    self.config.allow_fuse_cast_scale(False)

            def build(self, x):
                loss = loss_of(self.model, x)
                loss.backward()
                return loss

        graph = Step()
        for _ in range(3):
            graph(x)
        ops = [op.user_conf.op_type_name for op in graph._full_job_proto.net.op if op.HasField("user_conf")]
        return [p.numpy() for p in model.parameters()], ops, graph

    fused, fused_ops, graph = graph_steps(True)
    plain, plain_ops, _ = graph_steps(False)
    assert graph.config.proto.enable_fuse_model_update_ops
    assert graph.config.proto.enable_fuse_add_to_output
    assert graph.config.proto.enable_fuse_cast_scale
    # the clip coefficient is folded into the update: no per-parameter scaling op is left
    assert plain_ops.count("scalar_mul_by_tensor") == len(fused) > 0
    assert "scalar_mul_by_tensor" not in fused_ops
    assert fused_ops.count("adam_update") == len(fused)
    for a, b in zip(plain, fused):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)

    eager_model, eager_opt = build()
    eager_step = OptimizerStep(eager_opt)
    for _ in range(3):
        eager_step.backward(loss_of(eager_model, x))
        eager_step.step()
    for a, b in zip(eager_model.parameters(), fused):
        np.testing.assert_allclose(b, a.numpy(), atol=1e-5)
