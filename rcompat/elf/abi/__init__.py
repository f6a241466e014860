"""ABI diff of two versions of a library: exported symbols, their changes, the scope that matters, the
impact on dependents, and the report. Reads files through rcompat.elf.read.
"""
