"""rcompat's own errors: the CLI turns these into exit code 2 and a one-line message."""


class RcompatError(Exception):
    """Something rcompat itself could not do (bad argument, unreadable input)."""


class UsageError(RcompatError):
    """The caller asked for something that does not exist (an unknown area, a bad option value)."""


class DataError(RcompatError):
    """A knowledge table in rcompat/data is malformed; names the file and the row."""


class ImageError(RcompatError):
    """An image or root filesystem given to `rcompat upgrade` is unusable: truncated, not an image, or a
    member that would escape the root. Names the input and, where there is one, the layer and member."""
