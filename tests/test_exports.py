"""The library face: what a script imports from servekit.verify, .kit, .store and .package.

Every name in ``__all__`` resolves to the object of the module it lives in (and, for a
class or function, the module that defines it); the list holds what docs/install.md
promises; and importing one module of a package does not load the others through its
re-exports.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from tests.functional.helpers import ROOT

# what a script needs, at least (docs/install.md, "The library face")
PROMISED = {
    "servekit.verify": {"verify_kit", "unpack_kit", "KitVerification", "Expectation",
                        "verify_weights", "check_weights", "WeightsReport", "Expected",
                        "expected_from_pin_file", "expected_from_package", "expected_from_kit"},
    "servekit.kit": {"build_kit", "write_kit", "BuiltKit"},
    "servekit.store": {"Store", "open_store", "publish", "retract", "catalog",
                       "download", "list_entitlements", "create_user", "sign_in"},
    "servekit.package": {"load_package", "check", "LoadedPackage", "Package", "RULES"},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_every_exported_name_resolves_to_its_home(name: str) -> None:
    package = importlib.import_module(name)
    exported = list(package.__all__)
    assert len(set(exported)) == len(exported) and set(exported) == set(package._HOME)
    assert PROMISED[name] <= set(exported)
    for member in exported:
        value = getattr(package, member)
        home = importlib.import_module(f"{name}.{package._HOME[member]}")
        assert getattr(home, member) is value, f"{name}.{member} is not {home.__name__}.{member}"
        defined = getattr(value, "__module__", None)
        assert defined is None or defined.startswith(name + "."), (member, defined)


@pytest.mark.parametrize("name", sorted(PROMISED))
def test_an_unknown_name_is_an_attribute_error(name: str) -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = importlib.import_module(name).nothing_here


def test_one_module_does_not_load_its_siblings() -> None:
    code = (
        "import sys, servekit.verify.weights, servekit.kit, servekit.store; "
        "print(*sorted(m for m in sys.modules if m.startswith(("
        "'servekit.verify.kit', 'servekit.kit.', 'servekit.store.', 'sqlalchemy'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
