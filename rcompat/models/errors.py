"""The one error of the model readers: a file that is not a readable model, or one refused as hostile."""
from rcompat.errors import RcompatError


class ModelFileError(RcompatError):
    """A saved-model file rcompat cannot read statically (truncated, corrupt, hostile); names the file."""
