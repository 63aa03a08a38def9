"""After the sale: replay a kit's request grid on the buyer's endpoint, compare every
figure, and sign the result as a reproduction (docs/replay.md)."""

from servekit.replay.compare import compare
from servekit.replay.models import Comparison, ReplayHeader, Verdict
from servekit.replay.reproduction import sign_reproduction, verify_reproduction
from servekit.replay.run import ReplayOptions, prepare_replay, run_replay

__all__ = [
    "Comparison",
    "ReplayHeader",
    "ReplayOptions",
    "Verdict",
    "compare",
    "prepare_replay",
    "run_replay",
    "sign_reproduction",
    "verify_reproduction",
]
