"""The projects part of the LiBai conformance runner (tools/libai_conformance/projects.py).

No LiBai checkout is needed: a stand-in checkout with empty ``projects/`` and ``configs/``
folders is enough to check that each case writes its tiny data in the project's own format,
and a stand-in project checks that ``project_entry.py`` runs the scratch copy's ``projects``
package rather than this repository's own ``projects`` package.
"""
import json
import os
import subprocess
import sys

import pytest

from tools.libai_conformance import projects
from tools.libai_conformance.common import PROJECT_ENTRY, Prepared, command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the folders of upstream LiBai's projects/ at commit 9dcbe3b
LIBAI_PROJECTS = [
    "Aquila", "BLOOM", "Baichuan", "CLIP", "ChatGLM", "ConvNeXT", "Couplets", "DALLE2",
    "Eval_LLM", "GLM", "Llama", "MAE", "MOCOV3", "MT5", "MagicPrompt", "NeRF", "PaLM", "QQP",
    "Qwen", "SimCSE", "Stable_Diffusion", "T5", "mock_transformers", "text_classification",
]


@pytest.fixture
def checkout(tmp_path):
    """A stand-in LiBai checkout: the two folders the cases copy."""
    src = tmp_path / "libai_src"
    (src / "projects").mkdir(parents=True)
    (src / "configs").mkdir()
    return str(src)


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    # the runner installs a project's missing third-party requirements with pip; not here
    monkeypatch.setattr(projects, "_requirements", lambda *args, **kwargs: {})
    folder = tmp_path / "scratch" / "libai" / "case"
    folder.mkdir(parents=True)
    return str(folder)


def _override(prepared: Prepared, key: str) -> str:
    values = [o.split("=", 1)[1] for o in prepared.overrides if o.split("=", 1)[0] == key]
    assert values, f"no override for {key}"
    return values[-1]


def test_every_libai_project_is_either_run_or_left_out_with_a_reason():
    names = [case.name for case in projects.cases()]
    assert sorted(names) == sorted(LIBAI_PROJECTS)
    for case in projects.cases():
        assert case.kind == "project"
        if case.skip_reason:
            assert len(case.skip_reason) > 20, case.name  # a reason in words, not a flag
    runnable = {c.name for c in projects.cases() if not c.skip_reason}
    assert {"Couplets", "QQP", "text_classification", "MAE"} <= runnable


def test_couplets_data_is_in_the_projects_format(checkout, scratch):
    prepared = projects.PROJECTS["Couplets"].prepare(checkout, scratch)
    root = os.path.join(scratch, "data_test", "couplets")  # the config's own relative path
    with open(os.path.join(root, "vocab.txt"), encoding="utf-8") as handle:
        vocab = handle.read().split("\n")[:-1]
    assert vocab[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert int(_override(prepared, "model.cfg.vocab_size")) == len(vocab)
    for split in ("train", "test"):
        with open(os.path.join(root, split, "in.txt"), encoding="utf-8") as a, \
                open(os.path.join(root, split, "out.txt"), encoding="utf-8") as b:
            first, second = a.read().splitlines(), b.read().splitlines()
        assert len(first) == len(second) > 0
        for line in first + second:  # space-separated characters of the vocabulary
            assert line.split() and all(ch in vocab for ch in line.split())
    assert prepared.project and prepared.config == "projects/Couplets/configs/config.py"


def test_qqp_data_is_glue_qqp_tsv(checkout, scratch):
    projects.PROJECTS["QQP"].prepare(checkout, scratch)
    folder = os.path.join(scratch, "projects", "QQP", "QQP_DATA")
    with open(os.path.join(folder, "bert-base-chinese-vocab.txt"), encoding="utf-8") as handle:
        vocab = set(handle.read().split())
    assert {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} <= vocab
    for split in ("train", "dev"):
        with open(os.path.join(folder, f"{split}.tsv"), encoding="utf-8") as handle:
            rows = [line.rstrip("\n").split("\t") for line in handle]
        assert rows[0] == ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
        for row in rows[1:]:
            assert len(row) == 6 and row[5] in ("0", "1") and row[3] and row[4]
            assert set(row[3] + row[4]) <= vocab


def test_text_classification_data_is_clue_afqmc_json_lines(checkout, scratch):
    prepared = projects.PROJECTS["text_classification"].prepare(checkout, scratch)
    folder = os.path.join(scratch, "projects", "text_classification", "dataset", "clue_data",
                          "afqmc")
    for split in ("train", "dev"):
        with open(os.path.join(folder, f"{split}.json"), encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle]
        assert records and all(set(r) == {"sentence1", "sentence2", "label"} for r in records)
        assert {r["label"] for r in records} == {"0", "1"}
    assert os.path.isfile(_override(prepared, "tokenization.tokenizer.vocab_file"))


def test_llm_sft_data_is_what_the_prepare_scripts_save(checkout, scratch):
    import oneflow as flow
    import sentencepiece

    prepared = projects.PROJECTS["Llama"].prepare(checkout, scratch)
    samples = flow.load(os.path.join(scratch, "alpaca_data", "train"))
    assert samples and set(samples[0]) == {"input_ids", "labels"}
    vocab = int(_override(prepared, "model.cfg.vocab_size"))
    assert int(samples[0]["input_ids"].max()) < vocab
    model = sentencepiece.SentencePieceProcessor()
    model.Load(_override(prepared, "tokenization.tokenizer.pretrained_model_path"))
    assert (model.get_piece_size(), model.bos_id(), model.eos_id()) == (vocab, 1, 2)


def test_project_runs_go_through_the_entry_script():
    prepared = Prepared(config="projects/X/configs/c.py", project=True,
                        entry="projects/X/train_net.py")
    cmd = command("libai", prepared.config, ["a=1"], prepared)
    assert cmd[1:] == [PROJECT_ENTRY, "--engine", "libai", "--entry", "projects/X/train_net.py",
                       "--config-file", "projects/X/configs/c.py", "a=1"]


def test_the_entry_imports_the_scratch_projects_not_this_repositorys(tmp_path):
    """This repository has a ``projects`` package of its own (and an editable install puts the
    repository on sys.path); a LiBai project's ``from projects.<name> import ...`` must still
    find the copy in the scratch folder."""
    demo = tmp_path / "projects" / "Demo"
    demo.mkdir(parents=True)
    (demo / "thing.py").write_text("WHERE = __file__\n")
    (demo / "train_net.py").write_text(
        "import sys\n"
        "import libai\n"
        "from projects.Demo.thing import WHERE\n"
        "print('THING', WHERE)\n"
        "print('ARGS', sys.argv[1:])\n"
        "print('LIBAI', libai.__file__)\n"
    )
    out = subprocess.run(
        [sys.executable, PROJECT_ENTRY, "--engine", "libai", "--entry",
         "projects/Demo/train_net.py", "--config-file", "c.py", "k=v"],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    assert lines["THING"] == str(demo / "thing.py")
    assert lines["ARGS"] == "['--config-file', 'c.py', 'k=v']"
    assert lines["LIBAI"].startswith(os.path.join(REPO, "libai"))
