"""The web layer: the HTML app (issue 12) and the JSON API (``servekit.web.api``)."""
