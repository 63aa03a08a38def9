"""The benchmark harness: an OpenAI-compatible streaming client, workloads, runs,
summaries, importers and an engine simulator (``servekit.bench.sim``).

It writes the raw evidence format of :mod:`servekit.package.evidence`; the claim
rules and ``servekit bench summary`` recompute every metric from those files with
:mod:`servekit.package.stats`.
"""
