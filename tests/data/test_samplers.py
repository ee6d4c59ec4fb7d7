"""CyclicSampler and SingleRoundSampler: data-parallel slicing, resume, shuffling, coverage."""
import itertools
import random

import numpy as np
import pytest

from libai.data.samplers import CyclicSampler, SingleRoundSampler


class Sized:
    """A stand-in dataset: the samplers only read its length."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def take(sampler, steps):
    return list(itertools.islice(iter(sampler), steps))


def dp_batches(n, micro, dp, steps, **kwargs):
    """Per step, the concatenation of every data-parallel rank's batch in rank order."""
    per_rank = [
        take(
            CyclicSampler(
                Sized(n), micro, data_parallel_rank=r, data_parallel_size=dp, **kwargs
            ),
            steps,
        )
        for r in range(dp)
    ]
    return [sum((per_rank[r][s] for r in range(dp)), []) for s in range(steps)]


# ------------------------------------------------------------------------- CyclicSampler
@pytest.mark.parametrize("n,micro,dp", [(10, 3, 2), (17, 2, 2), (23, 2, 3), (8, 4, 2)])
def test_dp_slices_concatenate_to_one_process_batch(n, micro, dp):
    steps = 3 * (n // (micro * dp)) + 1  # crosses several epoch boundaries
    single = take(CyclicSampler(Sized(n), micro * dp, seed=7), steps)
    assert dp_batches(n, micro, dp, steps, seed=7) == single
    assert all(len(b) == micro * dp for b in single)


@pytest.mark.parametrize("k_steps", [0, 1, 3, 4, 5, 9])
def test_resume_equals_uninterrupted(k_steps):
    n, micro, dp = 11, 2, 2  # 2 global batches of 4 per epoch, tail of 3 dropped
    full = dp_batches(n, micro, dp, 14, seed=3)
    resumed = [
        take(
            CyclicSampler(Sized(n), micro, consumed_samples=k_steps * micro * dp,
                          data_parallel_rank=r, data_parallel_size=dp, seed=3),
            14 - k_steps,
        )
        for r in range(dp)
    ]
    joined = [resumed[0][s] + resumed[1][s] for s in range(14 - k_steps)]
    assert joined == full[k_steps:]


def test_state_dict_round_trip_resumes_where_it_stopped():
    sampler = CyclicSampler(Sized(9), 2, seed=1)
    it = iter(sampler)
    first = [next(it) for _ in range(5)]
    state = sampler.state_dict()
    assert state["consumed_samples"] == 10
    fresh = CyclicSampler(Sized(9), 2, seed=99)
    fresh.load_state_dict(state)
    uninterrupted = take(CyclicSampler(Sized(9), 2, seed=1), 9)
    assert first + take(fresh, 4) == uninterrupted
    with pytest.raises(KeyError, match="consumed_samples"):
        fresh.load_state_dict({"epoch": 2})


def test_each_epoch_is_a_fresh_deterministic_permutation():
    n, g = 13, 4
    sampler = CyclicSampler(Sized(n), g, seed=5)
    steps = len(sampler)  # 3 steps of 4: one sample dropped per epoch
    assert steps == n // g
    batches = take(sampler, 4 * steps)
    epochs = [sum(batches[e * steps:(e + 1) * steps], []) for e in range(4)]
    for order in epochs:
        assert len(order) == steps * g
        assert len(set(order)) == len(order)  # no repeats inside an epoch
        assert set(order) <= set(range(n))
    assert len({tuple(o) for o in epochs}) == 4  # reshuffled every epoch
    assert take(CyclicSampler(Sized(n), g, seed=5), 4 * steps) == batches  # same seed, same data
    assert take(CyclicSampler(Sized(n), g, seed=6), steps) != batches[:steps]


def test_order_ignores_and_leaves_global_rng():
    np.random.seed(0)
    random.seed(0)
    a = take(CyclicSampler(Sized(20), 4, seed=2), 5)
    np_state, py_state = np.random.get_state()[1].copy(), random.getstate()
    np.random.seed(12345)
    b = take(CyclicSampler(Sized(20), 4, seed=2), 5)
    assert a == b
    np.random.seed(0)
    random.seed(0)
    take(CyclicSampler(Sized(20), 4, seed=2), 5)
    assert (np.random.get_state()[1] == np_state).all() and random.getstate() == py_state


def test_no_shuffle_walks_in_order_and_drops_tail():
    batches = take(CyclicSampler(Sized(7), 3, shuffle=False), 4)
    assert batches == [[0, 1, 2], [3, 4, 5], [0, 1, 2], [3, 4, 5]]


def test_dataset_smaller_than_global_batch_names_both_numbers():
    with pytest.raises(ValueError, match=r"5 samples.*global batch of 6"):
        CyclicSampler(Sized(5), 3, data_parallel_rank=1, data_parallel_size=2)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"micro_batch_size": 0}, "micro_batch_size"),
        ({"micro_batch_size": 2, "data_parallel_rank": 2, "data_parallel_size": 2}, "outside 0..1"),
        ({"micro_batch_size": 2, "consumed_samples": -1}, "consumed_samples"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CyclicSampler(Sized(10), **kwargs)


# ------------------------------------------------------------------------- SingleRoundSampler
@pytest.mark.parametrize("dp", [1, 2, 3])
@pytest.mark.parametrize("micro", [1, 2, 4])
@pytest.mark.parametrize("n", [1, 5, 7, 11, 12])
def test_single_round_covers_once_and_pads_at_end(n, micro, dp):
    per_rank = [list(SingleRoundSampler(Sized(n), micro, data_parallel_rank=r, data_parallel_size=dp)) for r in range(dp)]
    steps = -(-n // (micro * dp))
    assert all(len(batches) == steps for batches in per_rank)
    assert all(len(b) == micro for batches in per_rank for b in batches)
    flat = [i for s in range(steps) for r in range(dp) for i in per_rank[r][s]]
    assert flat[:n] == list(range(n))
    assert flat[n:] == [n - 1] * (steps * micro * dp - n)


def test_single_round_drop_last_keeps_only_full_global_batches():
    per_rank = [list(SingleRoundSampler(Sized(11), 2, False, r, 2, drop_last=True)) for r in range(2)]
    assert per_rank == [[[0, 1], [4, 5]], [[2, 3], [6, 7]]]
    with pytest.raises(ValueError, match="drop_last=True with 3 samples and a global batch of 4"):
        SingleRoundSampler(Sized(3), 2, data_parallel_rank=0, data_parallel_size=2, drop_last=True)


def test_single_round_empty_dataset():
    with pytest.raises(ValueError, match="empty dataset"):
        SingleRoundSampler(Sized(0), 2)


# ------------------------------------------------------------------------- names and LiBai's spelling
def test_batch_size_per_rank_and_libai_keyword_are_one_argument():
    ours = CyclicSampler(Sized(12), batch_size_per_rank=3, seed=4)
    theirs = CyclicSampler(Sized(12), micro_batch_size=3, seed=4)
    assert take(ours, 5) == take(theirs, 5)
    assert ours.batch_size_per_rank == theirs.micro_batch_size == 3
    with pytest.raises(TypeError, match="give batch_size_per_rank or micro_batch_size .* not both"):
        CyclicSampler(Sized(12), 3, micro_batch_size=3)
    with pytest.raises(TypeError, match="missing batch_size_per_rank"):
        SingleRoundSampler(Sized(12))


def test_single_round_takes_libai_positional_order():
    # LiBai: (dataset, micro_batch_size, shuffle, data_parallel_rank, data_parallel_size, seed, drop_last)
    rank1 = list(SingleRoundSampler(Sized(10), 2, False, 1, 2, 0, True))
    assert rank1 == [[2, 3], [6, 7]]


def test_single_round_shuffle_is_a_seeded_permutation_padded_at_the_end():
    n, micro, dp = 11, 2, 2
    per_rank = [list(SingleRoundSampler(Sized(n), micro, True, r, dp, seed=3)) for r in range(dp)]
    flat = [i for step in zip(*per_rank) for batch in step for i in batch]
    order = [int(i) for i in np.random.default_rng(3).permutation(n)]
    assert flat[:n] == order and flat[n:] == [order[-1]]
    again = [list(SingleRoundSampler(Sized(n), micro, True, r, dp, seed=3)) for r in range(dp)]
    assert again == per_rank
