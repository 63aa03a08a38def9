"""The command-line interface: one module per command group, errors rendered in main()."""
