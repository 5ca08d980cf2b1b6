"""``download_dataset`` against a local stand-in of the Hugging Face Hub (no network).

The stand-in implements the three endpoints ``snapshot_download`` calls for a dataset repo
(read from huggingface_hub's source): ``GET /api/datasets/<repo>/revision/<rev>`` (repo info
with the commit ``sha``), ``GET /api/datasets/<repo>/tree/<rev>`` (recursive file listing) and
``HEAD``/``GET /datasets/<repo>/resolve/<rev>/<path>`` (file bytes with ``X-Repo-Commit``,
``ETag`` and ``Content-Length``). It serves a synthetic dataset, at the top level or under
``dataset/``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from h2hmem.cli import app
from h2hmem.data import DownloadError, download_dataset, load_dataset, synthesize_dataset
from h2hmem.data._stats import dataset_stats

REPO = "varib/H2HMEM"
SHA = "0123456789abcdef0123456789abcdef01234567"


class _Hub(BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    log: list[tuple[str, str]] = []
    auth: list[str | None] = []

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass

    def _send(self, code: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, obj) -> None:
        self._send(200, json.dumps(obj).encode(), {"Content-Type": "application/json"})

    def _route(self, head: bool) -> None:
        url = urllib.parse.urlparse(self.path)
        path = urllib.parse.unquote(url.path)
        self.log.append((self.command, path))
        self.auth.append(self.headers.get("Authorization"))
        api = f"/api/datasets/{REPO}/"
        res = f"/datasets/{REPO}/resolve/"
        if path.startswith(api + "revision/"):
            rev = path[len(api + "revision/") :]
            if rev not in ("main", SHA):
                return self._send(404, b"{}", {"X-Error-Code": "RevisionNotFound"})
            return self._json(
                {
                    "id": REPO,
                    "_id": "1",
                    "sha": SHA,
                    "private": False,
                    "author": "varib",
                    "siblings": [{"rfilename": p} for p in sorted(self.files)],
                }
            )
        if path.startswith(api + "tree/"):
            entries, dirs = [], set()
            for p in sorted(self.files):
                parts = p.split("/")
                dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
                entries.append(
                    {
                        "type": "file",
                        "path": p,
                        "size": len(self.files[p]),
                        "oid": hashlib.sha1(self.files[p]).hexdigest(),
                    }
                )
            entries += [{"type": "directory", "path": d, "oid": "0" * 40, "size": 0} for d in sorted(dirs)]
            return self._json(entries)
        if path.startswith(res):
            rev, _, fname = path[len(res) :].partition("/")
            if fname not in self.files or rev not in ("main", SHA):
                return self._send(404, b"", {"X-Error-Code": "EntryNotFound"}, head)
            body = self.files[fname]
            return self._send(
                200,
                body,
                {
                    "X-Repo-Commit": SHA,
                    "ETag": f'"{hashlib.sha256(body).hexdigest()}"',
                    "Content-Type": "application/octet-stream",
                },
                head,
            )
        if path.startswith("/api/datasets/"):
            return self._send(404, b"{}", {"X-Error-Code": "RepoNotFound"}, head)
        return self._send(404, b"", {}, head)

    def do_GET(self) -> None:
        self._route(head=False)

    def do_HEAD(self) -> None:
        self._route(head=True)


@pytest.fixture(scope="module")
def synth_small(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "ds"
    synthesize_dataset(root, "small", seed=3)
    return root


def _serve(files: dict[str, bytes]):
    handler = type("Hub", (_Hub,), {"files": files, "log": [], "auth": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler, f"http://127.0.0.1:{server.server_address[1]}"


def _repo_files(root: Path, prefix: str) -> dict[str, bytes]:
    return {
        prefix + p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.parent != root
    }


@pytest.fixture(autouse=True)
def _isolated_hf(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    # huggingface_hub read HF_HUB_OFFLINE when it was first imported, perhaps by an earlier test that
    # set it: the downloads here talk to a local stand-in and need the Hub online, whatever ran before.
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", False)


@pytest.mark.parametrize("prefix", ["", "dataset/"])
def test_download_lays_out_splits(synth_small, tmp_path, prefix):
    files = _repo_files(synth_small, prefix)
    files["README.md"] = b"# not part of the dataset\n"
    server, hub, url = _serve(files)
    try:
        dest = download_dataset(tmp_path / "dl", endpoint=url)
    finally:
        server.shutdown()
    assert dest == tmp_path / "dl"
    assert (dest / "dyadic").is_dir() and (dest / "multi-party").is_dir()
    assert not (dest / "dataset").exists() and not (dest / "README.md").exists()
    # every file arrived byte for byte, at its split-relative place
    for name, data in files.items():
        if name != "README.md":
            assert (dest / name.removeprefix(prefix)).read_bytes() == data
    got, want = dataset_stats(load_dataset(dest)), dataset_stats(load_dataset(synth_small))
    assert got == want
    assert got["splits"]["all"]["questions"] == 60
    # exactly the calls snapshot_download makes: repo info, tree at the resolved commit, then one
    # HEAD (metadata) and one GET per split file; README.md is outside the allow patterns
    api = [c for c in hub.log if c[1].startswith("/api/")]
    assert api == [("GET", f"/api/datasets/{REPO}/revision/main"), ("GET", f"/api/datasets/{REPO}/tree/{SHA}")]
    resolved = sorted(c for c in hub.log if not c[1].startswith("/api/"))
    wanted = sorted(
        (m, f"/datasets/{REPO}/resolve/{SHA}/{n}") for n in files if n != "README.md" for m in ("GET", "HEAD")
    )
    assert resolved == wanted


def test_second_call_is_a_no_op(synth_small, tmp_path):
    server, hub, url = _serve(_repo_files(synth_small, ""))
    try:
        dest = download_dataset(tmp_path / "dl", endpoint=url)
        n = len(hub.log)
        assert download_dataset(dest, endpoint=url) == dest
        assert len(hub.log) == n  # the marker says the same repo/revision is complete
    finally:
        server.shutdown()


def test_token_is_sent(synth_small, tmp_path):
    server, hub, url = _serve(_repo_files(synth_small, ""))
    try:
        download_dataset(tmp_path / "dl", endpoint=url, token="hf_test_token")
    finally:
        server.shutdown()
    assert hub.auth and all(a == "Bearer hf_test_token" for a in hub.auth)


def test_unknown_revision_is_a_clear_error(synth_small, tmp_path):
    server, _, url = _serve(_repo_files(synth_small, ""))
    try:
        with pytest.raises(DownloadError, match="revision 'v9' does not exist"):
            download_dataset(tmp_path / "dl", endpoint=url, revision="v9")
        with pytest.raises(DownloadError, match="not found"):
            download_dataset(tmp_path / "dl2", endpoint=url, repo_id="someone/else")
    finally:
        server.shutdown()


def test_repo_without_splits_is_an_error(tmp_path):
    server, _, url = _serve({"data/train.csv": b"a,b\n1,2\n"})
    try:
        with pytest.raises(DownloadError, match="no 'dyadic/' or 'multi-party/'"):
            download_dataset(tmp_path / "dl", endpoint=url)
    finally:
        server.shutdown()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_is_a_clear_error(tmp_path):
    with pytest.raises(DownloadError, match="cannot reach"):
        download_dataset(tmp_path / "dl", endpoint=f"http://127.0.0.1:{_closed_port()}")


def test_cli_download_offline_no_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    r = CliRunner().invoke(app, ["data", "download", "--dest", str(tmp_path / "dl")])
    assert r.exit_code == 2
    assert "cannot reach" in r.output and "Traceback" not in r.output


def test_cli_download_prints_stats(synth_small, tmp_path):
    server, _, url = _serve(_repo_files(synth_small, "dataset/"))
    try:
        r = CliRunner().invoke(app, ["data", "download", "--dest", str(tmp_path / "dl"), "--endpoint", url])
    finally:
        server.shutdown()
    assert r.exit_code == 0, r.output
    assert "0 error(s)" in r.output
    assert "multi-party" in r.output and "60" in r.output
