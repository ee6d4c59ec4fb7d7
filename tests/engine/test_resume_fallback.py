"""``--resume`` through DefaultTrainer when the newest checkpoint's bytes changed: it falls back
to the previous checkpoint with a warning, continues from there with the same losses as the
uninterrupted run, and keeps the bad checkpoint (set aside, not deleted)."""
import logging
import os

from toy import recorded_trainer, toy_cfg


def _flip_a_weight_byte(path):
    files = [os.path.join(r, n) for r, _, ns in os.walk(os.path.join(path, "model")) for n in ns
             if n not in ("pickled_data", "meta")]
    target = max(files, key=os.path.getsize)
    with open(target, "r+b") as f:
        f.seek(0)
        byte = f.read(1)
        f.seek(0)
        f.write(bytes([byte[0] ^ 1]))
    return os.path.relpath(target, path)


def test_resume_skips_a_corrupt_newest_checkpoint(tmp_path, caplog):
    out = str(tmp_path / "out")
    trainer, first = recorded_trainer(toy_cfg(out, train_iter=6, evaluation=dict(enabled=False)))
    trainer.train()  # saves model_0000002 and model_final (iteration 5)
    rel = _flip_a_weight_byte(os.path.join(out, "model_final"))
    with caplog.at_level(logging.WARNING):
        trainer, again = recorded_trainer(toy_cfg(out, train_iter=6, evaluation=dict(enabled=False)),
                                          resume=True)
    assert trainer.start_iter == 3 and trainer.checkpointer.last_loaded == os.path.join(out, "model_0000002")
    said = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert f"the content of {rel} changed" in said and "the newest checkpoint that verifies" in said
    assert [n for n in os.listdir(out) if n.startswith("model_final.corrupt-")]
    trainer.train()
    assert sorted(again) == [3, 4, 5]
    for it in again:
        assert again[it] == first[it], it
