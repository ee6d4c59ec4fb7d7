"""Drawing helpers of the training visuals: the image grid (exact pixels), weight matrices,
atomic PNG writes, and one shared TensorBoard writer per folder."""
import os

import numpy as np
import pytest
from PIL import Image

from libai.utils import writers
from libai.utils.plot import draw_matrix, draw_series, image_grid, save_figure_atomic
from libai.utils.storage import EventStorage
from libai.utils.writers import TensorboardXWriter, open_summary_writer, release_summary_writer


def test_image_grid_places_min_max_scaled_images():
    a = np.array([[[0.0, 2.0], [4.0, 8.0]]])           # scaled to 0, .25, .5, 1
    b = np.full((1, 2, 2), 5.0)                          # constant -> black
    c = np.array([[[-1.0, 1.0], [1.0, -1.0]]])          # scaled to 0, 1, 1, 0
    grid = image_grid(np.stack([a, b, c]), padding=1)
    # ceil(sqrt(3)) = 2 columns, 2 rows: 1 + 2*(2+1) = 7 pixels each way.
    expected = np.zeros((1, 7, 7), dtype=np.float32)
    expected[0, 1:3, 1:3] = [[0.0, 0.25], [0.5, 1.0]]
    expected[0, 1:3, 4:6] = 0.0
    expected[0, 4:6, 1:3] = [[0.0, 1.0], [1.0, 0.0]]
    assert grid.dtype == np.float32
    np.testing.assert_array_equal(grid, expected)
    assert image_grid(np.zeros((5, 3, 4, 6)), columns=5, padding=0).shape == (3, 4, 30)
    with pytest.raises(ValueError, match=r"\[N, C, H, W\]"):
        image_grid(np.zeros((3, 4, 6)))


def test_draw_matrix_writes_a_png_and_refuses_other_ranks(tmp_path):
    path = tmp_path / "w.png"
    draw_matrix(np.arange(12.0).reshape(3, 4), str(path), "w")
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size == (600, 500)
    with pytest.raises(ValueError, match="2-D array"):
        draw_matrix(np.zeros(3), str(path), "w")


def test_atomic_save_keeps_the_old_picture_when_drawing_fails(tmp_path):
    path = tmp_path / "losses.png"
    draw_series({"total_loss": [(0, 1.0), (1, 0.5)]}, str(path), "t", "loss")
    before = path.read_bytes()
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"

    class Broken:
        def savefig(self, f, **kwargs):
            f.write(b"\x89PNG half")
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        save_figure_atomic(Broken(), str(path))
    assert path.read_bytes() == before  # a viewer still sees the whole previous picture
    assert os.listdir(tmp_path) == ["losses.png"]  # no temporary file left behind


def test_one_summary_writer_per_folder_closed_by_the_last_holder(tmp_path):
    folder = str(tmp_path / "tb")
    first = open_summary_writer(folder)
    second = open_summary_writer(folder + "/")  # the same folder, spelled differently
    assert first is second
    release_summary_writer(folder)
    assert os.path.abspath(folder) in writers._SHARED_WRITERS
    release_summary_writer(folder)
    assert os.path.abspath(folder) not in writers._SHARED_WRITERS
    release_summary_writer(folder)  # releasing again is harmless


def test_scalar_writer_and_visuals_share_one_event_file(tmp_path):
    folder = str(tmp_path / "tb")
    with EventStorage() as storage:
        scalars = TensorboardXWriter(folder)
        visuals = open_summary_writer(folder)
        storage.put_scalar("total_loss", 1.0)
        scalars.write()
        visuals.add_scalar("lr/group0", 0.1, 0)
        scalars.close()
        scalars.close()  # closing twice releases once
        assert os.path.abspath(folder) in writers._SHARED_WRITERS
        release_summary_writer(folder)
    assert len([f for f in os.listdir(folder) if f.startswith("events.out.tfevents")]) == 1
