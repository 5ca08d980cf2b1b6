"""``download_dataset``: fetch the official H2HMem dataset from the Hugging Face Hub.

Uses ``huggingface_hub.snapshot_download(repo_id, repo_type="dataset", local_dir=dest)`` and
then lays the files out as ``dest/dyadic`` and ``dest/multi-party`` whether the repository holds
them at its top level or under ``dataset/`` (``docs/dataset-format.md``). A finished download is
recorded in ``dest/.h2hmem-download.json``; running again with the same repository and revision
returns at once, and an interrupted download resumes where it stopped (``snapshot_download``
keeps per-file metadata under ``dest/.cache/huggingface``; its cache and refs stay there too,
never in the user's global cache).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ._loader import find_root
from ._schema import SPLITS

DEFAULT_REPO_ID = "varib/H2HMEM"
"""The official dataset repository (``docs/dataset-format.md``, section Download)."""
MARKER = ".h2hmem-download.json"
_PATTERNS = [f"{prefix}{split}/*" for prefix in ("", "dataset/") for split in SPLITS]
"""Only the split folders are fetched (fnmatch ``*`` also matches ``/``)."""


class DownloadError(RuntimeError):
    """The dataset could not be downloaded (offline, unknown repository or revision, bad layout)."""


def download_dataset(
    dest: Path,
    *,
    repo_id: str = DEFAULT_REPO_ID,
    revision: str | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
) -> Path:
    """Download the H2HMem dataset into ``dest`` and return ``dest`` (the dataset root).

    Args:
        dest: target folder; afterwards it holds ``dyadic/`` and ``multi-party/``.
        repo_id: Hugging Face dataset repository (default :data:`DEFAULT_REPO_ID`).
        revision: branch, tag or commit (default: the repository's main branch).
        endpoint: Hub URL (default: the ``HF_ENDPOINT`` environment variable at call time, else
            https://huggingface.co); a mirror, or a local stand-in in tests.
        token: access token for private or gated copies (default: the cached login, if any).

    Raises:
        DownloadError: the Hub cannot be reached (offline), the repository or revision does not
            exist or needs a token, or the download holds no ``dyadic/`` / ``multi-party/`` folder.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    dest = Path(dest)
    # huggingface_hub reads HF_ENDPOINT once at import; read it per call so it can be changed later.
    endpoint = endpoint or os.environ.get("HF_ENDPOINT") or None
    wanted = {"repo_id": repo_id, "revision": revision}
    marker = dest / MARKER
    if marker.is_file() and _same(marker, wanted) and all((dest / s).is_dir() for s in SPLITS):
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    where = endpoint or "the Hugging Face Hub"
    try:
        snapshot_download(
            repo_id,
            repo_type="dataset",
            revision=revision,
            endpoint=endpoint,
            token=token,
            local_dir=dest,
            allow_patterns=_PATTERNS,
            cache_dir=dest / ".cache" / "huggingface" / "hub",
        )
    except RevisionNotFoundError:
        raise DownloadError(f"revision {revision!r} does not exist in dataset {repo_id} on {where}") from None
    except (RepositoryNotFoundError, GatedRepoError):
        raise DownloadError(
            f"dataset {repo_id} not found on {where}, or it needs a token (--token / HF_TOKEN)"
        ) from None
    except LocalEntryNotFoundError as e:
        cause = e.__cause__ or e
        raise DownloadError(
            f"cannot reach {where} to download {repo_id} (offline? "
            f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}). "
            "Check the network, or point --endpoint / HF_ENDPOINT at a mirror."
        ) from None
    except HfHubHTTPError as e:
        raise DownloadError(f"downloading {repo_id} from {where} failed: {str(e).splitlines()[0]}") from None
    except OSError as e:
        raise DownloadError(f"downloading {repo_id} into {dest} failed: {e}") from None
    _flatten(dest, repo_id)
    marker.write_text(json.dumps(wanted) + "\n", encoding="utf-8")
    return dest


def _same(marker: Path, wanted: dict[str, Any]) -> bool:
    try:
        return bool(json.loads(marker.read_text(encoding="utf-8")) == wanted)
    except (OSError, ValueError):
        return False


def _flatten(dest: Path, repo_id: str) -> None:
    """Move ``dest/dataset/<split>`` to ``dest/<split>`` when the repository nests them."""
    nested = dest / "dataset"
    for split in SPLITS:
        src, dst = nested / split, dest / split
        if not src.is_dir():
            continue
        if dst.exists():
            shutil.rmtree(dst)  # an older copy; the fresh download wins
        src.rename(dst)
    if nested.is_dir() and not any(nested.iterdir()):
        nested.rmdir()
    try:
        find_root(dest)
    except FileNotFoundError:
        raise DownloadError(
            f"dataset {repo_id} holds no 'dyadic/' or 'multi-party/' folder (at its top level or under 'dataset/')"
        ) from None
