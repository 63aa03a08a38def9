"""The one serve command every deploy file runs, rendered from ``package.serve``.

The argument vector is, in this order::

    entrypoint  [model_arg]  MODEL  revision pin  args  [served name]  [host]  [port]

``MODEL`` is ``model.repo``, or ``serve.model_dir`` when the publisher converted the
weights (the operator mounts the converted copy there; no Hub revision applies to it). The
revision pin makes the engine load ``model.commit`` and nothing else: vLLM gets ``--revision``, ``--code-revision`` and
``--tokenizer-revision``, SGLang ``--revision``, and ``transformers serve`` the
``REPO@COMMIT`` form; servekit's simulator (``servekit-sim``) loads no weights and
needs none. ``args`` are copied exactly. The served name, host (``0.0.0.0``)
and port flags are added only when the engine has them and ``args`` does not already
set them. Each engine's flags come from its module in :mod:`servekit.engines`; an engine
without one is refused rather than deployed
unpinned.
"""

from __future__ import annotations

from servekit.engines import ENGINES, EngineSpec
from servekit.engines import MultiNode as MultiNode  # the deploy renderers read it here
from servekit.errors import PackageError
from servekit.package.models import EnvVar, Package

HF_CACHE_DIR = "/var/cache/huggingface"
"""Where containers keep the Hugging Face cache (a volume); set as HF_HOME there."""
HF_TOKEN = "HF_TOKEN"
"""Read from the operator's environment (or a Kubernetes secret) for gated models only."""
TOKEN_SECRET = "hf-token"
MODEL_DIR_VAR = "MODEL_DIR"
"""The operator's host directory holding converted weights (``serve.model_dir``)."""
MODEL_VOLUME = "model"


def profile(package: Package) -> EngineSpec:
    """The engine's profile, or a refusal naming the engines servekit can pin."""
    found = ENGINES.get(package.engine.name)
    if found is None:
        raise PackageError(
            f"servekit cannot make engine '{package.engine.name}' load the pinned model commit",
            hint=f"kits support the engines {', '.join(sorted(ENGINES))}; "
            "add a module for it in servekit/engines/ with its revision flags",
        )
    return found


def _sets(args: tuple[str, ...], flag: str) -> bool:
    return any(a == flag or a.startswith(f"{flag}=") for a in args)


def _model_part(package: Package, engine: EngineSpec) -> list[str]:
    model = package.model
    flag = [package.serve.model_arg] if package.serve.model_arg else []
    if package.serve.model_dir is not None:
        return [*flag, package.serve.model_dir]
    name = f"{model.repo}@{model.commit}" if engine.revision_in_model else model.repo
    return [*flag, name, *(t for f in engine.revision_flags for t in (f, model.commit))]


def _refuse_pinned_flags(package: Package, engine: EngineSpec) -> None:
    for flag in engine.revision_flags:
        if _sets(package.serve.args, flag):
            raise PackageError(
                f"serve.args sets {flag}; the kit pins the revision from model.commit",
                hint=f"remove {flag} from serve.args",
            )


def _optional(args: tuple[str, ...], flag: str | None, value: str | None) -> list[str]:
    if flag is None or value is None or _sets(args, flag):
        return []
    return [flag, value]


def serve_argv(package: Package) -> tuple[str, ...]:
    """The exact argument vector of the engine process (see the module docstring)."""
    engine, serve = profile(package), package.serve
    _refuse_pinned_flags(package, engine)
    return (
        *serve.entrypoint,
        *_model_part(package, engine),
        *serve.args,
        *_optional(serve.args, engine.served_name_flag, serve.served_model_name),
        *_optional(serve.args, engine.host_flag, "0.0.0.0"),
        *_optional(serve.args, engine.port_flag, str(serve.port)),
    )


def leader_argv(package: Package, nodes: MultiNode) -> list[str]:
    """The leader's command: the engine's setup step, then exactly the serve argv."""
    setup = f'{nodes.leader_setup} && exec "$@"'
    return ["sh", "-c", setup, "servekit-leader", *serve_argv(package)]


def worker_argv(nodes: MultiNode) -> list[str]:
    """A worker's command: join the leader (its address comes from LWS_LEADER_ADDRESS)."""
    return ["sh", "-c", nodes.worker_exec]


def container_env(package: Package) -> tuple[EnvVar, ...]:
    """The package's env, plus HF_HOME pointing at the cache volume unless it sets one."""
    env = package.serve.env
    if any(v.name == "HF_HOME" for v in env):
        return env
    return (*env, EnvVar(name="HF_HOME", value=HF_CACHE_DIR))


def hf_cache_dir(package: Package) -> str:
    """The container path of the Hugging Face cache volume."""
    return next((v.value for v in container_env(package) if v.name == "HF_HOME"), HF_CACHE_DIR)


def multinode(package: Package) -> MultiNode | None:
    """The multi-node recipe when the target spans nodes; refuses engines without one."""
    if package.hardware.target.nodes == 1:
        return None
    found = profile(package).multinode
    if found is None:
        raise PackageError(
            f"servekit has no multi-node launch for engine '{package.engine.name}'",
            hint="multi-node kits support vllm (Ray); or target a single node",
        )
    return found


def gpus_per_node(package: Package) -> int:
    """GPUs each node (each pod) gets; the count must split evenly over the nodes."""
    target = package.hardware.target
    if target.count % target.nodes:
        raise PackageError(
            f"hardware.target.count ({target.count}) does not split over {target.nodes} nodes",
            hint="give a GPU count that is a multiple of the node count",
        )
    return target.count // target.nodes


def image(package: Package) -> str:
    """The container image the deploy files run."""
    if package.engine.image is None:
        raise PackageError(
            "engine.image is not set, so the deploy files have no image to run",
            hint="set engine.image to the image built from the recipe (or the engine's release)",
        )
    return package.engine.image
