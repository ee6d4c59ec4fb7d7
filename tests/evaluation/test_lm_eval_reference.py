"""lm_eval on a libai model gives what lm_eval's ``hf`` model gives on the same checkpoint.

tests/fixtures/lm_eval/reference.json was made by make_lm_eval_fixture.py (lm_eval 0.4.13,
transformers, torch) on the tiny Llama in tests/fixtures/lm_eval/model; here the same three
local tasks (multiple choice, generation with stop strings, rolling log-likelihood) run through
``LibaiLM`` on that directory, offline, and every response and metric is compared.
"""
import json
import os
import sys

import pytest

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "lm_eval")
sys.path.insert(0, FIXTURE)
from tasks import TASKS, write_tasks  # noqa: E402


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    import lm_eval
    from lm_eval.tasks import TaskManager

    from libai.inference.lm_eval_cli import PretrainedLibaiLM

    lm = PretrainedLibaiLM(pretrained=os.path.join(FIXTURE, "model"), batch_size=2)
    task_dir = write_tasks(str(tmp_path_factory.mktemp("lm_eval_tasks")))
    results = lm_eval.simple_evaluate(model=lm, tasks=list(TASKS), log_samples=True,
                                      task_manager=TaskManager(include_path=task_dir, include_defaults=False))
    with open(os.path.join(FIXTURE, "reference.json")) as handle:
        return results, json.load(handle)


@pytest.mark.parametrize("task", TASKS)
def test_responses_and_metrics_equal_the_hf_reference(evaluated, task):
    results, reference = evaluated
    samples = sorted(results["samples"][task], key=lambda s: s["doc_id"])
    for got, want in zip([s["resps"] for s in samples], reference["responses"][task]):
        for (mine,), (theirs,) in zip(got, want):
            if isinstance(theirs, str):  # generated text, cut at the stop strings
                assert mine == theirs
            elif isinstance(theirs, list):  # (log-likelihood, is greedy)
                assert mine[0] == pytest.approx(theirs[0], rel=1e-5, abs=1e-4)
                assert bool(mine[1]) == bool(theirs[1])
            else:  # a rolling log-likelihood
                assert mine == pytest.approx(theirs, rel=1e-5, abs=1e-4)
    for metric, value in reference["results"][task].items():
        if isinstance(value, float):
            assert results["results"][task][metric] == pytest.approx(value, rel=1e-5), metric


def test_the_command_line_entry_registers_libai_beside_lm_evals_own_models():
    from lm_eval.api.registry import get_model, model_registry

    from libai.inference.lm_eval_cli import PretrainedLibaiLM, register

    register()
    register()  # idempotent
    assert get_model("libai") is PretrainedLibaiLM
    assert "hf" in model_registry  # lm_eval's own models stay available (registered first)
    with pytest.raises(ValueError, match="--model_args pretrained=DIR"):
        PretrainedLibaiLM()
