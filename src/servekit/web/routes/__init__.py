"""Routes, one module per area; each parses the request, calls one library function, renders."""
