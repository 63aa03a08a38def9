"""servekit's engine simulator: an OpenAI-compatible streaming server with exact timing.

Results measured against it are simulator results: its ``/version`` says so, the
harness writes ``simulator: true`` into the run header, and packages must disclose it
(SK117).
"""

from servekit.bench.sim.config import Fault, SimConfig
from servekit.bench.sim.server import SimServer, serve_forever

__all__ = ["Fault", "SimConfig", "SimServer", "serve_forever"]
