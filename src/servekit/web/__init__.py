"""The web layer: the HTML app (catalog pages, store flows) and the JSON API (``servekit.web.api``)."""
