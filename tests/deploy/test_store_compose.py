"""deploy/store/compose.yaml is valid Compose and runs the web app the way the docs say."""

from __future__ import annotations

from pathlib import Path

import yaml

from servekit.kit.validate import compose_validator

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "store" / "compose.yaml"


def _document() -> dict[str, object]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def test_matches_the_compose_specification() -> None:
    problems = [e.message for e in compose_validator().iter_errors(_document())]
    assert problems == []


def test_the_validator_refuses_a_broken_file() -> None:
    broken = _document()
    broken["services"]["web"]["ports"] = "8000"  # type: ignore[index]
    broken["services"]["db"]["restart"] = 3  # type: ignore[index]
    assert len(list(compose_validator().iter_errors(broken))) >= 2


def test_web_runs_several_workers_on_postgres_and_a_shared_home() -> None:
    services = _document()["services"]
    assert isinstance(services, dict)
    web, db = services["web"], services["db"]
    command = web["command"]
    assert command[:2] == ["servekit", "serve"]
    assert int(command[command.index("--workers") + 1]) > 1
    assert web["environment"]["SERVEKIT_DATABASE_URL"].startswith("postgresql://")
    assert any(v.endswith(":/var/lib/servekit") for v in web["volumes"])
    assert web["ports"] == ["127.0.0.1:8000:8000"]  # behind a reverse proxy, never public
    assert web["depends_on"]["db"]["condition"] == "service_healthy"
    assert db["image"].startswith("postgres:")
    build = web["build"]
    assert (COMPOSE.parent / build["context"] / build["dockerfile"]).resolve().is_file()
