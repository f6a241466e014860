"""How the dynamic loader would put files together, without loading them: the root filesystem and its
ld.so.cache / ld.so.conf, the dependency resolver and its result types, undefined symbols, symbol
version requirements, duplicate runtimes, and co-loading prediction. Reads files through rcompat.elf.read.
"""
