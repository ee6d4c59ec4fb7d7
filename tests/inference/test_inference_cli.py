"""tools/generate.py and tools/predict.py (their library entry points, run in-process)."""
import json
import os

import numpy as np
import pytest

from libai.inference import TextClassificationPipeline
from libai.inference.cli import generate_main, predict_main

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hf")


def test_generate_prints_one_line_per_prompt(capsys):
    ref = np.load(os.path.join(FIXTURES, "gpt2", "reference.npz"))
    prompt = " ".join(map(str, ref["prompt"][0]))
    assert generate_main([os.path.join(FIXTURES, "gpt2"), "--ids", prompt, "--ids", prompt,
                          "--max-new-tokens", "6", "--num-beams", "3", "--batch-size", "1",
                          "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [" ".join(map(str, ref["beam3"][0]))] * 2


def test_predict_guesses_the_task_and_prints_json(capsys):
    """The command line prints what the pipeline (checked against transformers in
    test_inference_pipelines.py) returns for the same ids."""
    folder = os.path.join(FIXTURES, "bert_classifier")
    ids = [2, 17, 40, 3]
    assert predict_main([folder, "--ids", " ".join(map(str, ids)), "--json", "--quiet"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == TextClassificationPipeline(folder)({"input_ids": ids})
    assert predict_main([folder, "--ids", "2 17 3", "--top-k", "3", "--quiet"]) == 0
    line = capsys.readouterr().out.strip()
    assert sorted(part.split("\t")[0] for part in line.split("  ")) == ["negative", "neutral", "positive"]


def test_command_line_errors_say_what_to_give():
    with pytest.raises(SystemExit, match="no prompts"):
        generate_main([os.path.join(FIXTURES, "gpt2")])
    with pytest.raises(SystemExit, match="integers"):
        generate_main([os.path.join(FIXTURES, "gpt2"), "--ids", "a b"])
