"""Reading one ELF file: headers, sections, dynamic entries, symbol and version tables (the bulk reader),
the `nm -D`-style text and JSON of a symbol list, the cached symbol index, demangling, and the small
per-file facts the resolver keeps. Nothing here knows about other files: that is rcompat.elf.link's.
"""
