"""rcompat's own errors: the CLI turns these into exit code 2 and a one-line message."""


def shown(text: object, limit: int = 60) -> str:
    """`text` quoted for an error message, cut to `limit` characters: an argument may be 5,000 digits,
    and the message must stay one readable line."""
    value = str(text)
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} characters)"


class RcompatError(Exception):
    """Something rcompat itself could not do (bad argument, unreadable input)."""


class UsageError(RcompatError):
    """The caller asked for something that does not exist (an unknown area, a bad option value)."""


class DataError(RcompatError):
    """A knowledge table in rcompat/data is malformed; names the file and the row."""


class ImageError(RcompatError):
    """An image or root filesystem given to `rcompat upgrade` is unusable: truncated, not an image, or a
    member that would escape the root. Names the input and, where there is one, the layer and member."""
