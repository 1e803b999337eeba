"""The Session query as an audit target, also importable as ``dpkit.audit.queries``.

The module is :mod:`dpkit.audit.session_query` (:class:`SessionQuery`, the Session's
worst-case tables and cases); ``dpkit.audit.queries is dpkit.audit.session_query``.
"""

import sys

from dpkit.audit import session_query as _session_query

sys.modules[__name__] = _session_query  # one module under both names
