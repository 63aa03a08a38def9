"""Every deploy file runs the package's command, flag for flag, and validates offline.

Each file is parsed back the way its consumer reads it (Compose, Kubernetes, ``sh``)
and its argument vector and environment compared with the package's. launch.sh is
also run by ``sh`` against a stand-in engine that records what it was given.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from jsonschema import Draft7Validator, Draft202012Validator

from servekit.errors import PackageError
from servekit.kit.build import render_deploy
from servekit.kit.command import HF_CACHE_DIR
from servekit.package import load_package
from servekit.package.models import Package
from servekit.seams.yamltext import safe_loader
from tests.kit.helpers import (
    EXAMPLES,
    PACKAGE_DIR,
    ROOT,
    SHARED_SCHEMAS,
    assert_flag_for_flag,
    compose_service,
    expected_argv,
    k8s_container,
    launch_commands,
    leader_wrapped,
    package_copy,
    package_env,
)

K8S_VERSION = kubernetes_validate.latest_version()


def _multinode(data: dict[str, Any]) -> None:
    data["hardware"]["target"] |= {"count": 4, "nodes": 2}
    data["serve"]["args"] = [*data["serve"]["args"], "--pipeline-parallel-size", "2"]


def _engine(name: str, entrypoint: list[str]) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["engine"]["name"] = name
        data["serve"]["entrypoint"] = entrypoint

    return edit


def _gated(data: dict[str, Any]) -> None:
    data["model"]["gated"] = True
    data["serve"]["model_arg"] = "--model"


def _converted(data: dict[str, Any]) -> None:
    data["serve"]["model_dir"] = "/models/converted-bf16"


VARIANTS: dict[str, Callable[[dict[str, Any]], None] | None] = {
    "fixture": None,
    "multinode": _multinode,
    "sglang": _engine("sglang", ["python3", "-m", "sglang.launch_server"]),
    "transformers": _engine("transformers", ["transformers", "serve"]),
    "gated": _gated,
    "converted": _converted,
}


@pytest.fixture(params=[*VARIANTS, *(p.name for p in EXAMPLES)])
def package_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param in VARIANTS:
        return package_copy(tmp_path, VARIANTS[request.param])
    return ROOT / "examples" / "packages" / request.param


def _deploy(package_dir: Path) -> tuple[Package, dict[str, bytes]]:
    pkg = load_package(package_dir).package
    return pkg, render_deploy(pkg)


def container_env(pkg: Package) -> dict[str, str]:
    return {**package_env(pkg), "HF_HOME": HF_CACHE_DIR}


# --- flag for flag ---------------------------------------------------------------------


def test_compose_runs_the_package_command(package_dir: Path) -> None:
    pkg, files = _deploy(package_dir)
    name = "engine" if pkg.hardware.target.nodes == 1 else "leader"
    argv, env = compose_service(files["deploy/compose.yaml"], name)
    assert_flag_for_flag(argv if name == "engine" else leader_wrapped(argv), pkg)
    token = env.pop("HF_TOKEN", None)
    assert env == container_env(pkg)
    assert (token is not None) == pkg.model.gated
    assert token is None or token.startswith("${HF_TOKEN:?")


def _k8s_documents(files: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    return {
        path: yaml.safe_load(data) for path, data in files.items() if path.startswith("deploy/k8s/")
    }


def _pod_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if doc["kind"] == "Deployment":
        return [doc["spec"]["template"]["spec"]["containers"][0]]
    lws = doc["spec"]["leaderWorkerTemplate"]
    return [lws["leaderTemplate"]["spec"]["containers"][0]]


def test_kubernetes_runs_the_package_command(package_dir: Path) -> None:
    pkg, files = _deploy(package_dir)
    docs = _k8s_documents(files)
    workload = [d for d in docs.values() if d["kind"] != "Service"]
    assert len(workload) == 1
    assert workload[0]["kind"] == (
        "Deployment" if pkg.hardware.target.nodes == 1 else "LeaderWorkerSet"
    )
    argv, env = k8s_container(_pod_containers(workload[0])[0])
    assert_flag_for_flag(argv if argv[0] != "sh" else leader_wrapped(argv), pkg)
    secret = env.pop("HF_TOKEN", None)
    assert env == container_env(pkg)
    assert (secret is not None) == pkg.model.gated


def test_launch_sh_runs_the_package_command(package_dir: Path) -> None:
    pkg, files = _deploy(package_dir)
    execs, env = launch_commands(files["deploy/launch.sh"])
    assert_flag_for_flag(execs[0], pkg)
    assert env == package_env(pkg)


def test_gpu_count_per_node(package_dir: Path) -> None:
    pkg, files = _deploy(package_dir)
    per_node = pkg.hardware.target.count // pkg.hardware.target.nodes
    workload = next(d for d in _k8s_documents(files).values() if d["kind"] != "Service")
    assert _pod_containers(workload)[0]["resources"]["limits"]["nvidia.com/gpu"] == per_node
    compose = yaml.safe_load(files["deploy/compose.yaml"])
    for service in compose["services"].values():
        assert service["deploy"]["resources"]["reservations"]["devices"][0]["count"] == per_node


# --- launch.sh under a real shell ---------------------------------------------------------

RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD_TO"], "a") as fh:
    fh.write(json.dumps({{"argv": [os.path.basename(sys.argv[0]), *sys.argv[1:]], "env": dict(os.environ)}}) + "\\n")
"""


