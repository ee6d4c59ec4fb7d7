"""Every model family under data, tensor and pipeline parallel layouts, in launched processes.

``parallel_models_script.py`` builds each tiny model (2 blocks per stack, hidden 32, vocab 96,
sequence 8, batch 4, dropout 0) twice from one seed, under the parallel layout and under a
one-process layout, runs forward and backward on the same fixed batch and reports both losses
and the relative error of every parameter gradient and initial weight. Tolerance: 1e-5
relative (float32; parallelism only reorders sums).
"""
import os

import pytest

from tests.launch_helpers import launched_results

HERE = os.path.dirname(os.path.abspath(__file__))
RTOL = 1e-5


def _run(tmp_path_factory, nproc, layouts):
    return launched_results(tmp_path_factory, os.path.join(HERE, "parallel_models_script.py"), nproc, layouts)


# The zoo's other families (tests/models/zoo_cases/): every transformer-style model at TP=2 and
# PP=2; the convolutional classifiers, which are data-parallel models, at DP=2, and one model
# of each other family at DP=2 too (whose work must stay split over the batch).
ZOO_TP_PP = ["roberta", "roberta_causal", "swinv2", "resmlp", "t5v11", "llama", "llama_lora",
             "llama_packed", "gpt_packed"]
ZOO_DP = ["resnet", "alexnet", "roberta", "llama", "t5v11", "swinv2", "resmlp", "llama_packed"]
ZOO_CASES = [f"{layout}/{m}" for layout in ("tp2", "pp2") for m in ZOO_TP_PP] + [
    f"dp2/{m}" for m in ZOO_DP]


@pytest.fixture(scope="module")
def two_process_results(tmp_path_factory):
    zoo = ",".join(ZOO_TP_PP)
    return _run(tmp_path_factory, 2, ["tp2", "dp2", "pp2", f"tp2:{zoo}", f"pp2:{zoo}",
                                      f"dp2:{','.join(ZOO_DP)}"])


@pytest.fixture(scope="module")
def four_process_results(tmp_path_factory):
    # a 4-process launch costs ~20-30 s on 2 cores: GPT, T5 and the Llama-style decoder (GQA,
    # rotary) on the 2-D data × tensor mesh, T5 (encoder, causal decoder, cross attention)
    # across two tensor-parallel stages
    return _run(tmp_path_factory, 4, ["dp2_tp2:gpt,t5,llama", "tp2_pp2:t5"])


def _assert_matches(check):
    for name, (parallel, reference) in check["losses"].items():
        assert parallel == pytest.approx(reference, rel=RTOL), name
    assert check["grad_norm"] > 0
    bad = {k: v for k, v in check["grads"].items() if not v < RTOL}
    assert not bad, f"gradients differ from the one-process run: {bad}"
    assert max(check["init"].values()) == 0.0, "initial weights depend on the layout"


@pytest.mark.parametrize("layout", ["tp2", "dp2", "pp2"])
@pytest.mark.parametrize("model", ["gpt", "bert", "t5"])
def test_two_process_layouts_match_one_process(two_process_results, layout, model):
    _assert_matches(two_process_results[f"{layout}/{model}"])


@pytest.mark.parametrize("case", ZOO_CASES)
def test_zoo_models_match_one_process(two_process_results, case):
    _assert_matches(two_process_results[case])


@pytest.mark.parametrize("case", ["dp2_tp2/gpt", "dp2_tp2/t5", "dp2_tp2/llama", "tp2_pp2/t5"])
def test_four_process_layouts_match_one_process(four_process_results, case):
    _assert_matches(four_process_results[case])


DP_CASES = [f"dp2/{m}" for m in ("gpt", "bert", "t5", *ZOO_DP)]


@pytest.mark.parametrize("case", DP_CASES)
def test_data_parallel_work_stays_split_over_the_batch(two_process_results, case):
    # a module whose output holds the whole batch on both ranks means each rank computed the
    # whole batch from there on (RoBERTa's position ids through OneFlow's cumsum replicated
    # the whole model): the same values, twice the work
    assert two_process_results[case]["replicated"] == []


@pytest.mark.parametrize("case", ["dp2_tp2/gpt", "dp2_tp2/t5", "dp2_tp2/llama"])
def test_data_and_tensor_parallel_work_stays_split_over_the_batch(four_process_results, case):
    assert four_process_results[case]["replicated"] == []


def test_bert_reports_both_pretraining_losses(two_process_results):
    assert set(two_process_results["tp2/bert"]["losses"]) == {"lm_loss", "sop_loss"}


def test_losses_are_whole_on_every_rank(two_process_results):
    # under data parallelism the reduced loss is made broadcast, not left as a partial sum
    assert two_process_results["dp2/gpt"]["loss_sbp"] == ["oneflow.sbp.broadcast"]  # 1-D: data axis only
