"""Catalog web app under load, beside nginx serving the static export of the same pages.

    apt-get install -y wrk nginx
    .venv/bin/python bench/web_load.py [--packages 1000] [--clients 16] [--seconds 10]

Steps:
  1. generate N package versions: copies of the examples under new ids, named and filed
     under four GPU labels so filters and pages have something to cut (the figures, and
     so each chart, repeat per example: one distinct chart per example);
  2. publish them into a fresh SERVEKIT_HOME (load, check every claim, copy: the copy
     ``servekit serve`` keeps for the pages), then record each version in the store as
     ``servekit serve`` does, without its kit: building and signing 1 000 kits takes most
     of an hour on 2 cores, and no page reads a kit;
  3. export the static catalog of the same versions (timed; the figure the issue targets);
  4. serve the live app as ``servekit serve --workers N`` does (uvicorn, ``--live-workers``
     workers, default one per core; the app factory ``servekit.web.app:create_app``, pages
     read through the store: ``StoreCatalog``, which checks SQLite's data_version and the
     publish generation on every request and queries the store when either moved) and the
     export with Debian's nginx, as an operator would serve it (``worker_processes auto``,
     ``sendfile``, ``tcp_nopush``, no access log; a configuration generated in the
     temporary directory, the master in the foreground), each on a free loopback port and
     stopped at the end;
  5. wrk (Debian package ``wrk``) holds 16 connections and fetches the catalog page
     (cycling through its pages) and package pages (cycling through versions) from each
     server; print p50, p99, req/s and the live/nginx ratio;
  6. the workers stall: one client sends 200 sequential requests on one keep-alive
     connection to the live app with 1 worker and with ``--workers`` (default 2); print
     each p50. Several workers once stalled every such request about 44 ms (Nagle's
     algorithm against the client's delayed ACK: servekit/web/protocol.py); the p50s
     should be alike.

Without ``wrk`` or ``nginx`` the script says which is missing and how to install it, and
exits 2. Everything runs on one machine: the clients share the CPU with the server they
measure, so compare the ratio, not the absolute rates, across machines.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import yaml

from servekit.catalog import Catalog, Query, export_site, package_page, render_index, render_package
from servekit.catalog.listing import PAGE_SIZE
from servekit.catalog.pages import listing_of, package_dirs
from servekit.catalog.publish import load_published, publish
from servekit.catalog.site import StaticLinks
from servekit.config import Settings
from servekit.store import publishing
from servekit.store.db import open_store
from servekit.web.links import LiveLinks
from servekit.web.server import APP_FACTORY, SERVER_OPTIONS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "packages"
GPUS = ("B300", "H200", "H100", "MI355X")


def generate(count: int, out: Path) -> list[Path]:
    """``count`` package directories, copies of the examples with new ids and names."""
    templates = package_dirs(EXAMPLES)
    dirs = []
    for i in range(count):
        source = templates[i % len(templates)]
        target = out / f"gen-{i:04d}"
        shutil.copytree(source, target)
        path = target / "package.yaml"
        data = yaml.safe_load(path.read_text())
        data["id"] = f"gen-{i:04d}-{data['id']}"
        data["name"] = f"{data['name']} #{i} ({GPUS[i % len(GPUS)]} listing)"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        dirs.append(target)
    return dirs


def record_in_store(catalog: Catalog, home: Path) -> None:
    """Step 2: one store row per published version, as ``servekit serve`` records it, with
    no kit behind it (an all-zero kit digest): the pages read the rows, never the kit."""
    settings = Settings(home=home)
    store = open_store(settings)
    try:
        with store.transaction() as session:
            for entry in catalog.entries:
                licence = entry.loaded.path(entry.package.license.file).read_text("utf-8")
                threshold = settings.enterprise_threshold_usd
                session.add(publishing._row(entry.package, licence, "0" * 64, b"", threshold))
    finally:
        store.engine.dispose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server(
    name: str, args: list[str] | Callable[[int], list[str]], env: dict[str, str] | None = None
) -> Iterator[str]:
    """A server process on a free loopback port (``{port}`` in ``args``, or ``args(port)``),
    yielded once it answers ``/``, and stopped (SIGTERM) at the end."""
    port = _free_port()
    argv = args(port) if callable(args) else [a.replace("{port}", str(port)) for a in args]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as errors:  # what it says if it fails to start
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            _wait_ready(name, url, proc, errors)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(name: str, url: str, proc: subprocess.Popen[bytes], errors: IO[bytes]) -> None:
    started = time.monotonic()
    deadline = started + 180  # a loaded machine: the live app loads the catalog first
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=300).read()
            print(f"{name}: first page {time.monotonic() - started:.1f} s after start")
            return
        except OSError:
            if proc.poll() is not None:
                errors.seek(0)
                said = errors.read().decode(errors="replace")
                raise SystemExit(f"{name} did not start: {said}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


WRK_SCRIPT = """
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do paths[#paths + 1] = line end
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %f %f %f %d %d\\n", latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6),
    summary.requests, e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def measure(
    base: str, paths: list[str], clients: int, seconds: int, work: Path
) -> dict[str, float]:
    """wrk with ``clients`` connections on one thread, cycling through ``paths``."""
    (work / "paths.txt").write_text("\n".join(paths) + "\n")
    (work / "cycle.lua").write_text(WRK_SCRIPT)
    env = {**os.environ, "WRK_PATHS": str(work / "paths.txt")}
    argv = ["wrk", "-t1", f"-c{clients}", f"-d{seconds}s", "--timeout", "10s"]
    argv += ["-s", str(work / "cycle.lua"), base]
    warmup = [a if not a.startswith("-d") else "-d2s" for a in argv]
    subprocess.run(warmup, env=env, check=True, capture_output=True)
    out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
    fields = next(line for line in out.splitlines() if line.startswith("RESULT")).split()[1:]
    p50, p99, rps, count, errors = (float(x) for x in fields)
    return {"p50": p50, "p99": p99, "rps": rps, "requests": count, "errors": errors}


NGINX_CONF = """
# written by bench/web_load.py: Debian's defaults where they matter to a static site
# (sendfile, tcp_nopush, worker_processes auto), every path under this directory
daemon off;
worker_processes auto;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  sendfile on;
  tcp_nopush on;
  access_log off;
  client_body_temp_path {work}/nginx-tmp/body;
  proxy_temp_path {work}/nginx-tmp/proxy;
  fastcgi_temp_path {work}/nginx-tmp/fastcgi;
  uwsgi_temp_path {work}/nginx-tmp/uwsgi;
  scgi_temp_path {work}/nginx-tmp/scgi;
  server {{
    listen 127.0.0.1:{{port}};
    root {site};
    index index.html;
  }}
}}
"""


def nginx_command(nginx: str, site: Path, work: Path) -> Callable[[int], list[str]]:
    """Debian's nginx in the foreground, serving ``site`` on ``{port}`` (filled in by
    :func:`server`), with a configuration and every file it writes under ``work``. As
    root, nginx's workers run as ``nobody``, so ``work`` is opened to them."""
    (work / "nginx-tmp").mkdir(exist_ok=True)
    work.chmod(0o755)
    conf = NGINX_CONF.format(work=work, site=site).replace("{{port}}", "{port}")

    def argv(port: int) -> list[str]:
        (work / "nginx.conf").write_text(conf.replace("{port}", str(port)))
        return [nginx, "-p", str(work), "-e", "stderr", "-c", str(work / "nginx.conf")]

    return argv


def missing_tools() -> list[str]:
    """What the bench needs and this machine lacks, each with the way to get it."""
    missing = []
    if shutil.which("wrk") is None:
        missing.append("wrk is not installed (Debian: apt-get install -y wrk)")
    if nginx_path() is None:
        missing.append(
            "nginx is not installed (Debian: apt-get install -y nginx; or set NGINX to its path)"
        )
    return missing


def nginx_path() -> str | None:
    """``$NGINX`` if set, else ``nginx`` on the path, else Debian's ``/usr/sbin/nginx``."""
    named = os.environ.get("NGINX")
    candidates = [named] if named else [shutil.which("nginx"), "/usr/sbin/nginx"]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def serve_live(port: int, workers: int = 1) -> None:
    """The app as ``servekit serve`` runs it once the home is prepared (SERVEKIT_HOME)."""
    import uvicorn

    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host="127.0.0.1",
        port=port,
        workers=workers,
        **SERVER_OPTIONS,
    )


