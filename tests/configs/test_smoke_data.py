"""``--smoke``'s stand-ins (libai.engine.smoke_data): made only for what is missing, tokenized
with the user's vocabulary when that one exists, and the README's first command on a fresh
clone. (Every recipe training on them is test_recipes.py's check.)"""
import json
import os
import subprocess
import sys

from libai.config import LazyConfig
from libai.data import synthetic_files
from libai.data.data_utils.indexed_dataset import MMapIndexedDataset
from libai.engine.smoke_data import make_stand_ins
from libai.tokenizer import GPT2Tokenizer
from libai.tokenizer.trainers import train_vocab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(REPO, "configs")


def test_a_folder_the_user_points_at_is_kept_and_only_the_missing_one_stands_in(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = synthetic_files.write_image_folder(str(tmp_path / "my_images"), classes=2, per_class=1)
    cfg = LazyConfig.apply_overrides(LazyConfig.load(os.path.join(CONFIGS, "vit_imagenet.py")),
                                     [f"dataloader.train.dataset.0.root='{mine}'"])
    made = make_stand_ins(cfg, root=str(tmp_path / "stand_ins"))
    assert made == {"./data/imagenet/val": "a class-per-folder image tree"}
    assert cfg.dataloader.train.dataset[0].root == mine
    stand_in = cfg.dataloader.test[0].dataset.root
    assert stand_in.startswith(str(tmp_path / "stand_ins")) and sorted(os.listdir(stand_in)) == [
        "class_0", "class_1", "class_2", "class_3"]
    assert make_stand_ins(cfg, root=str(tmp_path / "stand_ins")) == {}  # nothing missing any more


def test_a_missing_corpus_is_tokenized_with_the_users_own_vocabulary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "mine.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["zebra quartz zebra", "quartz zebra"] * 4))
    vocab, merges = train_vocab(str(corpus), str(tmp_path / "my_vocab"), kind="bpe", vocab_size=270,
                                json_key="text")
    cfg = LazyConfig.apply_overrides(LazyConfig.load(os.path.join(CONFIGS, "gpt2_pretrain.py")), [
        f"tokenization.tokenizer.vocab_file='{vocab}'", f"tokenization.tokenizer.merges_file='{merges}'"])
    made = make_stand_ins(cfg, root=str(tmp_path / "stand_ins"))
    assert made == {"./data_test/gpt_data/loss_compara_content_sentence": "an indexed corpus (.bin/.idx)"}
    assert cfg.tokenization.tokenizer.vocab_file == vocab
    prefix = cfg.dataloader.train.dataset[0].data_prefix
    assert cfg.dataloader.test[0].dataset.data_prefix == prefix
    assert cfg.dataloader.train.dataset[0].indexed_dataset.data_prefix == prefix  # follows the node
    tokenizer = GPT2Tokenizer(vocab_file=vocab, merges_file=merges)
    with open(tmp_path / "stand_ins" / "corpus" / "corpus.jsonl", encoding="utf-8") as handle:
        first_document = json.loads(handle.readline())["text"]
    dataset = MMapIndexedDataset(prefix)
    assert len(dataset.doc_idx) - 1 == 40 and len(dataset) > 80  # 40 documents of 2-5 sentences
    first_sentence = first_document[: first_document.index(".") + 1]
    assert [int(i) for i in dataset[0]] == tokenizer.encode(first_sentence)  # the user's ids
    assert tokenizer.decode([int(i) for i in dataset[0]]) == first_sentence
    assert not os.path.exists(tmp_path / "stand_ins" / "vocab_bpe")  # no vocabulary of ours


def test_the_readme_first_command_runs_on_a_fresh_clone_and_says_what_it_made(tmp_path):
    """``tools/train_net.py --config-file configs/gpt2_pretrain.py --smoke`` with none of the
    recipe's data there (run from an empty folder): it trains, says in one line what stands in
    for what and where, and removes the stand-ins at exit."""
    out = tmp_path / "out"
    cmd = [sys.executable, os.path.join(REPO, "tools", "train_net.py"), "--config-file",
           os.path.join(CONFIGS, "gpt2_pretrain.py"), "--smoke", f"train.output_dir='{out}'"]
    run = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    said = [line for line in run.stdout.splitlines() if "stand-ins of the same format were made in" in line]
    assert len(said) == 1, run.stdout[-3000:]
    for original in ("./data_test/gpt_data/gpt2-vocab.json", "./data_test/gpt_data/gpt2-merges.txt",
                     "./data_test/gpt_data/loss_compara_content_sentence"):
        assert repr(original) in said[0]
    folder = said[0].split("were made in ")[1].split(" (removed at exit)")[0]
    assert os.path.isabs(folder) and not os.path.exists(folder)  # removed at exit
    assert "--smoke: a shrunken run of 4 iterations" in run.stdout  # logged before the logger was set up
    assert os.path.isdir(out / "model_final")
    with open(out / "log.txt", encoding="utf-8") as log:
        assert said[0].split("INFO: ")[1] in log.read()
