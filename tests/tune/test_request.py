"""What servekit tune refuses before it starts any engine, and the parts of a session that
do not need one: the proposers, the launcher's failures, the CLI's arguments."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from servekit.cli.main import main
from servekit.engines import sim
from servekit.errors import TuneError, UsageError
from servekit.tune.draft import write_draft
from servekit.tune.launch import StartFailedError, resolve, running
from servekit.tune.models import Method, Space, TuneConfig
from servekit.tune.run import check_request
from servekit.tune.search import Tpe, points, proposer
from tests.tune.conftest import WORKLOAD, run_tune


def _config(tmp_path: Path, engine: str, search: dict[str, list[Any]], **extra: Any) -> TuneConfig:
    return TuneConfig.model_validate({
        "engine": engine, "model_dir": tmp_path, "served_name": "m", "workload": WORKLOAD,
        "space": {"search": search, **extra.pop("space", {})}, "budget_s": 60, "out": tmp_path / "out", **extra,
    })  # fmt: skip


def test_numerics_changing_flags_are_off_the_search_unless_allowed(tmp_path: Path) -> None:
    search = {"--kv-cache-dtype": ["auto", "fp8"]}
    with pytest.raises(TuneError, match="can change the model's outputs") as caught:
        check_request(_config(tmp_path, "vllm", search))
    assert "--allow-numerics" in (caught.value.hint or "")
    check_request(_config(tmp_path, "vllm", search, allow_numerics=True))


@pytest.mark.parametrize(
    ("search", "error", "says"),
    [
        ({"--max-batch": [8]}, UsageError, "no flag --max-batch"),
        ({"--max-num-seqs": [0]}, UsageError, "outside its range"),
        ({"--enable-chunked-prefill": ["on"]}, UsageError, "takes a bool"),
    ],
)
def test_a_space_outside_the_engines_schema_is_refused(
    tmp_path: Path, search: dict[str, list[Any]], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        check_request(_config(tmp_path, "vllm", search))


def test_fixed_arguments_must_keep_stock_stock(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "vllm",
        {"--max-num-seqs": [8]},
        space={"fixed": ["--max-model-len", "4096", "--enforce-eager"]},
    )
    with pytest.raises(TuneError, match="--enforce-eager are not load-needed"):
        check_request(config)


def test_shared_arguments_and_the_environment_are_checked(tmp_path: Path) -> None:
    def config(**space: Any) -> TuneConfig:
        return _config(tmp_path, "vllm", {"--max-num-seqs": [8]}, space=space)

    check_request(config(shared=["--enforce-eager"], env={"VLLM_USE_FLASHINFER_SAMPLER": "0"},
                         fixed=["--load-format", "dummy", "--max-model-len", "4096"]))  # fmt: skip
    with pytest.raises(TuneError, match="shared: --max-num-seqs also searched"):
        check_request(config(shared=["--max-num-seqs", "8"]))
    with pytest.raises(TuneError, match="--kv-cache-dtype fp8 can change the model's outputs"):
        check_request(config(shared=["--kv-cache-dtype", "fp8"]))
    with pytest.raises(TuneError, match="env: VLLM_ATTENTION_BACKEND are not neutral for vllm"):
        check_request(config(env={"VLLM_ATTENTION_BACKEND": "FLASHINFER"}))


def test_an_existing_output_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with pytest.raises(TuneError, match="already exists"):
        check_request(_config(tmp_path, "servekit-sim", {"--max-num-seqs": [8]}))


SPACE = Space(search={"--max-num-seqs": (8, 16, 32), "--enable-chunked-prefill": (True, False)})


@pytest.mark.parametrize("method", list(Method))
def test_every_proposer_walks_the_space_once(method: Method) -> None:
    search, seen = proposer(method, SPACE, 1, maximize=False), []
    while (point := search.propose()) is not None:
        seen.append(point)
        search.tell(
            point,
            None if point["--enable-chunked-prefill"] is False else float(point["--max-num-seqs"]),
        )
    assert sorted(map(str, seen)) == sorted(map(str, points(SPACE))) and len(seen) == 6


def test_tpe_hands_out_an_unmeasured_point_when_it_keeps_repeating() -> None:
    tpe = Tpe(SPACE, 0, maximize=True)
    first = tpe.propose()
    assert first is not None
    tpe.tell(first, 1.0)
    assert tpe._unmeasured() not in (None, first)


def test_an_engine_that_exits_while_starting_fails_with_its_last_words(tmp_path: Path) -> None:
    argv = (sys.executable, "-c", "import sys; print('CUDA out of memory'); sys.exit(3)")
    began = time.monotonic()
    with (
        pytest.raises(
            StartFailedError, match="exited with code 3 while starting: CUDA out of memory"
        ),
        running(sim.SPEC, argv, {}, 9, tmp_path / "e.log", timeout_s=30),
    ):
        pass
    assert time.monotonic() - began < 10  # the process is watched, not waited out


def test_an_engine_that_never_answers_is_stopped_with_its_children(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = f"import subprocess,sys,time; p=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)']); open({str(marker)!r},'w').write(str(p.pid)); time.sleep(60)"
    with (
        pytest.raises(StartFailedError, match="not ready"),
        running(sim.SPEC, (sys.executable, "-c", script), {}, 9, tmp_path / "e.log", timeout_s=1.5),
    ):
        pass
    child = int(marker.read_text())
    time.sleep(0.2)
    assert (
        not Path(f"/proc/{child}").exists()
        or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    )


def test_a_missing_engine_binary_is_a_failed_start(tmp_path: Path) -> None:
    with (
        pytest.raises(StartFailedError, match="cannot run /no/such/vllm"),
        running(sim.SPEC, ("/no/such/vllm", "serve"), {}, 9, tmp_path / "e.log", timeout_s=1),
    ):
        pass


@pytest.mark.parametrize(("budget", "code"), [("soon", 2), ("10x", 2)])
def test_the_cli_refuses_a_budget_that_is_not_a_duration(
    tmp_path: Path, budget: str, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tune", "--engine", "sim", "--model", str(tmp_path), "--workload", "w.yaml",
            "--space", "s.yaml", "--out", str(tmp_path / "o"), "--budget", budget]  # fmt: skip
    assert main(args) == code
    assert "is not a duration" in capsys.readouterr().err


def test_the_cli_names_a_malformed_workload_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w.yaml").write_text("id: x\nconcurrency: zero\n")
    (tmp_path / "s.yaml").write_text("search: {--max-num-seqs: [8]}\n")
    args = ["tune", "--engine", "sim", "--model", str(tmp_path), "--workload", str(tmp_path / "w.yaml"),
            "--space", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "--json"]  # fmt: skip
    assert main(args) == TuneError.exit_code
    assert "concurrency" in capsys.readouterr().err


def test_a_console_script_is_found_beside_the_interpreter_when_not_on_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert resolve("servekit") == str(Path(sys.executable).parent / "servekit")
    assert resolve("no-such-engine") == "no-such-engine"
    assert resolve("/bin/sh") == "/bin/sh"


def test_a_stock_engine_that_cannot_start_stops_the_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = {
        "fixed": ["--max-model-len", "1024", "--kv-tokens", "100"],
        "search": {"--max-num-seqs": [8]},
    }
    assert run_tune(tmp_path, "--budget", "1m", space=space) == TuneError.exit_code
    err = capsys.readouterr().err
    assert "stock servekit-sim could not be measured" in err and "KV cache holds 40 tokens" in err
    assert not (tmp_path / "out" / "package.yaml").exists()


def test_a_draft_for_a_real_engine_states_what_it_cannot_know(tmp_path: Path) -> None:
    """No engine runs here: the draft of a vLLM session whose search allowed numerics and
    measured nothing but stock (write_draft on its own)."""
    config = _config(
        tmp_path, "vllm", {"--kv-cache-dtype": ["fp8"]}, allow_numerics=True, hardware="1x H200"
    )
    (tmp_path / "config.json").write_text("{}")
    write_draft(config, "s1", (), None, [], 12.0)
    package = yaml.safe_load((tmp_path / "out" / "package.yaml").read_text())
    assert package["accuracy"]["method"] == "not_measured"
    assert package["accuracy"]["runtime_stages_applied"] == ["--kv-cache-dtype"]
    assert {d["topic"] for d in package["disclosures"]} >= {"accuracy", "weights_source", "other"}
    assert package["engine"]["source_repo"] == "vllm-project/vllm"
    plain = _config(tmp_path / "b", "vllm", {"--max-num-seqs": [8]})
    (tmp_path / "b").mkdir()
    write_draft(plain, "s2", (), None, [], 1.0)
    assert (
        yaml.safe_load((tmp_path / "b" / "out" / "package.yaml").read_text())["accuracy"]["method"]
        == "by_construction"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "id: x\nid: y\n",
            r"w\.yaml: cannot read the workload file \(line 2: duplicate key 'id'\)",
        ),
        ("a: &x 1\nb: *x\n", r"cannot read the workload file \(line 1: YAML anchor 'x'"),
        (None, r"cannot read the workload file \(\[Errno 2\]"),
    ],
)
def test_the_cli_reads_workload_yaml_through_the_seams(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, problem: str
) -> None:
    if text is not None:
        (tmp_path / "w.yaml").write_text(text)
    (tmp_path / "s.yaml").write_text("search: {--max-num-seqs: [8]}\n")
    args = ["tune", "--engine", "sim", "--model", str(tmp_path), "--workload", str(tmp_path / "w.yaml"),
            "--space", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o")]  # fmt: skip
    assert main(args) == TuneError.exit_code
    assert re.search(problem, " ".join(capsys.readouterr().err.split()))
