"""Every command that produces a result takes ``--json``, on success and on failure.

The commands are enumerated from the Typer app: a new command fails
``test_every_command_is_covered`` until it has a success and a failure case here. Each
case runs the command with ``--json`` and parses stdout as strict JSON (NaN refused); a
failure must be one object naming the error class, its message, hint and the exit code
the process returned.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from servekit.config import load_settings
from servekit.receipts.keys import load_public_key
from servekit.receipts.trust import Scope, render_trust_file
from servekit.store.db import open_store
from tests.assets.make_kit_fixtures import private_key
from tests.cli.helpers import commands, options, run_cli
from tests.fakehttp import QuietHandler
from tests.fakehttp import serving as serving_fake
from tests.functional.helpers import EXAMPLES, SERVEKIT, servekit
from tests.functional.test_cli_bench import VLLM_RESULT
from tests.functional.test_cli_store import api_server
from tests.hubserver import HubServer, hub_server
from tests.replay.fixtures import Keys, recorded_model, start_simulator
from tests.store.conftest import Packages, key, packages
from tests.web.api.world import PASSWORD, make_world

__all__ = ["hub_server", "key", "packages"]

# Commands without a result to print: servers that run until interrupted, and
# `package schema`, whose whole output already is one JSON document.
NO_RESULT = {("serve",), ("sim", "serve"), ("store", "serve"), ("package", "schema")}
TINY = EXAMPLES / "tiny-sim"


@dataclass(frozen=True)
class Store:
    """A SQLite store under its own SERVEKIT_HOME, with the API world's purchases in it
    (tests/web/api/world.py), served on a loopback port for `store download`."""

    home: Path
    url: str
    token: str  # an API token of workspace "alpha", which holds test-priced 1.0.0
    order_id: int
    signature_id: int
    unpublished: Path  # a package not yet in the store
    key: Path


@dataclass
class World:
    tmp: Path
    kit: Path
    keys: Keys
    replay: Path
    endpoint: str
    hub: HubServer
    store: Store

    def fresh(self, name: str) -> str:
        return str(self.tmp / name)


@dataclass(frozen=True)
class Call:
    """A command's arguments with environment overrides and stdin."""

    argv: list[str]
    env: dict[str, str | None] = field(default_factory=dict)
    stdin: str = ""


Case = Callable[[World], list[str] | Call]


def _vllm_result(w: World) -> str:
    path = w.tmp / "vllm.json"
    path.write_text(json.dumps(VLLM_RESULT))
    return str(path)


def _feed_source(w: World) -> str:
    path = w.tmp / "feed.yaml"
    path.write_text("publisher: servekit tests\n")
    return str(path)


def _one_example(w: World) -> str:
    """A directory of example packages holding tiny-sim alone (the JSON is the same shape for
    one example as for all of them; tests/functional/test_cli_demo.py runs them all)."""
    examples = w.tmp / "one-example"
    if not examples.exists():
        shutil.copytree(TINY, examples / TINY.name)
    return str(examples)


def _tree(w: World) -> str:
    tree = w.tmp / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "config.json").write_text('{"layers": 2}')
    return str(tree)


def _pin(w: World) -> str:
    pin = w.tmp / "pin.json"
    if not pin.exists():
        code, _, err = run_cli(["model", "digest", _tree(w), "-o", str(pin)])
        assert code == 0, err
    return str(pin)


def _signed_reproduction(w: World) -> str:
    replay = w.tmp / "replay-signed"
    if not replay.exists():
        shutil.copytree(w.replay, replay)
        code, _, err = run_cli(["bench", "compare", str(w.kit), str(replay), "--tolerance", "50",
                                "--sign", str(w.keys.buyer)])  # fmt: skip
        assert code == 0, err
    return str(replay / "reproduction.dsse.json")


_TRUST_SERVERS: list[contextlib.ExitStack] = []


