"""Tools for the three audiences beyond `doctor`: explain an error text, check a lockfile, snapshot and
diff a stack, scan code for deprecated torch APIs, plan a CI matrix, and the bridge used from R.

Each module is importable on its own and imports other engines only inside functions, through
rcompat.tools.engines, so a missing engine degrades to a `skip` finding instead of an ImportError.
"""
