"""Write test package.yaml files as a publisher would: no anchors or aliases.

``yaml.safe_dump`` writes ``&id001``/``*id001`` when a test reuses one dict twice, and
package.yaml refuses anchors and aliases (``servekit.package.load``).
"""

from __future__ import annotations

from typing import Any

import yaml


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any) -> str:
    """``data`` as block YAML in insertion order, every shared value written out in full."""
    return yaml.dump(data, Dumper=_NoAliases, sort_keys=False)
