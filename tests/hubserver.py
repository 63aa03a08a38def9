"""A local Hugging Face Hub: a real HTTP server on 127.0.0.1 for offline tests.

It answers the routes ``huggingface_hub`` (2.x) calls, with the headers it reads:

* ``GET /api/models/{repo}[/revision/{rev}]``: repository info; ``sha`` is the commit
  the revision resolves to (``?blobs=true`` adds sizes and LFS data to ``siblings``);
* ``GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=&expand=``: the tree listing,
  paginated with a ``Link: <...>; rel="next"`` header like the Hub's;
* ``POST /api/models/{repo}/paths-info/{rev}``: listing entries of the paths asked for;
* ``HEAD|GET /{repo}/resolve/{rev}/{path}``: a plain git file answers 200 with
  ``X-Repo-Commit``, ``ETag`` (its git blob id), ``Content-Length`` and ``Range``
  support; an LFS file answers ``302`` to a second server on another port (the
  "CDN") with ``X-Repo-Commit``, ``X-Linked-Etag`` (its sha256), ``X-Linked-Size``
  and ``Location``, and the CDN serves the bytes without the token, as the Hub does.
  ``HubServer.sent`` counts the body bytes served per file sha256 (range reads included).

Errors carry the ``X-Error-Code`` / ``X-Error-Message`` headers ``huggingface_hub``
maps to its exceptions: ``RepoNotFound`` (unknown or private repository), ``RevisionNotFound``
(404), ``EntryNotFound`` (404), ``GatedRepo`` (401 without a token, 403 with a token
that was not granted access), and 401 "Invalid credentials" for an unknown token.

LFS pointers are made as git-lfs makes them, so the blob id of an LFS file is the
git blob id of its pointer, as on the Hub. Select the server with ``HF_ENDPOINT``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf", ".h5", ".msgpack")
GRANTED_TOKEN = "hf_granted_test_token"
UNGRANTED_TOKEN = "hf_ungranted_test_token"


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return (
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()
    )


@dataclass(frozen=True)
class RepoFileSpec:
    """One file of a repository at a commit: bytes in memory or a file on disk."""

    path: str
    size: int
    sha256: str
    blob_id: str
    lfs: bool
    data: bytes | None = None
    source: Path | None = None
    lfs_size: int | None = None  # set only to make the listing lie about the LFS object

    @classmethod
    def from_bytes(cls, path: str, data: bytes, *, lfs: bool | None = None) -> RepoFileSpec:
        is_lfs = path.endswith(LFS_SUFFIXES) if lfs is None else lfs
        sha = hashlib.sha256(data).hexdigest()
        blob = git_blob_id(lfs_pointer(sha, len(data))) if is_lfs else git_blob_id(data)
        return cls(path, len(data), sha, blob, is_lfs, data=data)

    @classmethod
    def from_file(cls, path: str, source: Path, *, sha256: str) -> RepoFileSpec:
        """An LFS file served from disk (large trees); ``sha256`` is known by the caller."""
        size = source.stat().st_size
        return cls(path, size, sha256, git_blob_id(lfs_pointer(sha256, size)), True, source=source)

    def chunks(self, start: int, end: int) -> Iterator[bytes]:
        """The bytes ``start..end`` (inclusive)."""
        if self.data is not None:
            yield self.data[start : end + 1]
            return
        assert self.source is not None
        with self.source.open("rb") as f:
            f.seek(start)
            left = end + 1 - start
            while left > 0:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk

    def listing(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "type": "file",
            "oid": self.blob_id,
            "size": self.size,
            "path": self.path,
        }
        if self.lfs:
            pointer = lfs_pointer(self.sha256, self.size)
            size = self.size if self.lfs_size is None else self.lfs_size
            entry["lfs"] = {"oid": self.sha256, "size": size, "pointerSize": len(pointer)}
        return entry


@dataclass
class FakeRepo:
    """A model repository: commits (each a set of files) and refs naming them."""

    repo_id: str
    gated: bool = False
    private: bool = False
    commits: dict[str, dict[str, RepoFileSpec]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def commit(self, files: Sequence[RepoFileSpec], *, ref: str = "main") -> str:
        """Add a commit holding ``files`` and point ``ref`` at it; return the commit id."""
        listing = "".join(f"{f.blob_id} {f.path}\n" for f in sorted(files, key=lambda f: f.path))
        parent = self.refs.get(ref, "")
        commit = hashlib.sha1(f"{self.repo_id}\n{parent}\n{listing}".encode()).hexdigest()
        self.commits[commit] = {f.path: f for f in files}
        self.refs[ref] = commit
        return commit

    def resolve(self, revision: str) -> str | None:
        if revision in self.commits:
            return revision
        return self.refs.get(revision)


class _RefusalError(Exception):
    def __init__(self, status: int, code: str | None, message: str, commit: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.commit = status, code, message, commit


def _directories(paths: Sequence[str]) -> list[str]:
    dirs = {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
    return sorted(dirs)


_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<rev>[^/]+))?$")
_TREE = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?:/(?P<path>.+))?$")
_PATHS = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/paths-info/(?P<rev>[^/]+)$")
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
_CDN = re.compile(r"^/lfs/(?P<sha>[0-9a-f]{64})$")


class HubServer:
    """The Hub and its CDN, each on its own loopback port, serving :class:`FakeRepo` s."""

    def __init__(self, *, page_size: int = 1000) -> None:
        self.page_size = page_size
        self.repos: dict[str, FakeRepo] = {}
        self.tokens: dict[str, set[str]] = {GRANTED_TOKEN: set(), UNGRANTED_TOKEN: set()}
        self.requests: list[tuple[str, str]] = []
        self.sent: dict[str, int] = {}  # body bytes served per file, by its sha256
        self._lock = threading.Lock()
        self._hub = _serve(self, cdn=False)
        self._cdn = _serve(self, cdn=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._hub.server_address[1]}"

    @property
    def cdn_url(self) -> str:
        return f"http://127.0.0.1:{self._cdn.server_address[1]}"

    def add_repo(self, repo: FakeRepo, *, grant: Sequence[str] = (GRANTED_TOKEN,)) -> FakeRepo:
        """Serve ``repo``; the tokens in ``grant`` may read it when it is gated or private."""
        self.repos[repo.repo_id] = repo
        for token in grant:
            self.tokens.setdefault(token, set()).add(repo.repo_id)
        return repo

    def log(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def count_sent(self, sha256: str, n: int) -> None:
        with self._lock:
            self.sent[sha256] = self.sent.get(sha256, 0) + n

    def requested(self, pattern: str) -> list[tuple[str, str]]:
        with self._lock:
            return [r for r in self.requests if re.search(pattern, f"{r[0]} {r[1]}")]

    def close(self) -> None:
        for server in (self._hub, self._cdn):
            server.shutdown()
            server.server_close()

    def env(self, home: Path) -> dict[str, str]:
        """A process environment that uses this server and a private cache under ``home``."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
        env.update(
            HF_ENDPOINT=self.url,
            HF_HOME=str(home / "hf-home"),
            HF_HUB_CACHE=str(home / "hf-cache"),
            HF_HUB_DISABLE_TELEMETRY="1",
            HF_HUB_DISABLE_XET="1",
        )
        return env

    # --- what the routes answer ------------------------------------------------------

    def _repo(self, repo_id: str, token: str | None) -> FakeRepo:
        if token is not None and token not in self.tokens:
            raise _RefusalError(401, None, "Invalid credentials in Authorization header")
        repo = self.repos.get(repo_id)
        if repo is None or (repo.private and repo_id not in self.tokens.get(token or "", set())):
            raise _RefusalError(401, "RepoNotFound", "Repository not found")
        return repo

    def _commit(self, repo: FakeRepo, revision: str) -> str:
        commit = repo.resolve(revision)
        if commit is None:
            raise _RefusalError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return commit

    def _check_gate(self, repo: FakeRepo, token: str | None) -> None:
        if not repo.gated or repo.repo_id in self.tokens.get(token or "", set()):
            return
        if token is None:
            raise _RefusalError(
                401,
                "GatedRepo",
                f"Access to model {repo.repo_id} is restricted. You must have access to it "
                "and be authenticated to access it. Please log in.",
            )
        raise _RefusalError(
            403,
            "GatedRepo",
            f"Access to model {repo.repo_id} is restricted and you are not in the authorized "
            f"list. Visit {self.url}/{repo.repo_id} to ask for access.",
        )

    def info(self, repo_id: str, revision: str, token: str | None, blobs: bool) -> dict[str, Any]:
        repo = self._repo(repo_id, token)
        commit = self._commit(repo, revision)
        siblings = []
        for spec in repo.commits[commit].values():
            sibling: dict[str, Any] = {"rfilename": spec.path}
            if blobs:
                sibling.update(size=spec.size, blobId=spec.blob_id)
                if spec.lfs:
                    pointer = len(lfs_pointer(spec.sha256, spec.size))
                    sibling["lfs"] = {
                        "sha256": spec.sha256,
                        "size": spec.size,
                        "pointerSize": pointer,
                    }
            siblings.append(sibling)
        return {
            "_id": hashlib.md5(repo_id.encode(), usedforsecurity=False).hexdigest()[:24],
            "id": repo_id,
            "modelId": repo_id,
            "author": repo_id.split("/")[0],
            "sha": commit,
            "lastModified": "2026-07-29T00:00:00.000Z",
            "createdAt": "2026-07-01T00:00:00.000Z",
            "private": repo.private,
            "gated": "manual" if repo.gated else False,
            "disabled": False,
            "tags": [],
            "siblings": siblings,
        }

    def entries(self, repo_id: str, revision: str, token: str | None) -> list[dict[str, Any]]:
        """Every file and directory at ``revision``, as the tree API lists them."""
        repo = self._repo(repo_id, token)
        files = repo.commits[self._commit(repo, revision)]
        out = [
            {"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
            for d in _directories(list(files))
        ]
        out += [spec.listing() for spec in files.values()]
        return sorted(out, key=lambda e: e["path"])

    def tree(
        self, repo_id: str, revision: str, path: str, recursive: bool, token: str | None
    ) -> list[dict[str, Any]]:
        entries = self.entries(repo_id, revision, token)
        prefix = f"{path}/" if path else ""
        if path and not any(e["path"].startswith(prefix) for e in entries):
            raise _RefusalError(404, "EntryNotFound", f"{path} does not exist on {revision}")
        below = [e for e in entries if e["path"].startswith(prefix)]
        if recursive:
            return below
        return [e for e in below if "/" not in e["path"][len(prefix) :]]

    def file(
        self, repo_id: str, revision: str, path: str, token: str | None
    ) -> tuple[str, RepoFileSpec]:
        repo = self._repo(repo_id, token)
        commit = self._commit(repo, revision)
        self._check_gate(repo, token)
        spec = repo.commits[commit].get(path)
        if spec is None:
            raise _RefusalError(
                404, "EntryNotFound", f"{path} does not exist on {revision}", commit
            )
        return commit, spec

    def lfs_object(self, sha256: str) -> RepoFileSpec | None:
        for repo in self.repos.values():
            for files in repo.commits.values():
                for spec in files.values():
                    if spec.lfs and spec.sha256 == sha256:
                        return spec
        return None


def _parse_range(header: str | None, size: int) -> tuple[int, int] | None:
    match = re.match(r"^bytes=(\d+)-(\d*)$", header or "")
    if not match:
        return None
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else size - 1
    return start, min(end, size - 1)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub: HubServer
    cdn: bool

    def log_message(self, format: str, *args: Any) -> None:
        return None

    # -- plumbing -------------------------------------------------------------------

    def _token(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    def _send(self, status: int, headers: Mapping[str, str], body: bytes = b"") -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", headers.get("Content-Length", str(len(body))))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _json(self, data: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(data).encode()
        self._send(200, {"Content-Type": "application/json", **(headers or {})}, body)

    def _refuse(self, refusal: _RefusalError) -> None:
        headers = {"Content-Type": "application/json", "X-Error-Message": refusal.message}
        if refusal.code:
            headers["X-Error-Code"] = refusal.code
        if refusal.commit:
            headers["X-Repo-Commit"] = refusal.commit
        self._send(refusal.status, headers, json.dumps({"error": refusal.message}).encode())

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _stream(self, spec: RepoFileSpec, headers: dict[str, str]) -> None:
        span = _parse_range(self.headers.get("Range"), spec.size)
        start, end = span or (0, spec.size - 1)
        status = 206 if span else 200
        headers = {**headers, "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        headers["Content-Length"] = str(max(0, end + 1 - start))
        if span:
            headers["Content-Range"] = f"bytes {start}-{end}/{spec.size}"
        self._send(status, headers)
        if self.command == "GET" and spec.size:
            for chunk in spec.chunks(start, end):
                self.wfile.write(chunk)
                self.hub.count_sent(spec.sha256, len(chunk))

    # -- routes ---------------------------------------------------------------------

    def do_GET(self) -> None:
        self._route()

    def do_HEAD(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def _route(self) -> None:
        url = urlsplit(self.path)
        self.hub.log(self.command, url.path)
        try:
            if self.cdn:
                self._cdn(url.path)
            else:
                self._api(url.path, parse_qs(url.query))
        except _RefusalError as refusal:
            self._refuse(refusal)

    def _cdn(self, path: str) -> None:
        match = _CDN.match(path)
        spec = self.hub.lfs_object(match.group("sha")) if match else None
        if spec is None:
            raise _RefusalError(404, None, "no such object")
        self._stream(spec, {"ETag": f'"{spec.sha256}"'})

    def _api(self, path: str, query: dict[str, list[str]]) -> None:
        token = self._token()
        flag = lambda name: query.get(name, ["false"])[0].lower() in ("true", "1")  # noqa: E731
        if self.command == "POST" and (m := _PATHS.match(path)):
            return self._paths_info(m, token)
        if m := _TREE.match(path):
            return self._tree(m, query, flag("recursive"), token)
        if m := _INFO.match(path):
            rev = unquote(m.group("rev") or "main")
            return self._json(self.hub.info(m.group("repo"), rev, token, flag("blobs")))
        if m := _RESOLVE.match(path):
            return self._resolve(m, token)
        raise _RefusalError(404, None, f"no route for {path}")

    def _tree(
        self, m: re.Match[str], query: dict[str, list[str]], recursive: bool, token: str | None
    ) -> None:
        repo, rev = m.group("repo"), unquote(m.group("rev"))
        sub = unquote(m.group("path") or "")
        entries = self.hub.tree(repo, rev, sub, recursive, token)
        cursor = int(query.get("cursor", ["0"])[0])
        page = entries[cursor : cursor + self.hub.page_size]
        headers = {}
        if cursor + self.hub.page_size < len(entries):
            tail = f"/{quote(sub)}" if sub else ""
            nxt = (
                f"{self.hub.url}/api/models/{repo}/tree/{quote(rev, safe='')}{tail}"
                f"?recursive={str(recursive).lower()}&expand=false&cursor={cursor + self.hub.page_size}"
            )
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._json(page, headers)

    def _paths_info(self, m: re.Match[str], token: str | None) -> None:
        form = parse_qs(self._body().decode())
        wanted = set(form.get("paths", []))
        entries = self.hub.entries(m.group("repo"), unquote(m.group("rev")), token)
        self._json([e for e in entries if e["path"] in wanted])

    def _resolve(self, m: re.Match[str], token: str | None) -> None:
        repo, rev, path = m.group("repo"), unquote(m.group("rev")), unquote(m.group("path"))
        commit, spec = self.hub.file(repo, rev, path, token)
        if not spec.lfs:
            self._stream(spec, {"X-Repo-Commit": commit, "ETag": f'"{spec.blob_id}"'})
            return
        location = f"{self.hub.cdn_url}/lfs/{spec.sha256}"
        headers = {
            "X-Repo-Commit": commit,
            "ETag": f'"{spec.blob_id}"',
            "X-Linked-Etag": f'"{spec.sha256}"',
            "X-Linked-Size": str(spec.size),
            "Location": location,
        }
        self._send(302, headers)


def _serve(hub: HubServer, *, cdn: bool) -> ThreadingHTTPServer:
    handler = type("Handler", (_Handler,), {"hub": hub, "cdn": cdn})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# --- a small generated model repository ----------------------------------------------


def model_files(
    seed: int = 0, *, shards: int = 3, shard_bytes: int = 256 * 1024
) -> list[RepoFileSpec]:
    """A small model repository: config, tokenizer, README and LFS weight shards."""
    rng = hashlib.sha256(f"seed-{seed}".encode())
    files = [
        RepoFileSpec.from_bytes(
            ".gitattributes", b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
        ),
        RepoFileSpec.from_bytes("README.md", f"# test model {seed}\n".encode()),
        RepoFileSpec.from_bytes("config.json", json.dumps({"seed": seed, "layers": 2}).encode()),
        RepoFileSpec.from_bytes(
            "tokenizer/tokenizer.json", json.dumps({"vocab": list(range(50))}).encode()
        ),
    ]
    for i in range(1, shards + 1):
        block = rng.digest() * (shard_bytes // 32 + 1)
        data = (str(i).encode() + block)[:shard_bytes]
        files.append(RepoFileSpec.from_bytes(f"model-{i:05d}-of-{shards:05d}.safetensors", data))
    return files


def write_tree(files: Sequence[RepoFileSpec], root: Path) -> Path:
    """Write ``files`` under ``root`` as a plain directory; return ``root``."""
    for spec in files:
        target = root / spec.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if spec.data is not None:
            target.write_bytes(spec.data)
        else:
            assert spec.source is not None
            shutil.copyfile(spec.source, target)
    return root


@pytest.fixture(scope="session")
def hub_server() -> Iterator[HubServer]:
    """One local Hub for the session; each test adds repositories with names of its own."""
    server = HubServer(page_size=3)  # small pages: listings take several requests
    yield server
    server.close()