def _run_launch(
    tmp_path: Path, script: bytes, programs: list[str], *args: str
) -> list[dict[str, Any]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for program in programs:
        (bin_dir / program).write_text(RECORDER.format(python=sys.executable))
        (bin_dir / program).chmod(0o755)
    (tmp_path / "launch.sh").write_bytes(script)
    record = tmp_path / "record.jsonl"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RECORD_TO": str(record), "HOME": "/nonexistent"}
    subprocess.run(["sh", str(tmp_path / "launch.sh"), *args], env=env, check=True, timeout=30)
    return [json.loads(line) for line in record.read_text().splitlines()]


def test_sh_executes_the_exact_argv_and_env(tmp_path: Path) -> None:
    pkg, files = _deploy(package_copy(tmp_path))
    (run,) = _run_launch(tmp_path, files["deploy/launch.sh"], [pkg.serve.entrypoint[0]])
    assert_flag_for_flag(run["argv"], pkg)
    assert {k: run["env"][k] for k in package_env(pkg)} == package_env(pkg)
    assert "$" in package_env(pkg)["NOTE"] and "$(" in pkg.serve.args[-1], (
        "the fixture tests quoting"
    )


def test_multinode_launch_leader_and_worker(tmp_path: Path) -> None:
    pkg, files = _deploy(package_copy(tmp_path, _multinode))
    script = files["deploy/launch.sh"]
    (tmp_path / "leader").mkdir()
    ray_start, engine = _run_launch(tmp_path / "leader", script, ["ray", "vllm"], "leader")
    assert ray_start["argv"][:3] == ["ray", "start", "--head"]
    assert_flag_for_flag(engine["argv"], pkg)
    (tmp_path / "worker").mkdir()
    (worker,) = _run_launch(tmp_path / "worker", script, ["ray", "vllm"], "worker", "10.0.0.7")
    assert worker["argv"] == ["ray", "start", "--address=10.0.0.7:6379", "--block"]
    assert worker["env"]["LWS_LEADER_ADDRESS"] == "10.0.0.7"


# --- multi-node --------------------------------------------------------------------------


def test_multinode_kit_uses_a_leaderworkerset(tmp_path: Path) -> None:
    pkg, files = _deploy(package_copy(tmp_path, _multinode))
    assert "deploy/k8s/deployment.yaml" not in files
    lws = yaml.safe_load(files["deploy/k8s/leaderworkerset.yaml"])
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2
    worker_argv, worker_env = k8s_container(template["workerTemplate"]["spec"]["containers"][0])
    assert worker_argv[:2] == ["sh", "-c"] and "$LWS_LEADER_ADDRESS" in worker_argv[2]
    assert worker_env == container_env(pkg)
    service = yaml.safe_load(files["deploy/k8s/service.yaml"])
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "leader"
    _, compose_env = compose_service(files["deploy/compose.yaml"], "worker")
    assert compose_env.pop("LWS_LEADER_ADDRESS").startswith("${LEADER_ADDRESS:?")


def test_multinode_refuses_an_engine_without_a_multinode_launch(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        _multinode(data)
        _engine("sglang", ["python3", "-m", "sglang.launch_server"])(data)

    with pytest.raises(PackageError, match="no multi-node launch for engine 'sglang'"):
        _deploy(package_copy(tmp_path, edit))


def test_an_unknown_engine_is_refused_not_left_unpinned(tmp_path: Path) -> None:
    with pytest.raises(PackageError, match="cannot make engine 'mystery' load the pinned"):
        _deploy(package_copy(tmp_path, _engine("mystery", ["mystery"])))


def test_a_revision_flag_in_args_is_refused(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["serve"]["args"] = [*data["serve"]["args"], "--revision", "main"]

    with pytest.raises(PackageError, match=r"serve\.args sets --revision"):
        _deploy(package_copy(tmp_path, edit))


def test_expected_argv_pins_the_commit_for_every_pinning_engine() -> None:
    pkg = load_package(PACKAGE_DIR).package
    assert expected_argv(pkg).count(pkg.model.commit) == 3


# --- offline validation -----------------------------------------------------------------


@cache
def _compose_schema() -> dict[str, Any]:
    path = SHARED_SCHEMAS / "compose-spec.json"
    if not path.exists():
        path = ROOT / "src" / "servekit" / "kit" / "schemas" / "compose-spec.json"
    return dict(json.loads(path.read_text()))


def test_compose_validates_against_the_compose_specification(package_dir: Path) -> None:
    _, files = _deploy(package_dir)
    errors = list(
        Draft7Validator(_compose_schema()).iter_errors(yaml.safe_load(files["deploy/compose.yaml"]))
    )
    assert errors == []


def test_the_compose_schema_check_can_fail() -> None:
    bad = {"services": {"engine": {"image": "x", "entrypoint": 5, "bogus": True}}}
    assert list(Draft7Validator(_compose_schema()).iter_errors(bad))


def test_a_compose_file_that_does_not_read_back_is_a_package_error() -> None:
    """A lone surrogate cannot come from a package.yaml (libyaml refuses it there), but a
    Package built in code can carry one: PyYAML writes it as an escape its C loader
    refuses. The kit build stops with the package's error, not a YAML traceback."""
    pkg = load_package(ROOT / "examples" / "packages" / "tiny-sim").package
    odd = pkg.model_copy(update={"serve": pkg.serve.model_copy(update={"args": ("\ud800",)})})
    with pytest.raises(PackageError, match=r"deploy/compose\.yaml does not read back"):
        render_deploy(odd)


def test_vendored_compose_schema_is_the_shared_one() -> None:
    shared = SHARED_SCHEMAS / "compose-spec.json"
    if not shared.exists():
        pytest.skip("../shared/schemas is not present in this checkout")
    vendored = ROOT / "src" / "servekit" / "kit" / "schemas" / "compose-spec.json"
    assert vendored.read_bytes() == shared.read_bytes()


def test_core_kinds_validate_with_kubernetes_validate(package_dir: Path) -> None:
    _, files = _deploy(package_dir)
    core = [d for d in _k8s_documents(files).values() if d["kind"] in ("Deployment", "Service")]
    assert core
    for doc in core:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def _strict(schema: Any) -> Any:
    """The CRD schema as the API server applies it: unknown fields are errors."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        preserve = out.get("x-kubernetes-preserve-unknown-fields")
        if "properties" in out and "additionalProperties" not in out and not preserve:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@cache
def _lws_validator() -> Draft202012Validator:
    path = SHARED_SCHEMAS / "leaderworkerset-crd.yaml"
    if not path.exists():
        pytest.skip("../shared/schemas is not present in this checkout")
    crd = yaml.load(path.read_text(), Loader=safe_loader())  # 1.3 MB: 0.2 s with libyaml
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return Draft202012Validator(_strict(version["schema"]["openAPIV3Schema"]))


def test_leaderworkerset_validates_against_its_crd_schema(tmp_path: Path) -> None:
    _, files = _deploy(package_copy(tmp_path, _multinode))
    lws = yaml.safe_load(files["deploy/k8s/leaderworkerset.yaml"])
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert list(_lws_validator().iter_errors(lws)) == []
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["argz"] = []
    assert list(_lws_validator().iter_errors(lws)), "the strict CRD check can fail"
    kubernetes_validate.validate(
        yaml.safe_load(files["deploy/k8s/service.yaml"]), K8S_VERSION, strict=True
    )


def test_escaping_keeps_dollar_signs_literal(tmp_path: Path) -> None:
    _, files = _deploy(package_copy(tmp_path))
    raw_compose = yaml.safe_load(files["deploy/compose.yaml"])["services"]["engine"]
    assert "{{ $$(name) }} costs $$5" in raw_compose["command"]
    container = yaml.safe_load(files["deploy/k8s/deployment.yaml"])["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert "{{ $$(name) }} costs $5" in container["args"]


# --- converted weights (serve.model_dir) ---------------------------------------------------


def test_converted_weights_are_mounted_read_only(tmp_path: Path) -> None:
    _, files = _deploy(package_copy(tmp_path, _converted))
    assert "--revision" not in compose_service(files["deploy/compose.yaml"], "engine")[0]
    volumes = yaml.safe_load(files["deploy/compose.yaml"])["services"]["engine"]["volumes"]
    assert volumes[-1] == (
        "${MODEL_DIR:?set MODEL_DIR to the converted model directory (README)}"
        ":/models/converted-bf16:ro"
    )
    spec = yaml.safe_load(files["deploy/k8s/deployment.yaml"])["spec"]["template"]["spec"]
    mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"]}
    assert mounts["model"] == {
        "name": "model",
        "mountPath": "/models/converted-bf16",
        "readOnly": True,
    }
    volumes_k8s = {v["name"]: v for v in spec["volumes"]}
    assert volumes_k8s["model"]["hostPath"] == {
        "path": "/models/converted-bf16",
        "type": "Directory",
    }


def test_multinode_workers_mount_the_converted_weights(tmp_path: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        _multinode(data)
        _converted(data)

    _, files = _deploy(package_copy(tmp_path, edit))
    compose = yaml.safe_load(files["deploy/compose.yaml"])["services"]
    for name in ("leader", "worker"):
        assert compose[name]["volumes"][-1].endswith(":/models/converted-bf16:ro")


def test_launch_sh_stops_until_the_converted_weights_are_there(tmp_path: Path) -> None:
    model_dir = tmp_path / "weights" / "bf16"

    def edit(data: dict[str, Any]) -> None:
        data["serve"]["model_dir"] = str(model_dir)

    pkg, files = _deploy(package_copy(tmp_path, edit))
    script = tmp_path / "launch.sh"
    script.write_bytes(files["deploy/launch.sh"])
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    missing = subprocess.run(["sh", str(script)], env=env, capture_output=True, text=True)
    assert missing.returncode == 1
    assert f"{model_dir}: put the converted model here first" in missing.stderr
    model_dir.mkdir(parents=True)
    (run,) = _run_launch(tmp_path, files["deploy/launch.sh"], [pkg.serve.entrypoint[0]])
    assert run["argv"][2] == str(model_dir)
    assert_flag_for_flag(run["argv"], pkg)
