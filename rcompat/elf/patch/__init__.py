"""Patch diff of a file and a patched copy: differing byte runs, the sections and symbols they fall in,
symbol moves, and the report. Reads files through rcompat.elf.read.
"""
