"""Tools for the three audiences beyond `doctor` (explain has its own package, rcompat/explain): check a lockfile, snapshot and
diff a stack, scan code for deprecated torch APIs, plan a CI matrix, and the bridge used from R.

Each module imports the other engines only inside functions, so loading a tool's CLI stays cheap;
the R rules and CUDA tables are reached through rcompat.tools.engines.
"""
