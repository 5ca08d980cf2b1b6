from __future__ import annotations

import logging
import multiprocessing as mp
import sqlite3
from pathlib import Path

import pytest

from h2hmem.llm import CacheEntry, Message, RequestCache, default_cache_path, load_chat_model
from h2hmem.testing import MockOpenAIServer


def _writer(path: str, tag: str, n: int) -> None:
    cache = RequestCache(path, busy_timeout_s=30)
    for i in range(n):
        cache.put(f"{tag}-{i}", CacheEntry("m", f"text {tag} {i}", "stop", i, 2 * i))
    cache.close()


def test_concurrent_writers_from_two_processes(tmp_path):
    path = str(tmp_path / "c.sqlite")
    RequestCache(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, tag, 200)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    cache = RequestCache(path)
    assert len(cache) == 400
    assert cache.get("a-17") == CacheEntry("m", "text a 17", "stop", 17, 34)
    assert cache.get("b-199").text == "text b 199"


def test_roundtrip_and_replace(tmp_path):
    cache = RequestCache(tmp_path / "sub" / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", CacheEntry("m", "one", None, 1, 1))
    cache.put("k", CacheEntry("m", "two", "length", 3, 4))
    assert cache.get("k") == CacheEntry("m", "two", "length", 3, 4) and len(cache) == 1


def test_put_is_one_statement_and_a_failed_one_leaves_nothing(tmp_path):
    cache = RequestCache(tmp_path / "c.sqlite")
    statements: list[str] = []
    cache._conn.set_trace_callback(statements.append)
    cache.put("k", CacheEntry("m", "one", "stop", 1, 1))
    assert [s.split()[0] for s in statements] == ["INSERT"]  # autocommit: no BEGIN / COMMIT round trips
    cache._conn.set_trace_callback(None)
    # a statement that fails (NOT NULL on prompt_tokens) stores nothing and leaves no open transaction
    bad = CacheEntry("m", "two", "stop", None, 1)  # type: ignore[arg-type]
    try:
        cache.put("k2", bad)
    except sqlite3.IntegrityError:
        pass
    else:
        raise AssertionError("a NULL prompt_tokens must be refused")
    assert not cache._conn.in_transaction
    assert cache.get("k2") is None and cache.get("k") == CacheEntry("m", "one", "stop", 1, 1)
    cache.put("k3", CacheEntry("m", "three", None, 2, 2))  # the connection still writes
    assert len(cache) == 2


def test_garbage_file_moved_aside(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with caplog.at_level(logging.WARNING):
        cache = RequestCache(path)
    assert cache.moved_aside is not None and cache.moved_aside.name.startswith("c.sqlite.corrupt-")
    assert cache.moved_aside.read_bytes().startswith(b"this is not a database")
    assert "corrupt" in caplog.text
    cache.put("k", CacheEntry("m", "t", "stop", 0, 0))
    assert cache.get("k").text == "t"


async def test_truncated_db_moved_aside_and_call_still_works(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    cache = RequestCache(path)
    for i in range(300):
        cache.put(f"k{i}", CacheEntry("m", "x" * 500, "stop", 1, 1))
    cache._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cache.close()
    size = path.stat().st_size
    with open(path, "r+b") as f:  # noqa: ASYNC230 — test setup before the server starts
        f.truncate(size // 2)
    with MockOpenAIServer() as srv, caplog.at_level(logging.WARNING):
        model = load_chat_model("openai:m", base_url=srv.base_url, cache=path)
        result = await model.chat([Message(role="user", content="hi")])
        again = await model.chat([Message(role="user", content="hi")])
        await model.aclose()
    assert model.cache.moved_aside is not None and "corrupt" in caplog.text
    assert not result.cached and again.cached and srv.calls == 1


def test_wrong_schema_moved_aside(tmp_path):
    path = tmp_path / "c.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE requests (key TEXT, value TEXT)")
    conn.commit()
    conn.close()
    assert RequestCache(path).moved_aside is not None


def test_default_cache_path(monkeypatch, tmp_path):
    monkeypatch.setenv("H2HMEM_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "requests.sqlite"
    monkeypatch.delenv("H2HMEM_CACHE_DIR")
    assert default_cache_path() == Path.home() / ".cache" / "h2hmem" / "requests.sqlite"


async def test_the_settings_are_dumped_once_per_distinct_config_not_once_per_call(tmp_path, monkeypatch):
    """The cache key and the transcript record both need the generation settings as JSON: worked out
    once per distinct (frozen, hashable) config, then reused; equal configs built apart share them."""
    from h2hmem.llm import GenerationConfig, record_calls
    from h2hmem.llm._calllog import call_params
    from h2hmem.llm._client import _key_settings

    call_params.cache_clear()  # process-wide memos: another test may have met these configs
    _key_settings.cache_clear()
    dumps = []
    real = GenerationConfig.model_dump

    def counted(self, *args, **kwargs):
        dumps.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GenerationConfig, "model_dump", counted)
    records: list[dict] = []
    with MockOpenAIServer() as srv:
        model = load_chat_model("openai:m", base_url=srv.base_url, cache=tmp_path / "c.sqlite")
        with record_calls(records.append):
            for i in range(6):  # 6 paid calls, 3 with each of two configs (a fresh but equal object each time)
                config = GenerationConfig(temperature=0.1, top_p=0.9, seed=i % 2 + 1234)
                await model.chat([Message(role="user", content=f"q{i}")], config)
        await model.aclose()
    assert srv.calls == 6 and len(records) == 6
    assert len(dumps) == 2  # one per distinct config, for the key and the record together
    assert [r["params"]["seed"] for r in records] == [1234, 1235] * 3
    assert records[0]["params"] == {
        "temperature": 0.1,
        "max_tokens": GenerationConfig().max_tokens,
        "json_mode": False,
        "seed": 1234,
        "top_p": 0.9,
        "json_schema": None,
    }


def test_a_folder_or_a_file_that_cannot_be_opened_is_never_moved(tmp_path, monkeypatch):
    # only damage is moved aside: a folder given as the cache path (--cache-path DIR) was renamed
    # to DIR.corrupt-<time> before, and a locked or unreadable file would have been too
    folder = tmp_path / "victim"
    folder.mkdir()
    (folder / "data.txt").write_text("important")
    with pytest.raises(ValueError, match=r"request cache .*victim is a folder; give the path of a cache file"):
        RequestCache(folder)
    assert (folder / "data.txt").read_text() == "important" and sorted(p.name for p in tmp_path.iterdir()) == ["victim"]

    path = tmp_path / "c.sqlite"
    RequestCache(path).put("k", CacheEntry("m", "kept", "stop", 1, 1))

    def cannot_open(*args, **kwargs):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite3, "connect", cannot_open)
    with pytest.raises(OSError, match="request cache .*c.sqlite cannot be opened: unable to open database file"):
        RequestCache(path)
    monkeypatch.undo()
    assert not list(tmp_path.glob("c.sqlite.corrupt-*")) and RequestCache(path).get("k").text == "kept"
