"""The kit builder: deploy files rendered flag for flag from the package, the build
recipe, evidence, licences, a manifest and a signed receipt, in a deterministic archive.

:func:`servekit.kit.build.build_kit` is the entry point; docs/kit.md describes the layout.
"""
