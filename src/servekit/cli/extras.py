"""Which extra brings a library: a command that needs one that is missing says what to install.

``pip install servekit`` gives the buyer's tools (package, receipts, verify, kit, weights,
fit); the extras in ``pyproject.toml`` bring the rest (docs/install.md). A command that
imports a library of a missing extra fails with :class:`~servekit.errors.MissingExtraError`
(exit 8) naming the extra and the pip command, never with a traceback.
"""

from __future__ import annotations

from servekit.errors import MissingExtraError

__all__ = ["COMMAND_EXTRAS", "EXTRAS", "missing_extra"]

# top-level module -> the extra (pyproject.toml) that installs it
EXTRAS: dict[str, str] = {
    "huggingface_hub": "hub",
    "httpx2": "hub",  # huggingface_hub's HTTP client, imported beside it
    "httptools": "bench",
    "fastapi": "web",
    "starlette": "web",
    "uvicorn": "web",
    "multipart": "web",
    "python_multipart": "web",
    "itsdangerous": "web",
    "matplotlib": "web",
    "sqlalchemy": "store",
    "alembic": "store",
    "psycopg": "store",
    "argon2": "store",
    "stripe": "store",
    "optuna": "tune",
}

# a command whose extra brings another's: `serve` needs the store too, and [web] has it
COMMAND_EXTRAS: dict[str, str] = {"serve": "web"}


def missing_extra(exc: ModuleNotFoundError, command: str | None = None) -> MissingExtraError | None:
    """The error to show for ``exc`` (raised by ``command``) when an extra brings the
    missing module, else ``None``."""
    module = (exc.name or "").partition(".")[0]
    extra = EXTRAS.get(module)
    if extra is None:
        return None
    extra = COMMAND_EXTRAS.get(command or "", extra)
    return MissingExtraError(
        f"this command needs {module}, which servekit's [{extra}] extra installs; "
        "it is not installed here",
        hint=f"pip install 'servekit[{extra}]' (or 'servekit[all]' for every extra)",
    )
