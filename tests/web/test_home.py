"""What `servekit serve` prepares: a package the store refuses is reported and skipped,
never a reason for the server not to start."""

from __future__ import annotations

from pathlib import Path

from servekit.config import Settings
from servekit.web.home import prepare_home
from tests.store.conftest import make_variant


def test_a_package_priced_1e30_is_skipped_and_the_rest_is_served(tmp_path: Path) -> None:
    packages = tmp_path / "packages"
    make_variant(packages / "good", pkg_id="test-good", version="1.0.0", usd=5)
    make_variant(packages / "huge", pkg_id="test-huge", version="1.0.0", usd=1e30)
    home = prepare_home(Settings(home=tmp_path / "home"), packages)
    assert [v.package_id for v in home.published] == ["test-good"]
    (refused,) = home.refused
    assert refused.directory == packages / "huge"
    assert "pricing.usd is 1e+30 US dollars; expected a number from 0 to" in refused.reason
