"""Small NumPy pieces shared by the one-process layer tests' references."""
import numpy as np


def random_array(*shape: int, seed: int = 0) -> np.ndarray:
    """A fixed standard-normal float32 array."""
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def softmax(z: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, shifted by the maximum for stability."""
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)
