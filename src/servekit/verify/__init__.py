"""Verification: kits (manifest, signature, subjects) and model weights.

Every verifier raises a specific :class:`~servekit.errors.VerificationError`
subclass naming the file, the expected and the actual value; none returns a bool.

What a script needs is re-exported here (docs/install.md, "The library face")::

    from servekit.verify import Expected, verify_kit, verify_weights

Each name loads on first use: ``servekit.verify.weights`` starts without the kit verifier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from servekit._lazy import lazy_exports

if TYPE_CHECKING:
    from servekit.verify.expect import Expectation
    from servekit.verify.kit import KitVerification, unpack_kit, verify_contents, verify_kit
    from servekit.verify.weights import (
        Expected,
        WeightsReport,
        check_weights,
        expected_from_kit,
        expected_from_package,
        expected_from_pin_file,
        verify_weights,
    )

_HOME = {
    "Expectation": "expect",
    "Expected": "weights",
    "KitVerification": "kit",
    "WeightsReport": "weights",
    "check_weights": "weights",
    "expected_from_kit": "weights",
    "expected_from_package": "weights",
    "expected_from_pin_file": "weights",
    "unpack_kit": "kit",
    "verify_contents": "kit",
    "verify_kit": "kit",
    "verify_weights": "weights",
}
__all__ = [
    "Expectation",
    "Expected",
    "KitVerification",
    "WeightsReport",
    "check_weights",
    "expected_from_kit",
    "expected_from_package",
    "expected_from_pin_file",
    "unpack_kit",
    "verify_contents",
    "verify_kit",
    "verify_weights",
]
__getattr__ = lazy_exports(__name__, _HOME)
