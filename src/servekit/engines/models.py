"""What servekit knows about one serving engine, as one frozen value per engine.

An :class:`EngineSpec` holds the engine's serve command line (entrypoint, how the model
and its revision are passed, the naming flags), its stock defaults and a typed schema of
the flags a tuner may search (type, range, whether a flag can change outputs), the
documented lists the claim rules read (load-needed and numerics-changing flags), how to
probe a running server, fit's memory constants and the multi-node launch strategy. The kit
writer (:mod:`servekit.kit.command`), the claim rules (:mod:`servekit.package.rules.engines`),
fit and the tuner all read it, so adding an engine is one module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from servekit.errors import UsageError

FlagValue = int | float | bool | str


class FlagKind(StrEnum):
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    CHOICE = "choice"


@dataclass(frozen=True)
class Flag:
    """One engine flag a tuner may set: its type, its range, and whether it can change
    outputs (dtype, quantization, KV-cache dtype, speculative decoding do)."""

    name: str
    kind: FlagKind
    stock: FlagValue | None
    """The engine's own default (None: the engine decides at run time)."""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    changes_outputs: bool = False
    help: str = ""

    def check(self, value: object) -> FlagValue:
        """``value`` as this flag's type, or a :class:`UsageError` naming the flag and range."""
        typed = self._typed(value)
        if isinstance(typed, int | float) and not isinstance(typed, bool):
            low, high = self.minimum, self.maximum
            if (low is not None and typed < low) or (high is not None and typed > high):
                raise UsageError(
                    f"{self.name} {typed} is outside its range [{low:g}, {high:g}]"
                    if low is not None and high is not None
                    else f"{self.name} {typed} is outside its range",
                    hint=f"give {self.name} a value in its range ({self.help or self.kind})",
                )
        return typed

    def _typed(self, value: object) -> FlagValue:
        wrong = UsageError(
            f"{self.name} takes a {self.kind.value}, not {value!r}",
            hint=f"{self.name}: "
            + (f"one of {', '.join(self.choices)}" if self.choices else self.kind.value),
        )
        match self.kind:
            case FlagKind.BOOL:
                if not isinstance(value, bool):
                    raise wrong
                return value
            case FlagKind.INT:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise wrong
                return value
            case FlagKind.FLOAT:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise wrong
                return float(value)
            case FlagKind.CHOICE:
                if str(value) not in self.choices:
                    raise wrong
                return str(value)


@dataclass(frozen=True)
class MultiNode:
    """How an engine spans nodes: a shell step before the leader's command, and the workers'."""

    leader_setup: str
    worker_exec: str


@dataclass(frozen=True)
class FitConstants:
    """What fit assumes about the engine's memory use (docs/fit.md says where they come from)."""

    gpu_memory_utilization: float
    """The share of each GPU's memory the engine takes by default."""
    overhead_single_gib: float
    """The engine's own reserve on one GPU besides weights and KV cache."""
    overhead_multi_gib: float
    """The same on each GPU of a multi-GPU layout (communication buffers added)."""


@dataclass(frozen=True)
class Probe:
    """Where a running server answers: readiness, its version, the models it serves."""

    health: str = "/health"
    version: tuple[str, ...] = ("/version",)
    """Paths tried in order; the first JSON object with a ``version`` names it."""
    models: str = "/v1/models"
    model_info: str | None = None
    """An extra path naming the loaded model (``model_path``), for engines that have one."""


@dataclass(frozen=True)
class EngineSpec:
    """One engine (see the module docstring)."""

    name: str
    entrypoint: tuple[str, ...]
    model_arg: str | None = None
    revision_flags: tuple[str, ...] = ()
    revision_in_model: bool = False
    served_name_flag: str | None = None
    host_flag: str | None = None
    port_flag: str | None = None
    multinode: MultiNode | None = None
    load_flags: frozenset[str] = frozenset()
    numerics_flags: Mapping[str, frozenset[str] | None] = field(default_factory=dict)
    preallocates: bool = False
    preallocating_flags: frozenset[str] = frozenset()
    flags: tuple[Flag, ...] = ()
    probe: Probe = Probe()
    fit: FitConstants | None = None
    neutral_env: frozenset[str] = frozenset()
    """Environment variables of this engine a stock run may set besides the common ones."""
    release_image: str | None = None
    """The engine's published container image for a version (``{version}``), if any."""
    noise_seed_env: str | None = None
    """A simulated engine's per-start noise seed: the tuner sets it for each start."""

    def flag(self, name: str) -> Flag:
        """The schema entry of ``name``, or a refusal listing the flags servekit knows."""
        found = next((f for f in self.flags if f.name == name), None)
        if found is None:
            known = ", ".join(f.name for f in self.flags) or "none"
            raise UsageError(
                f"{self.name} has no flag {name} in servekit's schema",
                hint=f"flags servekit can set for {self.name}: {known} "
                f"(add one to servekit/engines/{self.name.replace('-', '_')}.py)",
            )
        return found

    def stock(self) -> dict[str, FlagValue]:
        """The engine's stock configuration: no flag set (every flag at its own default)."""
        return {}

    def flag_args(self, values: Mapping[str, FlagValue]) -> list[str]:
        """The argument words of a checked flag set, in schema order."""
        out: list[str] = []
        for spec in self.flags:
            if spec.name not in values:
                continue
            value = spec.check(values[spec.name])
            if spec.kind is FlagKind.BOOL:
                out.append(spec.name if value else _negated(spec.name))
            else:
                out += [spec.name, _word(value)]
        unknown = sorted(set(values) - {f.name for f in self.flags})
        if unknown:
            self.flag(unknown[0])  # raises, naming the flags servekit knows
        return out

    def serve_argv(
        self,
        model: str,
        values: Mapping[str, FlagValue],
        *,
        port: int,
        host: str = "127.0.0.1",
        served_name: str | None = None,
        extra: tuple[str, ...] = (),
    ) -> tuple[str, ...]:
        """The command that serves ``model`` with the flag set ``values`` on ``host:port``
        (``extra``: arguments every candidate shares, copied as given)."""
        model_part = [self.model_arg, model] if self.model_arg else [model]
        named = _pair(self.served_name_flag, served_name)
        return (
            *self.entrypoint,
            *model_part,
            *extra,
            *self.flag_args(values),
            *named,
            *_pair(self.host_flag, host),
            *_pair(self.port_flag, str(port)),
        )


def _pair(flag: str | None, value: str | None) -> list[str]:
    return [flag, value] if flag is not None and value is not None else []


def _negated(name: str) -> str:
    """``--enable-x`` -> ``--no-enable-x`` (argparse's BooleanOptionalAction spelling)."""
    return "--no-" + name.removeprefix("--")


def _word(value: FlagValue) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


COMMON_LOAD = frozenset(
    {"--host", "--port", "--served-model-name", "--trust-remote-code", "--download-dir",
     "--revision", "--tokenizer", "--tokenizer-revision", "--model", "--api-key",
     "--uvicorn-log-level", "--disable-log-requests", "--disable-log-stats"}
)  # fmt: skip
"""Flags every engine's stock command may carry: they load or name things."""

AUTO = frozenset({"auto"})
WEIGHT_FORMATS = frozenset({"auto", "safetensors", "pt"})
