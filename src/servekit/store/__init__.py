"""The store: accounts, publishing, checkout, the ledger, licences, entitlements, downloads.

Front ends (the CLI, the web app, the JSON API) call the service functions here; each takes
``*, session`` and never commits: one request or one command is one transaction, opened by
:meth:`servekit.store.db.Store.transaction`. docs/store.md describes the schema and every
invariant with the place that enforces it.
"""
