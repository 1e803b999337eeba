"""The ``dpkit`` command line: one module per subcommand, registered in :mod:`dpkit.cli.main`."""