def keepalive_p50(base: str, path: str, count: int = 200) -> float:
    """Step 6: p50 milliseconds of ``count`` sequential requests on one connection."""
    port = int(base.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        conn.request("GET", path)
        conn.getresponse().read()
        times.append((time.perf_counter() - start) * 1000)
    conn.close()
    return statistics.median(times[10:])


def print_workers_stall(env: dict[str, str], workers: int) -> None:
    """Step 6: the same page, one keep-alive connection, 1 worker and ``workers``."""
    p50s = []
    for n in (1, workers):
        cmd = [sys.executable, __file__, "--serve-live", "{port}", "--workers", str(n)]
        with server(f"live, {n} worker(s)", cmd, env) as live:
            p50s.append(keepalive_p50(live, "/healthz"))
    print(
        f"keep-alive, 200 sequential requests on one connection: 1 worker p50 "
        f"{p50s[0]:.2f} ms, {workers} workers p50 {p50s[1]:.2f} ms "
        f"(ratio {p50s[1] / p50s[0]:.2f}; the stall was about 44 ms a request)"
    )


def print_render_cost(catalog: Catalog) -> None:
    """What a page costs when the page cache misses: render in this process, no HTTP."""
    links, entries = LiveLinks(), catalog.entries[:: max(1, len(catalog.entries) // 50)]
    t0 = time.perf_counter()
    for n, _ in enumerate(entries):
        render_index(listing_of(catalog, Query(page=n % 40 + 1), PAGE_SIZE), links, live=True)
    index_ms = (time.perf_counter() - t0) / len(entries) * 1000
    t0 = time.perf_counter()
    for entry in entries:
        render_package(package_page(catalog, entry), links, live=True)
    package_ms = (time.perf_counter() - t0) / len(entries) * 1000
    print(
        f"render on a cache miss: catalog page {index_ms:.1f} ms, package page {package_ms:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--packages", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=10, help="Measured seconds per row.")
    parser.add_argument("--workers", type=int, default=2, help="Workers for step 6.")
    parser.add_argument(
        "--live-workers",
        type=int,
        default=os.cpu_count() or 1,
        help="The live app's workers in step 5 (default: one per core, as nginx's "
        "worker_processes auto).",
    )
    parser.add_argument("--serve-live", type=int, metavar="PORT", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve_live:
        serve_live(opts.serve_live, opts.workers)
        return
    missing = missing_tools()
    if missing:
        print("bench/web_load.py cannot run here:\n  " + "\n  ".join(missing), file=sys.stderr)
        raise SystemExit(2)
    work = Path(tempfile.mkdtemp(prefix="servekit-web-load-"))
    try:
        run(opts, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(opts: argparse.Namespace, work: Path) -> None:
    print(f"cpus {os.cpu_count()}, load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    # 1-2. generate and publish
    dirs = generate(opts.packages, work / "packages")
    t0 = time.perf_counter()
    publish(dirs, work / "home")
    print(f"publish {opts.packages} versions (load, check, copy): {time.perf_counter() - t0:.1f} s")
    catalog = load_published(work / "home")
    record_in_store(catalog, work / "home")
    # 3. the static export (a fresh process: each distinct chart is drawn once, then cached)
    t0 = time.perf_counter()
    pages = export_site(catalog, work / "site").pages
    export_s = time.perf_counter() - t0
    print(
        f"static export of {len(catalog.entries)} versions ({len(pages)} pages): {export_s:.2f} s"
    )
    print_render_cost(catalog)
    # 4-5. serve both, load both
    links = StaticLinks()
    n_pages = -(-len(catalog.entries) // PAGE_SIZE)
    index_pages = [Query(page=n) for n in range(1, n_pages + 1)]
    cases = {
        "catalog": (
            [("/" if q.page == 1 else f"/?page={q.page}") for q in index_pages],
            ["/" + links.index(q) for q in index_pages],
        ),
        "package": (
            [f"/packages/{e.card.id}/{e.card.version}" for e in catalog.entries],
            ["/" + links.package(e.card) for e in catalog.entries],
        ),
    }
    env = {**os.environ, "SERVEKIT_HOME": str(work / "home")}
    live_cmd = [sys.executable, __file__, "--serve-live", "{port}"]
    live_cmd += ["--workers", str(opts.live_workers)]
    nginx = nginx_path()
    assert nginx is not None  # main checked
    static_cmd = nginx_command(nginx, work / "site", work)
    results: dict[tuple[str, str], dict[str, float]] = {}
    with server("live", live_cmd, env) as live, server("static", static_cmd) as static:
        for case, (live_paths, static_paths) in cases.items():
            results[("live", case)] = measure(live, live_paths, opts.clients, opts.seconds, work)
            results[("static", case)] = measure(
                static, static_paths, opts.clients, opts.seconds, work
            )
    print(
        f"\n{opts.clients} connections (wrk, 1 thread), {opts.seconds} s per row, loopback; "
        f"live app {opts.live_workers} worker(s), static: nginx ({nginx})"
    )
    print(
        f"{'page':8} {'server':7} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} {'errors':>7} {'live/nginx':>12}"
    )
    for case in cases:
        for side in ("live", "static"):
            r = results[(side, case)]
            ratio = r["rps"] / results[("static", case)]["rps"]
            print(
                f"{case:8} {side:7} {r['p50']:8.1f} {r['p99']:8.1f} {r['rps']:8.0f} "
                f"{r['errors']:7.0f} {ratio if side == 'live' else 1.0:12.2f}"
            )
    print_workers_stall(env, opts.workers)  # 6


if __name__ == "__main__":
    main()