def _trust_url(w: World) -> str:
    """A loopback server answering a trust file for the publisher key (kept to the end)."""
    key = load_public_key(w.keys.publisher_pub)
    body = render_trust_file([(key.key_id, key.pem(), (Scope("servekit tests", ("*",)),))], "t")

    class TrustFile(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_body(200, "application/toml", body.encode())

    stack = contextlib.ExitStack()
    _TRUST_SERVERS.append(stack)
    return stack.enter_context(serving_fake(TrustFile))


def _tune(w: World, out: str) -> list[str]:
    """A quick session: stock, then two candidates that run the simulated GPU out of memory."""
    workload = {"id": "w", "description": "tiny", "prompt_tokens": [8, 8], "output_tokens": 2,
                "concurrency": 1, "requests": 2, "seed": 1, "context_length": 64}  # fmt: skip
    space = {"fixed": ["--max-model-len", "64", "--kv-tokens", "1000"],
             "search": {"--gpu-memory-utilization": [0.98, 0.99]}}  # fmt: skip
    (w.tmp / "tune-workload.yaml").write_text(json.dumps(workload))
    (w.tmp / "tune-space.yaml").write_text(json.dumps(space))
    return ["--engine", "sim", "--model", _tree(w), "--workload", str(w.tmp / "tune-workload.yaml"),
            "--space", str(w.tmp / "tune-space.yaml"), "--out", out]  # fmt: skip


RUN = [
    "--model",
    recorded_model(),
    "--input-tokens",
    "8:8",
    "--output-tokens",
    "2",
    "--requests",
    "2",
]

# command -> (success argv, failure argv), both without the command path and --json
CASES: dict[tuple[str, ...], tuple[Case, Case]] = {
    ("bench", "compare"): (
        lambda w: [str(w.kit), str(w.replay), "--tolerance", "50"],
        lambda w: [str(w.kit), w.fresh("no-replay")],
    ),
    ("bench", "import", "vllm"): (
        lambda w: [_vllm_result(w), "-o", w.fresh("v.jsonl")],
        lambda w: [w.fresh("absent.json"), "-o", w.fresh("v2.jsonl")],
    ),
    ("bench", "replay"): (
        lambda w: [
            str(w.kit),
            "--trust",
            str(w.keys.publisher_pub),
            "--endpoint",
            w.endpoint,
            "--workload",
            "sim-short",
            "--out",
            w.fresh("replay-json"),
        ],
        lambda w: [
            str(w.kit),
            "--trust",
            str(w.keys.buyer_pub),
            "--endpoint",
            w.endpoint,
            "--out",
            w.fresh("replay-untrusted"),
        ],
    ),
    ("bench", "run"): (
        lambda w: ["--endpoint", w.endpoint, *RUN, "--out", w.fresh("run")],
        lambda w: ["--endpoint", w.endpoint, *RUN, "--output-tokens", "0", "--out", w.fresh("r")],
    ),
    ("bench", "summary"): (
        lambda w: [str(TINY / "evidence")],
        lambda w: [w.fresh("no-evidence")],
    ),
    ("catalog", "export"): (
        lambda w: [str(EXAMPLES), "--out", w.fresh("site")],
        lambda w: [str(EXAMPLES), "--out", w.fresh("absent/site")],
    ),
    ("catalog", "show"): (lambda w: [str(TINY)], lambda w: [w.fresh("no-package")]),
    ("demo",): (
        lambda w: ["--examples", _one_example(w), "--out", w.fresh("demo")],
        lambda w: ["--examples", _one_example(w), "--out", w.fresh("absent/demo")],
    ),
    ("feed", "sign"): (
        lambda w: [
            _feed_source(w),
            "--key",
            str(w.keys.publisher),
            "-o",
            w.fresh("feed.json"),
            "--expires-in",
            "1d",
            "--state",
            w.fresh("feed-state"),
        ],
        lambda w: [_feed_source(w), "--key", w.fresh("no-key"), "-o", w.fresh("feed2.json")],
    ),
    ("fit",): (
        lambda w: [str(EXAMPLES / "llama-850m-h200" / "model"), "--gpu", "H200"],
        lambda w: [str(EXAMPLES / "llama-850m-h200" / "model"), "--gpu", "NO-SUCH-GPU"],
    ),
    ("keys", "generate"): (lambda w: ["--out", w.fresh("keys")], lambda w: ["--out", "/dev/null"]),
    ("keys", "show"): (
        lambda w: [str(w.keys.publisher_pub)],
        lambda w: [w.fresh("no-such.pub")],
    ),
    ("kit", "build"): (
        lambda w: [str(TINY), "--key", str(w.keys.publisher), "-o", w.fresh("k.tar.gz")],
        lambda w: [str(TINY), "--key", w.fresh("no-key"), "-o", w.fresh("k2.tar.gz")],
    ),
    ("kit", "unpack"): (
        lambda w: [str(w.kit), w.fresh("unpacked"), "--trust", str(w.keys.publisher_pub)],
        lambda w: [str(w.kit), w.fresh("unpacked2"), "--trust", str(w.keys.buyer_pub)],
    ),
    ("model", "digest"): (lambda w: [_tree(w)], lambda w: [w.fresh("no-tree")]),
    ("model", "pin"): (
        lambda w: ["org/json-model", "--revision", "main", "-o", w.fresh("hub-pin.json")],
        lambda w: ["org/json-model", "--revision", "no-such-branch", "-o", w.fresh("p2.json")],
    ),
    ("package", "check"): (lambda w: [str(TINY)], lambda w: [w.fresh("no-package")]),
    ("package", "rules"): (lambda w: [], lambda w: ["--no-such-option"]),
    ("trust", "fetch"): (
        lambda w: [_trust_url(w), "-o", w.fresh("trust.toml")],
        lambda w: [w.store.url, "-o", w.fresh("trust-404.toml")],  # the API serves no /keys
    ),
    ("tune",): (lambda w: _tune(w, w.fresh("tuned")), lambda w: _tune(w, str(w.tmp))),
    ("verify", "kit"): (
        lambda w: [str(w.kit), "--trust", str(w.keys.publisher_pub)],
        lambda w: [str(w.kit), "--trust", str(w.keys.buyer_pub)],
    ),
    ("verify", "reproduction"): (
        lambda w: [_signed_reproduction(w), "--trust", str(w.keys.buyer_pub)],
        lambda w: [_signed_reproduction(w), "--trust", str(w.keys.publisher_pub)],
    ),
    ("verify", "weights"): (
        lambda w: [_tree(w), "--pin", _pin(w)],
        lambda w: [w.fresh("no-tree"), "--pin", _pin(w)],
    ),
}


def _broken(*argv: str) -> Case:
    """The store's commands run against World.store's SERVEKIT_HOME (see _run); a database
    that cannot be opened (its directory is a file) is their failure where the command
    itself has none."""

    def case(w: World) -> Call:
        blocker = w.tmp / "a-file"
        blocker.write_text("not a directory")
        return Call(list(argv), env={"SERVEKIT_DATABASE_URL": f"sqlite:///{blocker}/servekit.db"})

    return case


STORE_CASES: dict[tuple[str, ...], tuple[Case, Case]] = {
    ("store", "add-member"): (
        lambda w: ["alpha", "bob@example.com", "--role", "member"],
        lambda w: ["no-such-workspace", "bob@example.com"],
    ),
    ("store", "add-token"): (
        lambda w: ["alpha", "alice@example.com", "--name", "json"],
        lambda w: ["no-such-workspace", "alice@example.com"],
    ),
    ("store", "add-user"): (
        lambda w: Call(["json@example.com", "--password-stdin"], stdin=PASSWORD + "\n"),
        lambda w: Call(["short@example.com", "--password-stdin"], stdin="short\n"),
    ),
    ("store", "add-workspace"): (
        lambda w: ["json-ws", "--owner", "alice@example.com"],
        lambda w: ["json-ws-2", "--owner", "nobody@example.com"],
    ),
    ("store", "audit"): (lambda w: [], _broken()),
    ("store", "download"): (
        lambda w: [
            "test-priced@1.0.0",
            "--url",
            w.store.url,
            "--token",
            w.store.token,
            "-o",
            w.fresh("bought.tar.gz"),
        ],
        lambda w: [
            "test-priced@1.0.0",
            "--url",
            w.store.url,
            "--token",
            "sk-wrong",
            "-o",
            w.fresh("refused.tar.gz"),
        ],
    ),
    ("store", "erase-signer"): (
        lambda w: [str(w.store.signature_id)],
        lambda w: ["999999"],
    ),
    ("store", "list"): (lambda w: [], _broken()),
    ("store", "migrate"): (lambda w: [], _broken()),
    ("store", "publish"): (
        lambda w: [str(w.store.unpublished), "--key", str(w.store.key)],
        lambda w: [str(w.store.unpublished), "--key", w.fresh("no-key")],
    ),
    ("store", "refund"): (
        lambda w: [str(w.store.order_id), "--reason", "json test"],
        lambda w: ["999999", "--reason", "json test"],
    ),
    ("store", "renew-due"): (lambda w: [], _broken()),
    ("store", "retract"): (
        lambda w: ["test-free", "1.0.0", "--reason", "json test"],
        lambda w: ["no-such-package", "1.0.0", "--reason", "json test"],
    ),
    ("store", "send-outbox"): (lambda w: [], _broken()),
}
CASES |= STORE_CASES


def test_every_command_is_covered() -> None:
    produce = [c for c in commands() if c not in NO_RESULT]
    assert sorted(CASES) == produce
    missing = [c for c in produce if "--json" not in options(c)]
    assert not missing, f"commands without --json: {missing}"


def _store_env(home: Path) -> dict[str, str | None]:
    return {"SERVEKIT_HOME": str(home), "SERVEKIT_DATABASE_URL": None}


@contextlib.contextmanager
def _environ(env: dict[str, str | None]) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        yield


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, packages: Packages, key: Path
) -> Iterator[Store]:
    home = tmp_path_factory.mktemp("store") / "home"
    with _environ(_store_env(home)):
        opened = open_store(load_settings())
        api = make_world(opened, packages, key)
        opened.engine.dispose()
        with api_server() as url:
            yield Store(home, url, api.alice_api_token, api.ids["order_id"],
                        api.ids["signature_id"], packages.priced_v2, key)  # fmt: skip


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory,
    kit: Path,
    keys: Keys,
    replays: dict[str, Path],
    hub_server: HubServer,
    store: Store,
) -> Iterator[World]:
    from tests.functional.test_cli_weights import _hub_repo

    _hub_repo(hub_server, "org/json-model")
    proc, url = start_simulator("1", "1")
    tmp = tmp_path_factory.mktemp("json")
    try:
        yield World(tmp, kit, keys, replays["same"], url, hub_server, store)
    finally:
        proc.terminate()
        proc.wait(10)
        while _TRUST_SERVERS:  # stopped while their threads run, not at interpreter exit
            _TRUST_SERVERS.pop().close()


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _run(world: World, path: tuple[str, ...], case: Case) -> tuple[int, str, str]:
    given = case(world)
    call = given if isinstance(given, Call) else Call(given)
    argv = [*path, *call.argv, "--json"]
    if path == ("model", "pin"):  # the Hub client reads its endpoint at import
        env = world.hub.env(world.tmp)
        done = subprocess.run([*SERVEKIT, *argv], capture_output=True, text=True, env=env)
        return done.returncode, done.stdout, done.stderr
    env = _store_env(world.store.home) if path[0] == "store" else {}
    with _environ({**env, **call.env}):
        return run_cli(argv, stdin=call.stdin)


@pytest.mark.parametrize("path", sorted(CASES), ids=" ".join)
def test_json_on_success_and_on_failure(world: World, path: tuple[str, ...]) -> None:
    success, failure = CASES[path]
    code, out, err = _run(world, path, success)
    assert code == 0, err
    _strict(out)
    code, out, err = _run(world, path, failure)
    assert code not in (0, 1), err
    data = _strict(out)
    assert data["ok"] is False and data["exit_code"] == code, data
    assert data["error"] and data["message"] and "hint" in data


def test_servekit_subprocess_agrees(tmp_path: Path) -> None:
    """The console script behaves as the in-process entry point does."""
    done = servekit("package", "check", str(tmp_path / "absent"), "--json")
    assert done.returncode == 3
    assert _strict(done.stdout)["error"] == "PackageError"
    assert private_key  # the fixture helper the replay keys use is importable here
