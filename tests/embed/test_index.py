from __future__ import annotations

import numpy as np
import pytest

from h2hmem.embed import VectorIndex


def test_search_top_k_cosine():
    index = VectorIndex()
    index.add(["x", "y", "xy"], np.array([[1, 0], [0, 2], [1, 1]], dtype=np.float32))
    assert len(index) == 3 and index.dim == 2
    [hits] = index.search(np.array([1.0, 0.0]), k=2)
    # cosines: x = 1, xy = 1/sqrt(2), y = 0
    assert [h[0] for h in hits] == ["x", "xy"]
    assert hits[0][1] == pytest.approx(1.0) and hits[1][1] == pytest.approx(2**-0.5)
    both = index.search(np.array([[0.0, 3.0], [-1.0, 0.0]]), k=5)
    assert [h[0] for h in both[0]] == ["y", "xy", "x"]
    assert [h[0] for h in both[1]] == ["y", "xy", "x"] and both[1][2][1] == pytest.approx(-1.0)


def test_ties_keep_insertion_order():
    index = VectorIndex()
    index.add([f"t{i}" for i in range(10)], np.ones((10, 3), dtype=np.float32))
    [hits] = index.search(np.ones(3), k=4)
    assert [h[0] for h in hits] == ["t0", "t1", "t2", "t3"]


def test_errors_and_empty():
    index = VectorIndex(dim=3)
    assert index.search(np.ones(3), k=5) == [[]]
    with pytest.raises(ValueError, match="shape"):
        index.add(["a"], np.ones((2, 3)))
    with pytest.raises(ValueError, match="dim"):
        index.add(["a"], np.ones((1, 4)))
    index.add(["a"], np.ones((1, 3)))
    with pytest.raises(ValueError, match="duplicate"):
        index.add(["a"], np.ones((1, 3)))
    with pytest.raises(ValueError, match="dim"):
        index.search(np.ones(2), k=1)


def test_save_load_roundtrip(tmp_path):
    rng = np.random.default_rng(0)
    index = VectorIndex()
    ids = [f"s{i}/t{j}" for i in range(5) for j in range(4)]
    index.add(ids, rng.normal(size=(20, 8)).astype(np.float32))
    index.save(tmp_path / "idx.npz")
    assert (tmp_path / "idx.ids.json").is_file()
    loaded = VectorIndex.load(tmp_path / "idx.npz")
    q = rng.normal(size=(3, 8))
    assert loaded.ids == ids and loaded.search(q, 5) == index.search(q, 5)
    (tmp_path / "idx.ids.json").write_text('{"dim": 8, "ids": ["only-one"]}')
    with pytest.raises(ValueError, match="idx.ids.json"):
        VectorIndex.load(tmp_path / "idx.npz")
