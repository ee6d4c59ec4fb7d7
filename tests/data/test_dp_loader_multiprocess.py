"""Two real processes, data-parallel size 2: together they read each global batch exactly once,
and it equals the batch a one-process run of the same global size reads."""
import itertools
import json
import os

from libai.data.build import build_image_test_loader, build_image_train_loader
from libai.utils.testing import launch

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dp_loader_worker.py")


def test_two_ranks_see_the_one_process_batches(tmp_path, img_index_dataset):
    n, micro, steps, seed = 11, 2, 5, 4  # 2 steps per epoch of 8: crosses two epoch boundaries
    result = launch(
        SCRIPT, 2,
        ["--out", str(tmp_path), "--samples", str(n), "--micro", str(micro), "--steps", str(steps),
         "--seed", str(seed)],
        timeout=240,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]

    single, _, _ = build_image_train_loader(
        img_index_dataset(n), 2 * micro, num_workers=0, seed=seed
    )
    expected = [b.labels.tensor.tolist() for b in itertools.islice(single, steps)]
    for s in range(steps):
        assert ranks[0]["train_local"][s] + ranks[1]["train_local"][s] == expected[s]
        assert ranks[0]["train_full"][s] == ranks[1]["train_full"][s] == expected[s]
        assert not set(ranks[0]["train_local"][s]) & set(ranks[1]["train_local"][s])

    test_single = build_image_test_loader(img_index_dataset(n), 2 * micro, num_workers=0)
    test_expected = [b.labels.tensor.tolist() for b in test_single]
    assert ranks[0]["test_full"] == ranks[1]["test_full"] == test_expected
    flat = sum(test_expected, [])
    assert flat[:n] == list(range(n)) and set(flat[n:]) == {n - 1}
