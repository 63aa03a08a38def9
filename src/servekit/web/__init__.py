"""The web app: thin routes over the catalog (and, later, the store), typed page contexts."""
