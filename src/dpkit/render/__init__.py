"""The release report's renderer: one HTML page from release records and spends.

It reads plain data (the Session's release records and an accountant's spends) and imports
nothing above :mod:`dpkit.accounting`, so the Session hands it its records without climbing
a layer (``Session.report``, ``QueryRelease.report``). :mod:`dpkit.report.release_report`
re-exports it under the path the CLI and the guides use.
"""
