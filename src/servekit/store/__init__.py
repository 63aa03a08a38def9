"""The store: accounts, publishing, checkout, the ledger, licences, entitlements, downloads.

Front ends (the CLI, the web app, the JSON API) call the service functions here; each takes
``*, session`` and never commits: one request or one command is one transaction, opened by
:meth:`servekit.store.db.Store.transaction`. docs/store.md describes the schema and every
invariant with the place that enforces it.

What a script needs is re-exported here (each name loads on first use; a name that is
also a module's, such as ``audit``, is not, since importing the module would replace it)::

    from servekit.store import open_store, publish
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from servekit._lazy import lazy_exports

if TYPE_CHECKING:
    from servekit.store.accounts import (
        create_token,
        create_user,
        create_workspace,
        principal_for_token,
        sign_in,
    )
    from servekit.store.db import Store, open_store
    from servekit.store.entitlements import download, list_entitlements
    from servekit.store.publishing import catalog, get_version, publish, retract

_HOME = {
    "Store": "db",
    "catalog": "publishing",
    "create_token": "accounts",
    "create_user": "accounts",
    "create_workspace": "accounts",
    "download": "entitlements",
    "get_version": "publishing",
    "list_entitlements": "entitlements",
    "open_store": "db",
    "principal_for_token": "accounts",
    "publish": "publishing",
    "retract": "publishing",
    "sign_in": "accounts",
}
__all__ = [
    "Store",
    "catalog",
    "create_token",
    "create_user",
    "create_workspace",
    "download",
    "get_version",
    "list_entitlements",
    "open_store",
    "principal_for_token",
    "publish",
    "retract",
    "sign_in",
]
__getattr__ = lazy_exports(__name__, _HOME)
